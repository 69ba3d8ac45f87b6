"""Policy wire overhead: one query through each server against calling the same policy in-process.

The policy is ``hold`` (returns the state five times: its own time is negligible, so what is measured is
the wire). Each query carries three 240x320 RGB camera images (openpi letterboxes them to 224x224 CHW on
the client; robotwin-tcp sends them as they are, base64 in JSON) and the 14-D state. Servers run in this
process on 127.0.0.1, in their own threads. Printed: p50 / p95 per query and the p50 ratio to the
in-process call, measured in this run; the overhead column is the wire's cost beyond the policy's own time.

Run: .venv/bin/python bench/bench_policy_wire.py [--queries N]
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable

import numpy as np

from robofollow_ros.policy.hold import HoldPolicy
from robofollow_ros.policy.openpi import OpenpiPolicy
from robofollow_ros.policy.robotwin_tcp import RobotwinTcpPolicy
from robofollow_ros.policy.server.openpi_server import OpenpiServer
from robofollow_ros.policy.server.robotwin_tcp_server import RobotwinTcpServer
from robofollow_ros.policy.server.served import ServedPolicy
from robofollow_ros.policy.wire import wire_observation

CAMERAS = ('cam_high', 'cam_left_wrist', 'cam_right_wrist')


def sample_observation() -> object:
    rng = np.random.default_rng(0)
    images = {camera: rng.integers(0, 256, (240, 320, 3), dtype=np.uint8) for camera in CAMERAS}
    return wire_observation(images, np.linspace(-1.0, 1.0, 14, dtype=np.float32))


def timed(query: Callable[[], object], count: int) -> np.ndarray:
    for _ in range(5):
        query()
    seconds = np.empty(count)
    for i in range(count):
        started = time.perf_counter()
        query()
        seconds[i] = time.perf_counter() - started
    return seconds * 1000.0


def served(server_class: type, client_class: type, observation: object, count: int) -> np.ndarray:
    server = server_class(ServedPolicy(HoldPolicy(), name='hold'), port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = client_class('127.0.0.1', server.port, connect_retries=1)
    try:
        client.reset()
        client.set_instruction('hold still')
        return timed(lambda: client.predict(observation), count)
    finally:
        client.close()
        server.shutdown()
        thread.join(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--queries', type=int, default=200)
    args = parser.parse_args()
    observation = sample_observation()
    policy = HoldPolicy()
    baseline = timed(lambda: policy.predict(observation), args.queries)
    rows = [('in-process hold.predict', baseline)]
    rows.append(('openpi (websocket + msgpack)', served(OpenpiServer, OpenpiPolicy, observation, args.queries)))
    rows.append(
        ('robotwin-tcp (JSON + base64)', served(RobotwinTcpServer, RobotwinTcpPolicy, observation, args.queries))
    )
    base = float(np.median(baseline))
    print(f'{args.queries} queries, three 240x320 images + 14-D state each')
    print(f'{"path":32s} {"p50 ms":>9s} {"p95 ms":>9s} {"overhead p50 ms":>16s} {"p50 / in-process":>17s}')
    for name, values in rows:
        p50, p95 = np.percentile(values, [50, 95])
        print(f'{name:32s} {p50:9.3f} {p95:9.3f} {p50 - base:16.3f} {p50 / base:16.0f}x')


if __name__ == '__main__':
    main()
