"""The real-time graph over fake hardware against the synchronous graph: scores per task, and timing at the arms.

For each robot profile (default: aloha_ros2_control, aloha_interbotix, piper) the 16 demo tasks
(``robofollow_ros.cli.demo.demo_task_ids``, one per scene x level) run with the expert in real-time mode
(``robofollow launch real robot:=<the profile's robot>``, fake hardware, simulator poses, one bag per episode); the
same tasks run in-process in the synchronous cell of each profile's robot (its records equal the synchronous
graph's). Printed: IS / ES / CR per task beside each other, the tasks with the same completion per profile, and
every difference (look at the bags under --out). A profile the real graph refuses (one naming no robot
description) gets the launch's one-line refusal as its row.

Timing is measured from outside, by a listener node in this process on the profile's command topics, its driver
joint states, the evaluator's SimStatus RESET and the bridge's EpisodeEnd. A command's time is its DDS source
timestamp (when the bridge published it, on the wall clock every node stamps with in real mode), so the
listener's own scheduling on a loaded machine does not enter:

* row-period jitter of what reaches the arms, inside episodes (SimStatus RESET to EpisodeEnd):
  - ros2_control: each JointTrajectory's rows are due at its publication + time_from_start; the fake JTC executes
    a row at the first control tick at or after its due time, seen as the first joint state stamped at or after it. The
    deviation |executed(i+1) - executed(i) - row_period| over consecutive rows of a trajectory that were not
    replaced by a newer one before they were due;
  - streamed drivers (xs_sdk, piper_ros): the bridge streams interpolated targets at the control rate; the
    deviation |interval - control period| of consecutive command messages (JointGroupCommand, joint_ctrl_single) per
    arm, chunk boundaries included (from outside they cannot be told from a late tick), and how many intervals
    exceed two periods beside the number of chunk boundaries (the bridge's log counts the queries);
* ros2_control only (one message per chunk): the delay from a chunk's last row (its due time) to the next query,
  per chunk boundary inside an episode:
  - ``settled``: to the first driver joint state stamped after the due time with every arm joint within the
    bridge's settle tolerance (0.02 rad) of the last row: the state the bridge takes its next observation from
    (it then looks for fresh poses, every 5 ms, and calls the policy); when none came before the next chunk, the
    next chunk's time (the bridge settled on one stamped a hair before this due time);
  - ``next chunk``: to the next chunk's first command message at the arm (the above, plus the observation, the
    expert's own planning, the safety filter and the transport).
Load average (1 min) is sampled every 5 s during each run.

    .venv/bin/python bench/bench_real_mode.py [--profiles aloha_ros2_control,aloha_interbotix,piper]
        [--tasks 16] [--domain 110] [--out /tmp/bench_real_mode]
"""

from __future__ import annotations

import argparse
import bisect
import functools
import itertools
import json
import os
import pickle
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from graph_launch import ROOT, graph_env, launch_command

from robofollow_ros.cli.demo import demo_task_ids
from robofollow_ros.evaluation.suite import SuiteOptions, run_suite
from robofollow_ros.robot.profiles import RobotProfile, load_profile
from robofollow_ros.state_layout import ARMS

SCORES = ('intent_score', 'exec_score', 'completion_ok')
SETTLE_TOLERANCE = 0.02
"""The bridge's default ``settle_tolerance`` (rad): how close the arm joints must come to a chunk's last row."""
NS = 1e9
QUERIES = re.compile(r'episode (\w+): (\d+) queries, (\d+) rows executed')


@dataclass
class Message:
    """One command message as it arrived: wall clock (ns), its points' times (s) and positions by joint."""

    arrival_ns: int
    times: list[float]
    rows: list[dict[str, float]]


@dataclass
class State:
    """One driver joint state: its stamp (ns), positions by joint name and when it arrived here (ns)."""

    stamp_ns: int
    positions: dict[str, float]
    arrival_ns: int = 0
    published_ns: int = 0


@dataclass
class Recording:
    """What the listener heard during one launch."""

    commands: dict[str, list[Message]] = field(default_factory=dict)
    states: dict[str, list[State]] = field(default_factory=dict)
    resets: dict[str, int] = field(default_factory=dict)
    ends: dict[str, int] = field(default_factory=dict)
    loads: list[float] = field(default_factory=list)


def machine() -> str:
    model = next(
        (
            line.split(':', 1)[1].strip()
            for line in Path('/proc/cpuinfo').read_text().splitlines()
            if 'model name' in line
        ),
        'unknown CPU',
    )
    return f'{model}, {os.cpu_count()} cores'


def stats(values: list[float]) -> str:
    """p50 / p95 / max in ms, and the count."""
    if not values:
        return 'none'
    array = np.asarray(values) * 1e3
    return f'{np.percentile(array, 50):.2f} / {np.percentile(array, 95):.2f} / {array.max():.2f} ms (n={len(array)})'


# --- the listener ---------------------------------------------------------------------------------------------


def listen(profile: RobotProfile, recording: Recording, stop: threading.Event) -> threading.Thread:
    """Start a listener node on its own thread (rclpy is initialised by the caller)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory

    from robofollow_interfaces.msg import EpisodeEnd, SimStatus
    from robofollow_ros import topics
    from robofollow_ros.realcell.drivers import message_class
    from robofollow_ros.ros import qos
    from robofollow_ros.ros.protocol import StatusEvent

    node = Node('bench_real_listener')
    reader = QoSProfile(depth=500, reliability=ReliabilityPolicy.RELIABLE)

    def now() -> int:
        return time.time_ns()

    def on_trajectory(topic: str, message: Any, info: Any) -> None:
        arrival = info['source_timestamp']
        names = list(message.joint_names)
        recording.commands.setdefault(topic, []).append(
            Message(
                arrival,
                [p.time_from_start.sec + p.time_from_start.nanosec / NS for p in message.points],
                [dict(zip(names, p.positions, strict=True)) for p in message.points],
            )
        )

    def on_group(topic: str, names: tuple[str, ...], message: Any, info: Any) -> None:
        arrival = info['source_timestamp']
        # xs_sdk's JointGroupCommand holds the six joints in cmd, piper_ros's joint_ctrl_single in position[0..5].
        values = list(message.position)[: len(names)] if isinstance(message, JointState) else list(message.cmd)
        recording.commands.setdefault(topic, []).append(
            Message(arrival, [0.0], [dict(zip(names, values, strict=True))])
        )

    def on_state(topic: str, message: Any, info: Any) -> None:
        stamp = message.header.stamp.sec * 1_000_000_000 + message.header.stamp.nanosec
        positions = dict(zip(message.name, message.position, strict=False))
        recording.states.setdefault(topic, []).append(State(stamp, positions, now(), info['source_timestamp']))

    def on_status(message: Any) -> None:
        if message.event == int(StatusEvent.RESET):
            recording.resets[message.episode_id] = message.stamp_ns

    def on_end(message: Any) -> None:
        recording.ends[message.episode_id] = message.end_stamp_ns

    subscriptions = []
    for arm in ARMS:
        spec = profile.arms[arm]
        if profile.driver == 'ros2_control':
            subscriptions.append(
                node.create_subscription(
                    JointTrajectory, spec.command.topic, functools.partial(on_trajectory, spec.command.topic), reader
                )
            )
        else:
            kind = message_class(spec.command.type)
            subscriptions.append(
                node.create_subscription(
                    kind, spec.command.topic, functools.partial(on_group, spec.command.topic, spec.joints), reader
                )
            )
        if spec.joint_states not in recording.states:
            recording.states[spec.joint_states] = []
            subscriptions.append(
                node.create_subscription(
                    JointState, spec.joint_states, functools.partial(on_state, spec.joint_states), reader
                )
            )
    subscriptions.append(node.create_subscription(SimStatus, topics.SIM_STATUS, on_status, qos.EVENTS))
    subscriptions.append(node.create_subscription(EpisodeEnd, topics.EPISODE_END, on_end, qos.EVENTS))
    executor = SingleThreadedExecutor()
    executor.add_node(node)

    def spin() -> None:
        try:
            while not stop.is_set() and rclpy.ok():
                executor.spin_once(timeout_sec=0.1)
        finally:
            executor.remove_node(node)
            node.destroy_node()

    thread = threading.Thread(target=spin, name='listener', daemon=True)
    thread.start()
    return thread


# --- timing analysis ------------------------------------------------------------------------------------------


def first_state_at(states: list[State], stamps: list[int], at_ns: float) -> State | None:
    index = bisect.bisect_left(stamps, at_ns)
    return states[index] if index < len(states) else None


def settled_at(states: list[State], stamps: list[int], at_ns: float, target: dict[str, float]) -> int | None:
    """The stamp of the first state at or after ``at_ns`` with every joint of ``target`` within the tolerance."""
    for state in states[bisect.bisect_left(stamps, at_ns) :]:
        if all(abs(state.positions.get(name, np.inf) - value) <= SETTLE_TOLERANCE for name, value in target.items()):
            return state.stamp_ns
    return None


def in_episode(recording: Recording, at_ns: float) -> str | None:
    for episode, start in recording.resets.items():
        end = recording.ends.get(episode)
        if end is not None and start <= at_ns <= end:
            return episode
    return None


@dataclass
class Timing:
    """One profile's measurements (seconds)."""

    jitter: list[float] = field(default_factory=list)
    lateness: list[float] = field(default_factory=list)
    settled: list[float] = field(default_factory=list)
    next_chunk: list[float] = field(default_factory=list)
    unsettled: int = 0
    """Chunk boundaries whose settled state was not seen after the due time (counted at the next chunk)."""
    long_intervals: int = 0
    """Streamed: intervals longer than two control periods."""


def jtc_timing(profile: RobotProfile, recording: Recording) -> Timing:
    """Row jitter and chunk-to-query delay of JointTrajectory commands (the arm controllers' topics), in episodes."""
    timing = Timing()
    for arm in ARMS:
        spec = profile.arms[arm]
        messages = sorted(recording.commands.get(spec.command.topic, []), key=lambda m: m.arrival_ns)
        states = sorted(recording.states[spec.joint_states], key=lambda s: s.stamp_ns)
        stamps = [s.stamp_ns for s in states]
        for index, message in enumerate(messages):
            episode = in_episode(recording, message.arrival_ns)
            if episode is None:  # the home moves between trials (a reset drops them)
                continue
            following = messages[index + 1].arrival_ns if index + 1 < len(messages) else np.inf
            executed: list[int] = []
            for offset in message.times:
                due = message.arrival_ns + offset * NS
                if due >= following or in_episode(recording, due) != episode:
                    break
                state = first_state_at(states, stamps, due)
                if state is None:
                    break
                executed.append(state.stamp_ns)
                timing.lateness.append((state.stamp_ns - due) / NS)
            timing.jitter += [abs((b - a) / NS - profile.row_period) for a, b in itertools.pairwise(executed)]
            last_due = message.arrival_ns + message.times[-1] * NS
            if following == np.inf or last_due >= following or in_episode(recording, following) != episode:
                continue
            timing.next_chunk.append((following - last_due) / NS)
            settled = settled_at(states, stamps, last_due, message.rows[-1])
            if settled is None or settled > following:
                # No state stamped after this due time settled before the next chunk came: the bridge saw one
                # stamped before it (this due time is the message's arrival here, a little after the bridge's).
                timing.unsettled += 1
                settled = following
            timing.settled.append((settled - last_due) / NS)
    return timing


def streamed_timing(profile: RobotProfile, recording: Recording) -> Timing:
    """Message-interval jitter of streamed commands (xs_sdk's joint_group) inside episodes.

    Every interval counts, chunk boundaries included: from outside a boundary cannot be told from a late tick (the
    bridge streams the measured state first, then the rows, so neither the values nor the times mark it), and
    the chunk-to-query delay is the ros2_control profile's (one message per chunk), the bridge's logic being the same.
    """
    timing = Timing()
    period = 1.0 / profile.control_rate
    for arm in ARMS:
        by_episode: dict[str, list[Message]] = {}
        for message in sorted(recording.commands.get(profile.arms[arm].command.topic, []), key=lambda m: m.arrival_ns):
            episode = in_episode(recording, message.arrival_ns)
            if episode is not None:
                by_episode.setdefault(episode, []).append(message)
        for messages in by_episode.values():
            intervals = [(b.arrival_ns - a.arrival_ns) / NS for a, b in itertools.pairwise(messages)]
            timing.jitter += [abs(v - period) for v in intervals]
            timing.long_intervals += sum(v > 2 * period for v in intervals)
    return timing


# --- runs -----------------------------------------------------------------------------------------------------


def launch_real(profile: RobotProfile, tasks: list[str], out: Path, domain: int) -> tuple[int, str, float]:
    robot = {} if profile.robot is None else {'robot': profile.robot}
    command = launch_command(
        'real',
        robot_profile=profile.name,
        policy='expert',
        task_ids=','.join(tasks),
        out=str(out),
        record='bag',
        force_new='true',
        **robot,
    )
    start = time.monotonic()
    done = subprocess.run(command, env=graph_env(domain), cwd=ROOT, capture_output=True, text=True, timeout=3600)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - start


def records(path: Path) -> dict[str, dict]:
    found = {}
    if path.exists():
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if not record.get('void'):
                found[record['task_id']] = record
    return found


def cell(record: dict | None) -> str:
    if record is None:
        return '–'
    error = f' ({record["error_kind"]})' if record.get('policy_error') else ''
    completion = 'ok' if record['completion_ok'] else '--'
    return f'{record["intent_score"]:.2f} / {record["exec_score"]:.2f} / {completion}{error}'


def run_profile(name: str, tasks: list[str], out: Path, domain: int) -> tuple[dict[str, dict], str]:
    """The real-mode records of one profile and its lines of timing (or the refusal)."""
    import rclpy

    profile = load_profile(name)
    if profile.robot is None:
        code, output, _ = launch_real(profile, tasks, out / name, domain)
        refusal = next((line for line in output.splitlines() if line.strip()), '')
        return {}, f'{name}: refused by the real graph (exit {code}): {refusal}'
    recording = Recording()
    stop = threading.Event()
    rclpy.init()
    try:
        thread = listen(profile, recording, stop)
        time.sleep(1.0)
        loads_stop = threading.Event()

        def sample_load() -> None:
            while not loads_stop.wait(5.0):
                recording.loads.append(os.getloadavg()[0])

        sampler = threading.Thread(target=sample_load, daemon=True)
        recording.loads.append(os.getloadavg()[0])
        sampler.start()
        code, output, seconds = launch_real(profile, tasks, out / name, domain)
        loads_stop.set()
        recording.loads.append(os.getloadavg()[0])
        time.sleep(0.5)
        stop.set()
        thread.join(timeout=5)
    finally:
        rclpy.shutdown()
    (out / f'{name}.log').write_text(output)
    queries = {match.group(1): int(match.group(2)) for match in QUERIES.finditer(output)}
    with (out / f'{name}.timing.pickle').open('wb') as stream:
        pickle.dump(recording, stream)
    streamed = profile.driver != 'ros2_control'
    timing = streamed_timing(profile, recording) if streamed else jtc_timing(profile, recording)
    lines = [
        f'{name}: exit {code}, {seconds:.0f} s for {len(tasks)} episodes, load average (1 min) '
        f'{min(recording.loads):.2f}-{max(recording.loads):.2f}, {len(recording.ends)} episodes heard',
    ]
    latency = [(s.arrival_ns - s.published_ns) / NS for states in recording.states.values() for s in states]
    if streamed:
        period = 1 / profile.control_rate
        lines.append(f'  command jitter (|interval - {period:g} s|, chunk boundaries included): {stats(timing.jitter)}')
        boundaries = sum(count - 1 for count in queries.values() if count > 0) * len(ARMS)
        longer = timing.long_intervals
        lines.append(f'  intervals longer than {2 * period:g} s: {longer} ({boundaries} chunk boundaries)')
    else:
        lines.append(f'  row-period jitter (|row interval - {profile.row_period} s|): {stats(timing.jitter)}')
        lines.append(f'  row executed after its due time (tick lateness + grid): {stats(timing.lateness)}')
        lines.append(
            f'  last row due -> arms settled (next observation): {stats(timing.settled)} ({timing.unsettled} '
            'at the next chunk: the bridge settled on a state stamped a hair before the due time seen here)'
        )
        lines.append(f'  last row due -> next chunk at the arm: {stats(timing.next_chunk)}')
    lines.append(f'  (the listener received joint states {stats(latency)} after they were published)')
    return records(out / name / 'results.jsonl'), '\n'.join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--profiles', default='aloha_ros2_control,aloha_interbotix,piper')
    parser.add_argument('--tasks', type=int, default=16, help='the first N demo tasks (default all 16)')
    parser.add_argument('--domain', type=int, default=int(os.environ.get('ROS_DOMAIN_ID', '110')))
    parser.add_argument('--out', type=Path, default=Path('/tmp/bench_real_mode'))
    args = parser.parse_args()
    os.environ.update(graph_env(args.domain))
    tasks = demo_task_ids()[: args.tasks]
    args.out.mkdir(parents=True, exist_ok=True)
    print(f'machine: {machine()}; load average {" ".join(f"{v:.2f}" for v in os.getloadavg())}', flush=True)

    names = args.profiles.split(',')
    robots = sorted({profile.robot for profile in map(load_profile, names) if profile.robot is not None})
    expected_by_robot: dict[str, dict[str, dict]] = {}
    for robot in robots:
        start = time.monotonic()
        folder = args.out / f'in_process_{robot}'
        options = SuiteOptions(out=folder, policy='expert', task_ids=tasks, force_new=True, robot=robot)
        run_suite(options, progress=False)
        print(f'in-process (synchronous cell, {robot}): {time.monotonic() - start:.0f} s', flush=True)
        expected_by_robot[robot] = records(folder / 'results.jsonl')

    live: dict[str, dict[str, dict]] = {}
    notes = []
    for name in names:
        found, lines = run_profile(name, tasks, args.out, args.domain)
        print(lines, flush=True)
        notes.append(lines)
        if found or load_profile(name).robot is not None:
            live[name] = found

    header = [f'in-process {robot} IS / ES / CR' for robot in robots] + [f'{n} IS / ES / CR' for n in live]
    print('\n| task | ' + ' | '.join(header) + ' |')
    print('|---|' + '---|' * len(header))
    for task in tasks:
        cells = [cell(expected_by_robot[robot].get(task)) for robot in robots] + [cell(live[n].get(task)) for n in live]
        print(f'| {task} | ' + ' | '.join(cells) + ' |')
    for name, found in live.items():
        expected = expected_by_robot[str(load_profile(name).robot)]
        same = [
            t
            for t in tasks
            if t in found and t in expected and found[t]['completion_ok'] == expected[t]['completion_ok']
        ]
        equal = [t for t in same if all(found[t][k] == expected[t][k] for k in SCORES)]
        print(f'{name}: same completion {len(same)} of {len(tasks)}, same IS / ES / CR {len(equal)} of {len(tasks)}')
        for task in tasks:
            if task not in equal:
                print(f'  differs: {task}: in-process {cell(expected.get(task))}, real {cell(found.get(task))}')
    print(f'load average at the end {" ".join(f"{v:.2f}" for v in os.getloadavg())}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
