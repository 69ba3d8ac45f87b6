"""How fast the operator's stop reaches the arms: ``robofollow operator stop`` against the stop key of the
evaluator's terminal, over fake hardware (the real-mode graph), idle and under CPU load.

The graph (``robofollow launch real``, fake hardware, the expert, one task) runs with a pty as its controlling
terminal, so the evaluator reads it key by key as it reads an operator's terminal. A listener node in this process
subscribes to both arm command topics of the profile.

``--episodes`` times, one second into a trial's episode, the stop key (``stop key, mid-episode``: to the first
message on both arm topics after the key, which is the stop's unless a chunk went out within those milliseconds),
then Enter (the operator's ready: the stop is released, the voided trial plays again). After the last, the
evaluator waits for the operator, the arms at rest, and nothing but a stop publishes on the arm topics, so each
stop's hold is the first message on each topic after the trigger. Then, ``--repeats`` times each, alternating:

* ``operator stop``: from just before ``robofollow operator stop`` is started (a new process: its imports, DDS
  discovery of the graph, the call) to the hold's arrival on both arm topics (the later arm); beside it what the
  command printed: from its start to the service's answer, and to the service found (its imports and discovery);
* ``stop key``: from writing ``s`` to the pty to the hold on both arm topics;
* with ``--baseline REF`` also ``operator stop`` as it was at git REF (its tree unpacked by ``git archive``; the graph
  stays this checkout's).

Each load of ``--loads`` (busy-loop processes; default ``0,2``: idle, then two) runs a graph of its own; printed per
load: min / median / max per path, the ratio of the medians, and the load average (1 min) seen meanwhile.

    .venv/bin/python bench/bench_operator_stop.py [--repeats 10] [--episodes 5] [--loads 0,2] [--baseline HEAD]
        [--domain 123]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from graph_launch import ROOT, graph_env, launch_command

from robofollow_ros.robot.profiles import load_profile
from robofollow_ros.state_layout import ARMS

TASK = 'L0_place_yellow_block_2_behind_green_sphere'
ANSWERED = re.compile(r'answered ([0-9.]+) s after the command started \(service found after ([0-9.]+) s')
CONTROLLING_TTY = (
    'import fcntl, os, sys, termios\n'
    'fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n'
    'os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n'
)
"""``python -c CONTROLLING_TTY args...``: make stdin (a pty) the controlling terminal, then run ``python args...``."""


@dataclass
class Samples:
    """Seconds per path."""

    delays: dict[str, list[float]] = field(default_factory=dict)
    printed: dict[str, list[float]] = field(default_factory=dict)
    """What the command printed: ``<path> (answered)`` and ``<path> (service found)``, seconds from its start."""
    loads: list[float] = field(default_factory=list)

    def add(self, path: str, delay: float | None, printed: tuple[float, float] | None = None) -> None:
        self.delays.setdefault(path, [])
        if delay is not None:
            self.delays[path].append(delay)
        if printed is not None:
            self.printed.setdefault(f'{path} (answered)', []).append(printed[0])
            self.printed.setdefault(f'{path} (service found)', []).append(printed[1])


class Listener:
    """Arrival times (``time.monotonic``) of every message on the profile's two arm command topics."""

    def __init__(self, domain: int, topics: dict[str, str]) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from trajectory_msgs.msg import JointTrajectory

        self.arrivals: dict[str, list[float]] = {arm: [] for arm in topics}
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node('bench_operator_stop', context=self.context)
        reader = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        for arm, topic in topics.items():
            self.node.create_subscription(
                JointTrajectory, topic, lambda _m, arm=arm: self.arrivals[arm].append(time.monotonic()), reader
            )
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        while not self.done.is_set() and self.context.ok():
            self.executor.spin_once(timeout_sec=0.1)

    def held_after(self, since: float, *, timeout: float) -> float | None:
        """Seconds from ``since`` until both arms got a message (the later arm), or None within ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            firsts = [next((t for t in times if t >= since), None) for times in self.arrivals.values()]
            if all(first is not None for first in firsts):
                return max(firsts) - since  # type: ignore[type-var, operator]
            time.sleep(0.001)
        return None

    def close(self) -> None:
        import rclpy

        self.done.set()
        self.thread.join(timeout=5.0)
        self.executor.shutdown(timeout_sec=2.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


@contextlib.contextmanager
def busy(count: int) -> Iterator[None]:
    """``count`` busy-loop processes for the block."""
    loops = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(count)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


@contextlib.contextmanager
def graph_on_a_pty(domain: int, out: Path) -> Iterator[tuple[int, list[str]]]:
    """The real-mode graph over fake hardware with a pty as its controlling terminal; the pty's master and what the
    graph wrote to it."""
    master, slave = os.openpty()
    command = launch_command(
        'real',
        robot_profile='aloha_ros2_control',
        fake_hardware='true',
        policy='expert',
        task_ids=TASK,
        out=str(out),
        progress='false',
        force_new='true',
    )
    launcher = subprocess.Popen(
        [sys.executable, '-c', CONTROLLING_TTY, *command[1:]],
        env=graph_env(domain),
        cwd=ROOT,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    output: list[str] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            output.append(data.decode('utf-8', errors='replace'))

    threading.Thread(target=drain, daemon=True).start()
    try:
        yield master, output
    finally:
        if launcher.poll() is None:
            launcher.send_signal(2)  # SIGINT, as Ctrl-C
        try:
            launcher.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, 9)
            launcher.wait()
        os.close(master)


def wait_for(condition, *, timeout: float, what: str, output: list[str]) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f'timed out waiting for {what}; the graph said:\n{"".join(output)[-3000:]}')
        time.sleep(0.01)


def operator_stop(domain: int, *, python_path: Path | None = None) -> tuple[float, tuple[float, float] | None]:
    """Run ``robofollow operator stop``: the time just before its start, and when it printed that the service
    answered and was found (None from a version that prints neither)."""
    env = graph_env(domain) if python_path is None else graph_env(domain, python_path=(python_path,))
    command = [sys.executable, '-m', 'robofollow_ros', 'operator', 'stop', '--timeout', '30']
    started = time.monotonic()
    cwd = ROOT if python_path is None else python_path  # (``-m`` puts the working directory first on the path)
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _out, err = process.communicate(timeout=90)
    found = ANSWERED.search(err)
    return started, (float(found.group(1)), float(found.group(2))) if found else None


def measure(
    domain: int, out: Path, *, repeats: int, episodes: int, load: int, baseline: Path | None, samples: Samples
) -> None:  # pragma: no cover - a bench
    profile = load_profile('aloha_ros2_control')
    topics = {arm: profile.arms[arm].command.topic for arm in ARMS}
    listener = Listener(domain, topics)
    stop_loads = threading.Event()

    def sample_load() -> None:
        while not stop_loads.wait(2.0):
            samples.loads.append(os.getloadavg()[0])

    threading.Thread(target=sample_load, daemon=True).start()
    try:
        with busy(load), graph_on_a_pty(domain, out) as (master, output):
            wait_for(lambda: 'stop key: press' in ''.join(output), timeout=300, what='the stop key', output=output)
            for episode in range(episodes):
                if episode:
                    os.write(master, b'\n')  # Enter: ready; the stop is released and the voided trial plays again
                # The trial's episode (the arms went home before it: one message per arm) is under way.
                wait_for(
                    lambda n=episode: ''.join(output).count('object(s) in place') > n,
                    timeout=300,
                    what='the trial to start',
                    output=output,
                )
                laid_out = time.monotonic()
                wait_for(
                    lambda since=laid_out: all(any(t > since for t in times) for times in listener.arrivals.values()),
                    timeout=120,
                    what="the trial's chunks",
                    output=output,
                )
                time.sleep(1.0)
                pressed = time.monotonic()
                os.write(master, b's')
                samples.add('stop key, mid-episode', listener.held_after(pressed, timeout=30))
                wait_for(
                    lambda n=episode: ''.join(output).count('press Enter here') > n,
                    timeout=120,
                    what='the operator wait',
                    output=output,
                )
            time.sleep(1.0)
            paths = ['operator stop', 'stop key'] + ([f'operator stop ({baseline.name})'] if baseline else [])
            for _ in range(repeats):
                for path in paths:
                    if path == 'stop key':
                        started = time.monotonic()
                        os.write(master, b's')
                        printed = None
                    else:
                        started, printed = operator_stop(
                            domain, python_path=None if path == 'operator stop' else baseline
                        )
                    samples.add(path, listener.held_after(started, timeout=60), printed)
                    time.sleep(0.5)
    finally:
        stop_loads.set()
        listener.close()


def row(values: list[float]) -> str:
    if not values:
        return 'no hold seen'
    return (
        f'{min(values) * 1e3:7.0f} / {statistics.median(values) * 1e3:7.0f} / {max(values) * 1e3:7.0f} ms '
        f'(n={len(values)})'
    )


def baseline_tree(ref: str, into: Path) -> Path:
    """The package as it was at git ``ref``, unpacked into ``into``/``ref``."""
    target = into / re.sub(r'[^A-Za-z0-9_.-]', '_', ref)
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(['git', 'archive', ref, 'robofollow_ros'], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(['tar', '-x', '-C', str(target)], input=archive.stdout, check=True)
    return target


def main() -> int:  # pragma: no cover - a bench
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--repeats', type=int, default=10, help='stops of each path with the arms at rest')
    parser.add_argument('--episodes', type=int, default=5, help='stop keys mid-episode (each trial is played again)')
    parser.add_argument('--loads', default='0,2', help='busy-loop processes per run, comma-separated')
    parser.add_argument('--baseline', default='', help='git ref whose operator stop is measured beside (e.g. HEAD)')
    parser.add_argument('--domain', type=int, default=123)
    parser.add_argument('--out', type=Path, default=Path(tempfile.gettempdir()) / 'bench_operator_stop')
    args = parser.parse_args()
    baseline = baseline_tree(args.baseline, args.out / 'baseline') if args.baseline else None
    print(f'{os.cpu_count()} cores; load average {" ".join(f"{v:.2f}" for v in os.getloadavg())}', flush=True)
    results: dict[int, Samples] = {}
    for load in (int(item) for item in args.loads.split(',')):
        samples = results[load] = Samples()
        measure(
            args.domain,
            args.out / f'load{load}',
            repeats=args.repeats,
            episodes=args.episodes,
            load=load,
            baseline=baseline,
            samples=samples,
        )
        loads = samples.loads or [float('nan')]
        print(
            f'\n{load} busy processes (load average {min(loads):.1f}-{max(loads):.1f}); trigger -> hold on both arms, '
            'min / median / max:'
        )
        for path, values in samples.delays.items():
            print(f'  {path:34s} {row(values)}')
        for path, values in samples.printed.items():
            print(f'  {path:34s} {row(values)} (printed by the command)')
        key, command = samples.delays.get('stop key', []), samples.delays.get('operator stop', [])
        if key and command:
            print(f'  median operator stop / stop key: {statistics.median(command) / statistics.median(key):.0f}x')
        if baseline is not None:
            old = samples.delays.get(f'operator stop ({baseline.name})', [])
            if old and command:
                ratio = statistics.median(old) / statistics.median(command)
                print(f'  median {baseline.name} / this operator stop: {ratio:.2f}x')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
