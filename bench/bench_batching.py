"""Queries per second of a LeRobot policy served one query at a time against served in batches, with the same number
of concurrent episodes, side by side in one run (issue 31).

One server per batch size (``--batches``, default 1,4,8), each a robotwin-tcp ``serve-policy`` front over the same
checkpoint in its own process under the Python that has LeRobot (``policy.interpreters.lerobot_python``; the
batched ones through ``policy/server/batching.py``). ``--episodes`` clients (default 8) play one episode each, all
at once: every client sends ``--queries`` observations (three 240x320 cameras, the 14-D state, its own instruction;
the same per episode for every server) one after another, as an evaluation worker does. Rounds alternate between
the servers, so that load from elsewhere falls on all alike. Prints per batch size: queries per second and its ratio
to batch 1, latency per query p50 / p95 and its difference to batch 1's p50, the batch sizes the front formed, the
largest difference between each episode's chunks and batch 1's, and the latency of one episode alone (what the
batch window adds to a query nobody joins).

Usage: ``.venv/bin/python bench/bench_batching.py --checkpoint outputs/train/act/checkpoints/last/pretrained_model``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from robofollow_ros.policy.interpreters import lerobot_python
from robofollow_ros.policy.isolation.sandbox import package_root
from robofollow_ros.policy.robotwin_tcp import RobotwinTcpPolicy
from robofollow_ros.state_layout import CAMERAS

SERVER = """
import json, sys
sys.path.insert(0, {root!r})
from robofollow_ros.policy.lerobot_policy import LeRobotPolicy
from robofollow_ros.policy.server.batching import BatchedPolicy
from robofollow_ros.policy.server.robotwin_tcp_server import RobotwinTcpServer
from robofollow_ros.policy.server.served import ServedPolicy
policy = LeRobotPolicy({checkpoint!r})
batch = {batch}
served = ServedPolicy(policy, name='lerobot') if batch == 1 else BatchedPolicy(
    policy, name='lerobot', max_batch=batch, window={window})
server = RobotwinTcpServer(served, port=0)
print(server.port, flush=True)
import threading
threading.Thread(target=server.serve_forever, daemon=True).start()
for line in sys.stdin:
    if line.strip() == 'sizes':
        print(json.dumps(dict(getattr(served, 'batch_sizes', {{}}))), flush=True)
"""


class Server:
    """One served checkpoint in its own process (under the LeRobot Python)."""

    def __init__(self, checkpoint: str, *, batch: int, window: float, python: str) -> None:
        code = SERVER.format(root=str(package_root()), checkpoint=checkpoint, batch=batch, window=window)
        self.process = subprocess.Popen(
            [python, '-c', code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        while line and not line.strip().isdigit():  # LeRobot prints while it loads
            line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f'the batch-{batch} server did not start')
        self.port = int(line)
        self.batch = batch

    def batch_sizes(self) -> dict[int, int]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write('sizes\n')
        self.process.stdin.flush()
        return {int(size): count for size, count in json.loads(self.process.stdout.readline()).items()}

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)


def episode_observations(episode: int, queries: int) -> list[SimpleNamespace]:
    rng = np.random.default_rng(episode)
    return [
        SimpleNamespace(
            images={c: rng.integers(0, 256, (240, 320, 3), dtype=np.uint8) for c in CAMERAS},
            state=rng.uniform(-0.5, 0.5, 14).astype(np.float32),
        )
        for _ in range(queries)
    ]


def play_round(port: int, observations: list[list[SimpleNamespace]]) -> tuple[float, list[float], list[list]]:
    """Every episode at once against ``port``: the round's wall time, each query's latency, each episode's chunks."""
    latencies: list[float] = []
    chunks: list[list] = [[] for _ in observations]
    errors: list[BaseException] = []
    start = threading.Barrier(len(observations) + 1)
    lock = threading.Lock()

    def episode(index: int) -> None:
        client = RobotwinTcpPolicy('127.0.0.1', port, connect_retries=3, timeout=600.0)
        try:
            client.reset()
            client.set_instruction(f'pick up the yellow block {index}')
            start.wait()
            for observation in observations[index]:
                began = time.perf_counter()
                chunk = client.predict(observation)
                with lock:
                    latencies.append(time.perf_counter() - began)
                chunks[index].append(chunk)
        except BaseException as error:
            errors.append(error)
        finally:
            client.close()

    threads = [threading.Thread(target=episode, args=(i,)) for i in range(len(observations))]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - began, latencies, chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--checkpoint', required=True, help='a LeRobot pretrained_model folder (ACT)')
    parser.add_argument('--batches', default='1,4,8', help='batch sizes, comma-separated (1 is the baseline)')
    parser.add_argument('--episodes', type=int, default=8, help='concurrent episodes (default 8)')
    parser.add_argument('--queries', type=int, default=4, help='queries per episode and round (default 4)')
    parser.add_argument('--rounds', type=int, default=3, help='rounds per server, interleaved (default 3)')
    parser.add_argument('--window-ms', type=float, default=5.0, help='batch window (default 5 ms)')
    parser.add_argument('--python', default=None, help='the Python with LeRobot (default: lerobot_python())')
    args = parser.parse_args()
    sizes = [int(b) for b in args.batches.split(',')]
    if sizes[0] != 1:
        sizes = [1, *[b for b in sizes if b != 1]]
    python = args.python or lerobot_python()
    checkpoint = str(Path(args.checkpoint).resolve())
    observations = [episode_observations(e, args.queries) for e in range(args.episodes)]
    servers = [Server(checkpoint, batch=b, window=args.window_ms / 1000.0, python=python) for b in sizes]
    results: dict[int, dict] = {b: {'wall': 0.0, 'latency': [], 'chunks': None} for b in sizes}
    try:
        for server in servers:  # warm-up: torch's first forward pass is slow
            play_round(server.port, [obs[:1] for obs in observations])
        warm = {s.batch: s.batch_sizes() for s in servers}
        for _ in range(args.rounds):
            for server in servers:
                wall, latencies, chunks = play_round(server.port, observations)
                entry = results[server.batch]
                entry['wall'] += wall
                entry['latency'] += latencies
                entry['chunks'] = chunks
        formed = {s.batch: s.batch_sizes() for s in servers}
        alone: dict[int, list[float]] = {b: [] for b in sizes}
        for _ in range(args.rounds):  # one episode alone: what the window costs a query nobody joins
            for server in servers:
                alone[server.batch] += play_round(server.port, observations[:1])[1]
    finally:
        for server in servers:
            server.close()
    total = args.episodes * args.queries * args.rounds
    base = results[1]
    base_rate = total / base['wall']
    base_p50 = float(np.median(base['latency']))
    print(
        f'{args.episodes} concurrent episodes x {args.queries} queries x {args.rounds} rounds per server; '
        f'window {args.window_ms:g} ms; checkpoint {checkpoint}'
    )
    header = f'{"batch":>5s} {"queries/s":>9s} {"ratio":>6s} {"p50 ms":>8s} {"p95 ms":>8s} {"+p50 ms":>8s}'
    print(f'{header}  max |diff|  batches')
    for batch in sizes:
        entry = results[batch]
        rate = total / entry['wall']
        p50, p95 = (1000.0 * float(np.percentile(entry['latency'], q)) for q in (50, 95))
        diff = max(
            float(np.abs(np.asarray(a) - np.asarray(b)).max())
            for mine, theirs in zip(entry['chunks'], base['chunks'], strict=True)
            for a, b in zip(mine, theirs, strict=True)
        )
        made = {size: count - warm[batch].get(size, 0) for size, count in formed[batch].items()}
        made_text = ', '.join(f'{count}x{size}' for size, count in sorted(made.items()) if count) or '-'
        print(
            f'{batch:5d} {rate:9.2f} {rate / base_rate:6.2f} {p50:8.1f} {p95:8.1f} {p50 - 1000 * base_p50:8.1f}  '
            f'{diff:10.2e}  {made_text}'
        )
    lone = {batch: 1000.0 * float(np.median(latencies)) for batch, latencies in alone.items()}
    print(
        'one episode alone, p50 per query: '
        + ', '.join(f'batch {b} {lone[b]:.1f} ms ({lone[b] - lone[1]:+.1f})' for b in sizes)
    )


if __name__ == '__main__':
    sys.exit(main())
