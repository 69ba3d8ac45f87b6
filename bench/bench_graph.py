"""The ROS node graph against in-process evaluation, measured in the same run.

1. The expert on the demo's 16 tasks (one per scene x level) x ``--rounds``, in-process (the baseline) and over
   the graph (``robofollow launch sim``): episodes per minute and their ratio (target >= 0.8), both over the same
   span, the first trial's start to the last result: in-process from the first episode's start to the last result
   out of the trial runner (the records' own wall times, which leave out scoring and writing, are printed too),
   over the graph from the first trial's start (its record's wall time before its line appeared in
   ``results.jsonl``, polled every 5 ms) to the last line (a graph runs the next trial while the referee scores the
   last, so its records' wall times overlap; a DDS listener would time the run only if it discovered the evaluator
   before its first episode, which a late listener did not 1 run in 2); start-up is printed apart; the summed RSS
   of the graph's node processes (target < 1.5 GiB).
   The baseline runs before and after the graph and counts both runs, so that a load that changes during the
   run (the machine is shared) weighs on both sides alike; the load averages are printed.
2. A policy that needs the three 320x240 images and answers at once (``ImageHold`` below), over the graph, for
   at least 200 queries: the bridge's overhead beyond the policy's own time per query, p50 / p95 (target p95 <=
   5 ms; from ``/robofollow/episode_end``), and camera images lost (target 0): images expected (three per
   observation the sim reported on ``/robofollow/sim/status``) minus images received by a subscriber here, from
   the time that subscriber matched the sim's camera writers (the first few observations of the run at most);
   and that policy's episodes per minute over the graph against in-process (timed as in part 1), since a policy
   that looks at camera images has the sim render them on both sides.
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
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
from graph_launch import ROOT, graph_env, launch_command

GIB = 1024**3
RSS_PERIOD = 0.2
RESULT_POLL = 0.005


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
    arguments: dict[str, str], env: dict[str, str], *, arrivals: list[float] | None = None, poll: float = 0.05
) -> tuple[float, int, str]:
    """Run ``robofollow launch sim``; its wall seconds, peak summed node RSS and output. ``arrivals`` receives the
    seconds from the launch at which result lines appeared (polled)."""
    command = launch_command('sim', **arguments)
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or []), daemon=True)
    reader.start()
    peak, rss_at = 0, 0.0
    out, seen = Path(arguments['out']), 0
    while process.poll() is None:
        if time.perf_counter() - rss_at >= RSS_PERIOD:
            peak, rss_at = max(peak, node_rss(process.pid)), time.perf_counter()
        if arrivals is not None and (count := result_count(out)) > seen:
            arrivals.extend([time.perf_counter() - started] * (count - seen))
            seen = count
        time.sleep(RSS_PERIOD if arrivals is None else poll)
    if arrivals is not None and (count := result_count(out)) > seen:
        arrivals.extend([time.perf_counter() - started] * (count - seen))
    reader.join(timeout=5)
    output = ''.join(lines)
    if process.returncode != 0:
        raise SystemExit(f'graph failed ({process.returncode}):\n{output[-3000:]}')
    return time.perf_counter() - started, peak, output


class Listener:
    """Counts camera images and sim observations, and collects the bridge's per-query overheads."""

    def __init__(self, domain: int) -> None:
        import rclpy
        from rclpy.context import Context
        from sensor_msgs.msg import Image

        from robofollow_interfaces.msg import EpisodeEnd, SimStatus
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
        self.image_subscriptions: list[Any] = []
        for camera in self.images:
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
        self.node.create_subscription(SimStatus, topics.SIM_STATUS, self.on_status, qos.EVENTS)
        self.node.create_subscription(EpisodeEnd, topics.EPISODE_END, self.on_end, qos.EVENTS)
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
            self.observations.add(int(message.stamp_ns))
        else:
            self.unmatched += 1
            self.matched = all(subscription.get_publisher_count() > 0 for subscription in self.image_subscriptions)

    def on_end(self, message: Any) -> None:
        self.overheads.extend(float(value) for value in message.bridge_overhead_ms)

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
    env = graph_env(args.domain, python_path=(ROOT / 'bench',))
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
    options = {'policy': 'expert', 'task_ids': tasks, 'rounds': rounds}
    records, span_before = in_process_run(out / 'in_process', options)
    graph_records, graph_wall, total, peak_rss = graph_run(out / 'graph', options, env)
    same = sum(
        a['completion_ok'] == b['completion_ok'] and a['intent_score'] == b['intent_score']
        for a, b in zip(
            sorted(records, key=lambda r: (r['task_id'], r['round'])),
            sorted(graph_records, key=lambda r: (r['task_id'], r['round'])),
            strict=True,
        )
    )
    again, span_after = in_process_run(out / 'in_process_again', options)
    in_rate = 60 * (len(records) + len(again)) / (span_before + span_after)
    record_rate = 60 * (len(records) + len(again)) / sum(r['wall_seconds'] for r in [*records, *again])
    graph_rate = 60 * len(graph_records) / graph_wall
    before, after = (60 * len(records) / span for span in (span_before, span_after))
    print(
        f'expert, {len(tasks)} tasks x {rounds} rounds: in-process {in_rate:.1f} episodes/min '
        f"(before the graph {before:.1f}, after {after:.1f}; {record_rate:.1f} from the records' own wall times, "
        f'which leave out scoring and writing); graph {graph_rate:.1f} episodes/min'
    )
    print(f'  ratio graph / in-process: {graph_rate / in_rate:.2f} (target >= 0.8); same scores: {same}/{len(records)}')
    print(f'  graph start-up and shutdown: {total - graph_wall:.1f} s; peak summed node RSS {peak_rss / GIB:.2f} GiB')


def in_process_run(out: Path, options: dict[str, Any]) -> tuple[list[dict[str, Any]], float]:
    """The suite in this process; its records and the seconds from its first trial's start to its last result
    (the span the graph is timed over: scoring and writing between trials included, start-up left out)."""
    from robofollow_ros.evaluation.runner import InProcessTrials
    from robofollow_ros.evaluation.suite import SuiteOptions, run_suite

    marks: list[float] = []

    class TimedTrials(InProcessTrials):
        runtime = 'in-process'
        identity_fields: Mapping[str, str] = MappingProxyType({})  # no real cell: run_suite's ExecutorFactory asks

        def results(self, todo: Any) -> Any:
            for result in super().results(todo):
                marks.append(time.perf_counter() - (0.0 if marks else result.record['wall_seconds']))
                yield result

    records = run_suite(SuiteOptions(out=out, **options), progress=False, executor=TimedTrials)
    return records, marks[-1] - marks[0]


def graph_run(
    out: Path, options: dict[str, Any], env: dict[str, str]
) -> tuple[list[dict[str, Any]], float, float, int]:
    """The suite over one graph (``robofollow launch sim``): its records, the seconds from its first trial's start
    (its record's wall time before its line appeared in ``results.jsonl``) to its last line, the launch's wall
    seconds and the peak summed node RSS."""
    arrivals: list[float] = []
    arguments = {
        'policy': options['policy'],
        'task_ids': ','.join(options['task_ids']),
        'rounds': str(options['rounds']),
        'out': str(out),
        'progress': 'false',
    }
    total, peak_rss, _ = launch(arguments, env, arrivals=arrivals, poll=RESULT_POLL)
    records = [json.loads(line) for line in (out / 'results.jsonl').read_text().splitlines()]
    return records, arrivals[-1] - (arrivals[0] - records[0]['wall_seconds']), total, peak_rss


def image_policy(tasks: list[str], out: Path, env: dict[str, str], *, domain: int, rounds: int) -> None:
    """Part 2: the bridge's overhead per query and the images lost, with a policy that needs the images; and
    episodes per minute over the graph against in-process for that policy (the work of a camera-driven policy)."""
    options = {'policy': 'bench_graph:image_hold', 'task_ids': tasks, 'rounds': rounds}
    in_process_records, in_process_span = in_process_run(out / 'images_in_process', options)
    listener = Listener(domain)
    time.sleep(1.0)
    image_records, graph_span, _, _ = graph_run(out / 'images', options, env)
    time.sleep(0.5)
    listener.close()
    graph_rate = 60 * len(image_records) / graph_span
    in_rate = 60 * len(in_process_records) / in_process_span
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
    print(
        f'  episodes/min: in-process {in_rate:.1f}, graph {graph_rate:.1f}, ratio {graph_rate / in_rate:.2f} '
        '(the expert of part 1 renders nothing and thinks ~1 ms per query: the worst case for the graph)'
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
