"""The ROS node graph against in-process evaluation, measured in the same run.

1. The expert on the demo's 16 tasks (one per scene x level) x ``--rounds``, in-process (the baseline) and over
   the graph (``robofollow launch sim``): episodes per minute and their ratio (target >= 0.8), in-process from the
   records' wall times, over the graph from the first ``/robofollow/episode`` to the last ``/robofollow/result``
   seen by a listener (a graph runs the next trial while the referee scores the last, so the records' wall times
   overlap; the start-up is printed apart); the summed RSS of the graph's node processes (target < 1.5 GiB).
   The baseline runs before and after the graph and counts both runs, so that a load that changes during the
   run (the machine is shared) weighs on both sides alike; the load averages are printed.
2. A policy that needs the three 320x240 images and answers at once (``ImageHold`` below), over the graph, for
   at least 200 queries: the bridge's overhead beyond the policy's own time per query, p50 / p95 (target p95 <=
   5 ms; from ``/robofollow/episode_end``), and camera images lost (target 0): images expected (three per
   observation the sim reported on ``/robofollow/sim/status``) minus images received by a subscriber here, from
   the time that subscriber matched the sim's camera writers (the first few observations of the run at most).
3. One graph against two (``workers:=2``, ROS domains ``--domain`` and ``--domain`` + 1) on the same expert
   trials (the 16 tasks x ``--rounds``), interleaved ``--repeats`` times: episodes per minute from the launch to
   the last result (start-up included) and from the first result to the last (steady state), medians, and the
   ratio two graphs / one. The load average is printed too: other work on the machine shares its cores.

Usage: ``MUJOCO_GL=egl .venv/bin/python bench/bench_graph.py [--domain 59] [--rounds 2] [--parts 1,2,3]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GIB = 1024**3


class ImageHold:
    """Holds still, but only after looking at all three camera images (so the bridge must deliver them)."""

    needs_images = True

    def reset(self) -> None:
        """Nothing to forget."""

    def set_instruction(self, text: str) -> None:
        """Ignored."""

    def predict(self, observation: Any) -> np.ndarray:
        """Five rows of the current state; fails if an image is missing or not 240x320 RGB."""
        for camera in ('cam_high', 'cam_left_wrist', 'cam_right_wrist'):
            assert observation.images[camera].shape == (240, 320, 3)
        return np.repeat(np.asarray(observation.state, dtype=np.float32)[None, :], 5, axis=0)


def image_hold() -> ImageHold:
    """Factory for ``--policy bench_graph:image_hold``."""
    return ImageHold()


def node_rss(launcher: int) -> int:
    """Summed resident memory (bytes) of the launcher's child processes."""
    total = 0
    for task in Path(f'/proc/{launcher}/task').glob('*'):
        for child in (task / 'children').read_text().split() if (task / 'children').exists() else []:
            try:
                status = Path(f'/proc/{child}/status').read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith('VmRSS:'):
                    total += int(line.split()[1]) * 1024
    return total


def result_count(out: Path) -> int:
    """Lines in ``out/results.jsonl`` so far."""
    try:
        return (out / 'results.jsonl').read_bytes().count(b'\n')
    except OSError:
        return 0


def launch(
    arguments: dict[str, str], env: dict[str, str], *, arrivals: list[float] | None = None
) -> tuple[float, int, str]:
    """Run ``robofollow launch sim``; its wall seconds, peak summed node RSS and output. ``arrivals`` receives the
    seconds from the launch at which result lines appeared (polled)."""
    command = [sys.executable, '-m', 'robofollow_ros', 'launch', 'sim', *(f'{k}:={v}' for k, v in arguments.items())]
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or []), daemon=True)
    reader.start()
    peak = 0
    out, seen = Path(arguments['out']), 0
    while process.poll() is None:
        peak = max(peak, node_rss(process.pid))
        if arrivals is not None and (count := result_count(out)) > seen:
            arrivals.extend([time.perf_counter() - started] * (count - seen))
            seen = count
        time.sleep(0.2 if arrivals is None else 0.05)
    if arrivals is not None and (count := result_count(out)) > seen:
        arrivals.extend([time.perf_counter() - started] * (count - seen))
    reader.join(timeout=5)
    output = ''.join(lines)
    if process.returncode != 0:
        raise SystemExit(f'graph failed ({process.returncode}):\n{output[-3000:]}')
    return time.perf_counter() - started, peak, output


class Listener:
    """Counts camera images and sim observations, collects the bridge's per-query overheads, and notes when the
    first episode was published and the last result arrived."""

    def __init__(self, domain: int, *, images: bool = True) -> None:
        import rclpy
        from rclpy.context import Context
        from sensor_msgs.msg import Image
        from std_msgs.msg import String

        from robofollow_ros import topics
        from robofollow_ros.bags.cdr import header_stamp_ns
        from robofollow_ros.ros import qos

        self.rclpy = rclpy
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node('bench_graph_listener', context=self.context)
        self.images: dict[str, set[int]] = {
            camera: set() for camera in ('cam_high', 'cam_left_wrist', 'cam_right_wrist')
        }
        self.observations: set[int] = set()
        self.unmatched = 0
        self.matched = False
        self.overheads: list[float] = []
        self.first_episode = self.last_result = 0.0
        self.first_trial: tuple[str, int] | None = None
        self.results = 0
        self.image_subscriptions: list[Any] = []
        for camera in self.images if images else ():
            # Raw and on the events executor, so that the count measures delivery and not this listener: one that
            # deserialises every image on a wait-set executor falls behind under load and drops images itself.
            self.image_subscriptions.append(
                self.node.create_subscription(
                    Image,
                    topics.image_topic(camera),
                    lambda data, c=camera: self.images[c].add(header_stamp_ns(data)),
                    qos.SENSOR,
                    raw=True,
                )
            )
        self.node.create_subscription(String, topics.SIM_STATUS, self.on_status, qos.EVENTS)
        self.node.create_subscription(String, topics.EPISODE_END, self.on_end, qos.EVENTS)
        self.node.create_subscription(String, topics.EPISODE, self.on_episode, qos.LATCHED_READER)
        self.node.create_subscription(String, topics.RESULT, self.on_result, qos.EVENTS)
        from rclpy.experimental import EventsExecutor

        self.executor = EventsExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.spin, daemon=True)
        self.thread.start()

    def spin(self) -> None:
        from rclpy.executors import ExternalShutdownException

        with contextlib.suppress(ExternalShutdownException):
            while self.context.ok():
                self.executor.spin_once(timeout_sec=0.1)

    def on_status(self, message: Any) -> None:
        # Best-effort images published before this reader matched the sim's writers never were addressed to it:
        # observations up to the first status seen with all three matched are left out and counted apart.
        if self.matched:
            self.observations.add(int(json.loads(message.data)['stamp_ns']))
        else:
            self.unmatched += 1
            self.matched = all(subscription.get_publisher_count() > 0 for subscription in self.image_subscriptions)

    def on_episode(self, message: Any) -> None:
        if not self.first_episode:
            self.first_episode = time.perf_counter()
            spec = json.loads(message.data)
            self.first_trial = spec['task_id'], spec['round']

    def on_result(self, message: Any) -> None:
        self.results += 1
        self.last_result = time.perf_counter()

    def on_end(self, message: Any) -> None:
        self.overheads.extend(json.loads(message.data).get('bridge_overhead_ms', []))

    def close(self) -> None:
        self.rclpy.shutdown(context=self.context)
        self.thread.join(timeout=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--domain', type=int, default=59, help='ROS domain of the graph (default 59)')
    parser.add_argument('--rounds', type=int, default=2, help='rounds of every part (x 16 tasks)')
    parser.add_argument('--repeats', type=int, default=2, help='runs of one and of two graphs, interleaved (default 2)')
    parser.add_argument('--parts', default='1,2,3', help='which measurements to make (default 1,2,3)')
    args = parser.parse_args()
    parts = {int(part) for part in args.parts.split(',')}

    from robofollow_ros.cli.demo import demo_task_ids

    tasks = demo_task_ids()
    env = {
        **os.environ,
        'ROS_DOMAIN_ID': str(args.domain),
        'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST',
        'PYTHONPATH': os.pathsep.join([str(ROOT / 'bench'), os.environ.get('PYTHONPATH', '')]).rstrip(os.pathsep),
    }
    os.environ.update({key: env[key] for key in ('ROS_DOMAIN_ID', 'ROS_AUTOMATIC_DISCOVERY_RANGE')})
    print(f'load average at start: {_load()}')
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        if 1 in parts:
            expert_graph(tasks, out, env, domain=args.domain, rounds=args.rounds)
        if 2 in parts:
            image_policy(tasks, out, env, domain=args.domain, rounds=args.rounds)
        if 3 in parts:
            one_and_two_graphs(tasks, out, env, rounds=args.rounds, repeats=args.repeats)
    print(f'load average at end: {_load()}')


def _load() -> str:
    return ' '.join(f'{value:.2f}' for value in os.getloadavg())


def expert_graph(tasks: list[str], out: Path, env: dict[str, str], *, domain: int, rounds: int) -> None:
    """Part 1: the expert in-process and over one graph."""
    from robofollow_ros.evaluation.suite import SuiteOptions, run_suite

    options = {'policy': 'expert', 'task_ids': tasks, 'rounds': rounds}
    records = run_suite(SuiteOptions(out=out / 'in_process', **options), progress=False)  # type: ignore[arg-type]
    in_process_walls = [sum(record['wall_seconds'] for record in records)]
    listener = Listener(domain, images=False)
    time.sleep(1.0)
    total, peak_rss, _ = launch(
        {
            'policy': 'expert',
            'task_ids': ','.join(tasks),
            'rounds': str(rounds),
            'out': str(out / 'graph'),
            'progress': 'false',
        },
        env,
    )
    time.sleep(0.2)
    listener.close()
    graph_records = [json.loads(line) for line in (out / 'graph' / 'results.jsonl').read_text().splitlines()]
    first_trial = graph_records[0]['task_id'], graph_records[0]['round']
    if listener.results != len(graph_records) or listener.first_trial != first_trial:
        raise SystemExit(
            f'the listener saw {listener.results} of {len(graph_records)} results, and {listener.first_trial} as '
            f'the first episode where the run started with {first_trial}: it matched the graph late'
        )
    graph_wall = listener.last_result - listener.first_episode
    same = sum(
        a['completion_ok'] == b['completion_ok'] and a['intent_score'] == b['intent_score']
        for a, b in zip(
            sorted(records, key=lambda r: (r['task_id'], r['round'])),
            sorted(graph_records, key=lambda r: (r['task_id'], r['round'])),
            strict=True,
        )
    )
    again = run_suite(SuiteOptions(out=out / 'in_process_again', **options), progress=False)  # type: ignore[arg-type]
    in_process_walls.append(sum(record['wall_seconds'] for record in again))
    in_rate = 60 * 2 * len(records) / sum(in_process_walls)
    graph_rate = 60 * len(graph_records) / graph_wall
    before, after = (60 * len(records) / wall for wall in in_process_walls)
    print(
        f'expert, {len(tasks)} tasks x {rounds} rounds: in-process {in_rate:.1f} episodes/min '
        f'(before the graph {before:.1f}, after {after:.1f}); graph {graph_rate:.1f} episodes/min'
    )
    print(f'  ratio graph / in-process: {graph_rate / in_rate:.2f} (target >= 0.8); same scores: {same}/{len(records)}')
    print(f'  graph start-up and shutdown: {total - graph_wall:.1f} s; peak summed node RSS {peak_rss / GIB:.2f} GiB')


def image_policy(tasks: list[str], out: Path, env: dict[str, str], *, domain: int, rounds: int) -> None:
    """Part 2: the bridge's overhead per query and the images lost, with a policy that needs the images."""
    listener = Listener(domain)
    time.sleep(1.0)
    launch(
        {
            'policy': 'bench_graph:image_hold',
            'task_ids': ','.join(tasks),
            'rounds': str(rounds),
            'out': str(out / 'images'),
            'progress': 'false',
        },
        env,
    )
    time.sleep(0.5)
    listener.close()
    image_records = [json.loads(line) for line in (out / 'images' / 'results.jsonl').read_text().splitlines()]
    failed = sum(record.get('policy_error') is not None for record in image_records)
    overheads = np.array(listener.overheads)
    expected = 3 * len(listener.observations)
    received = sum(len(stamps & listener.observations) for stamps in listener.images.values())
    print(
        f'image policy, {len(overheads)} queries with three 320x240 images: bridge overhead '
        f'p50 {np.percentile(overheads, 50):.2f} ms, p95 {np.percentile(overheads, 95):.2f} ms (target p95 <= 5)'
    )
    print(
        f'  images lost: {expected - received} of {expected} (target 0); episodes that failed: {failed}; '
        f'observations before this listener matched the cameras (not counted): {listener.unmatched}'
    )


def one_and_two_graphs(tasks: list[str], out: Path, env: dict[str, str], *, rounds: int, repeats: int) -> None:
    """Part 3: episodes per minute of one graph and of two (``workers:=2``) on the same trials."""
    print(f'load average before: {" ".join(f"{value:.2f}" for value in os.getloadavg())} on {os.cpu_count()} CPUs')
    rates: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
    reference: dict[tuple[str, int], dict[str, Any]] = {}
    differing: set[tuple[str, int]] = set()
    for repeat in range(repeats):
        for workers in rates:
            arrivals: list[float] = []
            folder = out / f'workers{workers}_{repeat}'
            arguments = {
                'policy': 'expert',
                'task_ids': ','.join(tasks),
                'rounds': str(rounds),
                'workers': str(workers),
                'out': str(folder),
                'progress': 'false',
            }
            launch(arguments, env, arrivals=arrivals)
            count = len(arrivals)
            assert count == len(tasks) * rounds, f'{count} results of {len(tasks) * rounds}'
            steady = arrivals[-1] - arrivals[0]
            rates[workers].append((60.0 * count / arrivals[-1], 60.0 * (count - 1) / steady))
            records = {
                (record['task_id'], record['round']): {k: v for k, v in record.items() if k != 'wall_seconds'}
                for record in map(json.loads, (folder / 'results.jsonl').read_text().splitlines())
            }
            reference = reference or records
            assert records.keys() == reference.keys(), 'a trial is missing or extra'
            differing.update(key for key in records if records[key] != reference[key])
    print(f'load average after: {" ".join(f"{value:.2f}" for value in os.getloadavg())}')
    base = np.median(np.asarray(rates[1]), axis=0)
    print(f'expert, {len(tasks) * rounds} trials, {repeats} interleaved runs each; medians (episodes per minute):')
    print(f'{"graphs":<8} {"launch->last":>13} {"first->last":>12} {"ratio":>7} {"ratio":>7}')
    for workers, values in rates.items():
        total, steady = np.median(np.asarray(values), axis=0)
        print(f'{workers:<8} {total:13.1f} {steady:12.1f} {total / base[0]:7.2f} {steady / base[1]:7.2f}')
    print(f'records (wall_seconds aside) that differed from the first run in some run: {len(differing)}')
    for task_id, round_ in sorted(differing):
        print(f'  {task_id} round {round_}')


if __name__ == '__main__':
    main()
