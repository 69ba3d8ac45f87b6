"""Fault injection over fake hardware: what the arms do after each fault, measured on the arm, per robot profile.

Fake hardware runs on its own (as a real driver does: it outlives the graph), publishing the simulation's object
poses as a motion-capture system would (``/vrpn_mocap/<name>/pose``), the real-mode graph drives it as a real cell
(``fake_hardware:=false pose_source:=mocap``), and a sweeping policy (``bench/fault_injection/fault_policy.py``)
keeps both arms moving at up to 0.84 rad/s. Each fault is injected ``--repeats`` times, at a random moment while
the arms move:

* SIGINT, SIGTERM and SIGKILL of the bridge, the evaluator and the launcher;
* an exception in the bridge's episode thread (``bench/fault_injection/sitecustomize.py``);
* the policy answering a NaN, a jump, out-of-limit and out-of-workspace targets, a stall past the dead-man, a crash;
* fake hardware's joint states, cameras and object poses stopping (for ``--hold`` seconds);
* ``/robofollow/stop`` called as the evaluator's stop key calls it (a client that found the service when the graph
  started), and by ``robofollow operator stop`` (a new process: start-up and discovery included), each followed by
  ``/robofollow/ready``; and a stop released at once (stop then continue).

Measured from outside by a listener in this process: fake hardware's measured joints (a side channel it always
publishes, whatever the fault silences) and every message on the profile's command topics. Per fault: time from the
fault to zero commanded velocity and to the arms at rest (every arm joint under ``REST_SPEED``), the TCP travel after
the fault (MuJoCo's forward kinematics of the measured joints, mm), the peak measured joint speed and acceleration
after it, and what the run says (the trial's record, ``run.json``, and whether the relaunched run resumed). Every
command message is also checked by the listener against the profile's joint and velocity limits and its workspace
box (MuJoCo FK, independent of the safety layer's URDF FK): violations are counted per profile. A policy fault is
timed from the moment the policy answered; a hook's fault from when it took effect; a signal or service call from
when it was sent.

Beside the faults, ``--expert N`` runs N expert trials per profile (no fault) and counts, per episode, the commanded
velocity's discontinuities (a jump of more than ``JUMP`` between consecutive control ticks) and the dwells (the
arms at rest for ``DWELL`` s or more between two motions).

    .venv/bin/python bench/bench_faults.py [--profiles aloha_ros2_control,aloha_interbotix,piper] [--repeats 5]
        [--faults all|name,...] [--expert 2] [--domain 120] [--out /tmp/bench_faults]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import json
import os
import pickle
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from graph_launch import ROOT, graph_env, launch_command

from robofollow_ros.realcell.drivers import WINDOW_SECONDS
from robofollow_ros.realcell.safe_motion import MotionSettings
from robofollow_ros.robot.profiles import RobotProfile, arm_from_driver, arm_state_from_joint_state, load_profile
from robofollow_ros.safety.jtc import seconds_due
from robofollow_ros.state_layout import ARM_SLICE, ARMS, GRIP_INDEX
from robofollow_ros.topics import all_object_names, object_pose_topic

HOOKS = ROOT / 'bench' / 'fault_injection'
SIDE_TOPIC = '/bench_faults/joint_states'
RESET_TOPIC = '/bench_faults/cell_reset'
NS = 1_000_000_000
REST_SPEED = 0.02
"""rad/s: an arm joint slower than this is at rest (the fake arm's measured noise stays well under it)."""
REST_SECONDS = 0.3
"""How long every joint must stay at rest for the arms to count as stopped."""
MOVING_SPEED = 0.3
"""rad/s: the arms count as moving (a fault is injected) once a joint is this fast."""
JUMP = 0.5
"""rad/s: a change of commanded velocity between consecutive control ticks larger than this is a discontinuity."""
JOIN_DEVIATION = 0.02
"""rad/s: a window joining its chunk's reference at a speed further than this from the chunk's own
(``window_joins``)."""
DWELL = 0.1
"""s: the arms at rest this long between two motions is a dwell."""
IDLE_PERIODS = 3.0
"""Control periods a commanded reference stays at rest before a command may start where the arm is measured."""
WATCH_SECONDS = 4.0
"""How long after a fault the arms are watched."""
SIGNALS = {'SIGINT': signal.SIGINT, 'SIGTERM': signal.SIGTERM, 'SIGKILL': signal.SIGKILL}
FAULTS = (
    *(f'{who}_{name}' for who in ('bridge', 'evaluator', 'launcher') for name in SIGNALS),
    'worker_exception',
    *(f'policy_{name}' for name in ('nan', 'jump', 'limits', 'workspace', 'stall', 'crash')),
    'joint_states_off',
    'cameras_off',
    'poses_off',
    'stop',
    'stop_command',
    'stop_continue',
)
MID_CHUNK = ('workspace',)
"""The policy faults whose first half the safety filter sends (``fault_policy``: 50 rows, the fault from row 25
on): the others are refused whole (a non-finite value, or the bridge's check of the URDF limits and row steps)."""
MIDDLE_ROW = 25
ARM_JOINTS = np.array([c for c in range(14) if c not in GRIP_INDEX.values()])


# --- what the listener hears ---------------------------------------------------------------------------------------


@dataclass
class Heard:
    """Everything the listener heard (wall-clock ns stamps), appended from its thread."""

    states: list[tuple[int, np.ndarray]] = field(default_factory=list)
    commands: list[tuple[int, str, list[float], np.ndarray]] = field(default_factory=list)
    """(publication ns, topic, point times s, policy-unit points (N, 7): six joints and the gripper, NaN unknown)."""
    violations: list[str] = field(default_factory=list)
    resets: list[int] = field(default_factory=list)
    """When fake hardware reset the cell (the arms jump home: measures end there)."""
    ends: list[int] = field(default_factory=list)
    """When the bridge ended an episode (the next command is the next trial's home move: measures end there)."""
    unjudged: int = 0
    """Command messages after one of their writer's the listener missed (their velocity is not judged)."""
    stop_client: Any = None
    """A /robofollow/stop client of the listener's node (matched since the graph started, as the stop key's is)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def states_between(self, start_ns: int, end_ns: int) -> tuple[np.ndarray, np.ndarray]:
        with self.lock:
            chosen = [(t, s) for t, s in self.states if start_ns <= t <= end_ns]
        if not chosen:
            return np.zeros(0), np.zeros((0, 14))
        return np.array([t for t, _ in chosen]) / NS, np.array([s for _, s in chosen])

    def commands_between(self, start_ns: int, end_ns: int) -> list[tuple[int, str, list[float], np.ndarray]]:
        with self.lock:
            return [c for c in self.commands if start_ns <= c[0] <= end_ns]


class Checker:
    """Every command message against the profile's limits and workspace, with MuJoCo's FK of the cell.

    Each arm's commanded reference is followed as the fake controllers follow it: a JointTrajectory replaces the
    reference from where it stood when it arrived, through its points (linear in between); a streamed target moves
    the reference to it within one control period. A segment faster than the profile's velocity limit (5 % slack
    for the timestamps' jitter) is a violation, as is a point outside the joint limits or a TCP outside the box.
    """

    def __init__(self, profile: RobotProfile) -> None:
        from robofollow_ros.robot.description import load_robot
        from robofollow_ros.sim.kinematics import Kinematics
        from robofollow_ros.sim.model import CellModel

        self.profile = profile
        self.kinematics = Kinematics(CellModel.build([], robot=load_robot(profile.robot or 'aloha')))
        self.reference: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        """Per arm, the knot times (ns) and six-joint positions the arm is commanded along."""

    def check(
        self,
        arm: str,
        published_ns: int,
        times: list[float],
        points: np.ndarray,
        *,
        follows: bool = True,
        measured: np.ndarray | None = None,
    ) -> list[str]:
        """The violations of one command message; ``follows``: nothing of its writer was missed before it (else its
        velocity from the reference is not judged: the reference is not known). After a reference at rest for
        ``IDLE_PERIODS`` control periods, the first segment may instead start where the arm is ``measured`` (six
        joints): a hold where an arm blocked short of its last target stands, or a new plan from there."""
        spec = self.profile.arms[arm]
        if not follows:
            self.reference.pop(arm, None)
        low, high = np.asarray(self.profile.workspace_min), np.asarray(self.profile.workspace_max)
        found = []
        joints = points[:, :6]
        for i, row in enumerate(joints):
            if not np.isfinite(row).all():
                return [f'{arm} point {i}: not finite']
            if (row < np.asarray(spec.lower)[:6] - 1e-6).any() or (row > np.asarray(spec.upper)[:6] + 1e-6).any():
                found.append(f'{arm} point {i}: outside the joint limits {np.round(row, 3).tolist()}')
            tcp = self.kinematics.fk(arm, row)[0]
            if (tcp < low - 1e-6).any() or (tcp > high + 1e-6).any():
                found.append(f'{arm} point {i}: TCP {np.round(tcp, 3).tolist()} outside the workspace')
        due = published_ns + np.round(np.asarray(times) * NS).astype(np.int64)
        if self.profile.driver != 'ros2_control':
            due = np.array([published_ns + round(NS / self.profile.control_rate)])
        previous = self.reference.get(arm)
        if previous is not None:
            knots, values = previous
            now = np.array([np.interp(published_ns, knots, values[:, j]) for j in range(6)])
            knots_new = np.concatenate([[published_ns], due])
            values_new = np.vstack([now[None, :], joints])
            spans = np.maximum(np.diff(knots_new) / NS, 1e-6)
            velocity = np.abs(np.diff(values_new, axis=0)) / spans[:, None]
            idle = published_ns - int(knots[-1]) >= IDLE_PERIODS * NS / self.profile.control_rate
            if idle and measured is not None:
                velocity[0] = np.minimum(velocity[0], np.abs(joints[0] - measured[:6]) / spans[0])
            limit = np.asarray(spec.velocity)[:6] * 1.05 + 1e-3
            for i in np.flatnonzero((velocity > limit).any(axis=1)):
                found.append(f'{arm} segment {i}: {velocity[i].max():.2f} rad/s over {spans[i] * 1e3:.0f} ms')
            self.reference[arm] = (knots_new, values_new)
        else:
            self.reference[arm] = (due, joints)
        return found


def listen(profile: RobotProfile, heard: Heard, stop: threading.Event, domain: int) -> threading.Thread:
    """A listener node on its own thread and context."""
    import functools

    import rclpy
    from rclpy.context import Context
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Int64
    from std_srvs.srv import Trigger
    from trajectory_msgs.msg import JointTrajectory

    from robofollow_interfaces.msg import EpisodeEnd
    from robofollow_ros import topics
    from robofollow_ros.realcell.drivers import message_class
    from robofollow_ros.ros import qos

    context = Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node('bench_faults_listener', context=context)
    reader = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    checker = Checker(profile)
    latest = {arm: np.asarray(profile.home_state()[ARM_SLICE[arm].start : GRIP_INDEX[arm] + 1]) for arm in ARMS}

    measured = MeasuredArms(profile)

    def on_state(message: Any) -> None:
        state = measured.update(message)
        if state is not None:
            with heard.lock:
                heard.states.append((message.header.stamp.sec * NS + message.header.stamp.nanosec, state))

    writers = Writers()

    def record(topic: str, arm: str, info: Any, times: list[float], points: np.ndarray) -> None:
        follows = writers.follows(topic, info)
        published = info['source_timestamp']
        with heard.lock:
            measured = heard.states[-1][1][ARM_SLICE[arm]] if heard.states else None
        found = checker.check(arm, published, times, points, follows=follows, measured=measured)
        with heard.lock:
            heard.unjudged += not follows
            heard.commands.append((published, topic, times, points))
            heard.violations.extend(f'{topic} at {published}: {item}' for item in found)

    def on_trajectory(topic: str, arm: str, message: Any, info: Any) -> None:
        spec = profile.arms[arm]
        names = list(message.joint_names)
        times = seconds_due(message, after_ns=info['source_timestamp']).tolist()
        points = []
        for point in message.points:
            by_name = dict(zip(names, point.positions, strict=True))
            if set(spec.joints) <= set(by_name):
                joints = [by_name[j] for j in spec.joints]
                opening = spec.gripper.command.from_driver(by_name.get(spec.gripper.command.joint, float('nan')))
                points.append([*arm_from_driver(profile, arm, joints, 0.0)[:6].tolist(), opening])
        if points:
            record(topic, arm, info, times, np.array(points))

    def on_stream(topic: str, arm: str, field: str, message: Any, info: Any) -> None:
        # xs_sdk's JointGroupCommand.cmd; piper_ros's joint_ctrl_single.position (six joints, then the gripper)
        joints = arm_from_driver(profile, arm, list(getattr(message, field))[:6], 0.0)[:6]
        latest[arm][:6] = joints
        record(topic, arm, info, [0.0], latest[arm][None, :].copy())

    def on_reset(message: Any) -> None:
        with heard.lock:
            heard.resets.append(int(message.data))
            checker.reference.clear()

    node.create_subscription(JointState, SIDE_TOPIC, on_state, reader)
    node.create_subscription(Int64, RESET_TOPIC, on_reset, reader)

    def on_end(_message: Any) -> None:
        with heard.lock:
            heard.ends.append(time.time_ns())

    node.create_subscription(EpisodeEnd, topics.EPISODE_END, on_end, qos.EVENTS)
    heard.stop_client = node.create_client(Trigger, topics.STOP)
    for arm in ARMS:
        spec = profile.arms[arm]
        if profile.driver == 'ros2_control':
            callback = functools.partial(on_trajectory, spec.command.topic, arm)
            node.create_subscription(JointTrajectory, spec.command.topic, callback, reader)
        else:
            field = 'position' if profile.driver == 'piper' else 'cmd'
            callback = functools.partial(on_stream, spec.command.topic, arm, field)
            node.create_subscription(message_class(spec.command.type), spec.command.topic, callback, reader)
    return spin_in_thread(context, node, stop)


class Writers:
    """Per topic, the writer and publication number of the last message heard: whether the next one follows it with
    nothing missed. A new bridge's first commands can reach fake hardware before the listener has matched the new
    writer (the bridge waits for one reader per topic, not for every reader): the first heard is then a step from
    the last one heard that the arm never took."""

    def __init__(self) -> None:
        self.last: dict[str, tuple[tuple[int, ...], int]] = {}

    def follows(self, topic: str, info: Any) -> bool:
        gid, number = info.get('publisher_gid'), info.get('publication_sequence_number')
        if gid is None or number is None:
            return True
        writer = tuple(gid['data']) if isinstance(gid, dict) else tuple(gid)
        previous = self.last.get(topic)
        self.last[topic] = (writer, number)
        if previous is not None and previous[0] == writer:
            return number == previous[1] + 1
        return number == 1


class MeasuredArms:
    """The 14-D measured state from fake hardware's side channel: one message holds both arms
    (joint_state_broadcaster) or one (xs_sdk, piper_ros, whose two arms share their joint names); the side copy's
    ``frame_id`` names the driver topic it came from, and a message updates only the arms measured on that topic."""

    def __init__(self, profile: RobotProfile) -> None:
        self.profile = profile
        self.arms: dict[str, np.ndarray] = {}
        self.fresh: set[str] = set()

    def update(self, message: Any) -> np.ndarray | None:
        """The state once every arm was heard again since the last one (one state per control tick, as the
        measures' clock assumes), else None."""
        topic = message.header.frame_id
        for arm in ARMS:
            if topic and self.profile.arms[arm].joint_states != topic:
                continue
            values = arm_state_from_joint_state(self.profile, arm, list(message.name), list(message.position))
            if values is not None:
                self.arms[arm] = values
                self.fresh.add(arm)
        if len(self.fresh) < len(ARMS):
            return None
        self.fresh.clear()
        return np.concatenate([self.arms[arm] for arm in ARMS])


def spin_in_thread(context: Any, node: Any, stop: threading.Event) -> threading.Thread:
    """Spin ``node`` on a daemon thread until ``stop`` is set, then shut ``context`` down."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)

    def spin() -> None:
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.05)
        executor.shutdown()
        rclpy.shutdown(context=context)

    thread = threading.Thread(target=spin, name='listener', daemon=True)
    thread.start()
    return thread


# --- measures --------------------------------------------------------------------------------------------------


def speeds(times: np.ndarray, states: np.ndarray, period: float) -> tuple[np.ndarray, np.ndarray]:
    """Per pair of samples two apart, the midpoint time and the arm joints' velocities (rad/s). Fake hardware steps
    its physics by exactly one control ``period`` per sample; a stamp is taken when the tick's message goes out,
    late by up to milliseconds, so the time between samples is the periods between them, not the stamps'."""
    if len(times) < 3:
        return np.zeros(0), np.zeros((0, len(ARM_JOINTS)))
    step = 2
    dt = np.maximum(np.round((times[step:] - times[:-step]) / period), 1.0) * period
    velocity = (states[step:, ARM_JOINTS] - states[:-step, ARM_JOINTS]) / dt[:, None]
    return (times[step:] + times[:-step]) / 2, velocity


def at_rest_from(times: np.ndarray, velocity: np.ndarray, after: float, *, cut: bool) -> float | None:
    """The first time at or after ``after`` from which every arm joint stays under ``REST_SPEED`` for
    ``REST_SECONDS`` (or to the end of the samples, when they were ``cut`` short by a cell reset)."""
    slow = np.abs(velocity).max(axis=1) < REST_SPEED if len(velocity) else np.zeros(0, bool)
    for i in np.flatnonzero((times >= after) & slow):
        window = (times >= times[i]) & (times <= times[i] + REST_SECONDS)
        if (cut or times[-1] >= times[i] + REST_SECONDS) and slow[window].all():
            return float(times[i])
    return None


def tcp_travel(checker: Checker, states: np.ndarray) -> float:
    """The longest TCP path of the two arms over ``states`` (m)."""
    longest = 0.0
    for arm in ARMS:
        points = np.array([checker.kinematics.fk(arm, s[ARM_SLICE[arm]][:6])[0] for s in states])
        if len(points) > 1:
            longest = max(longest, float(np.linalg.norm(np.diff(points, axis=0), axis=1).sum()))
    return longest


@dataclass(frozen=True)
class Followed:
    """One command message as the fake controllers follow it: sent at ``sent_ns``, its arm rows (N, 6), from where the
    reference ``stood`` when it was sent (None for a topic's first message, which starts at its first row) along
    ``knots`` (ns) through ``values``."""

    sent_ns: int
    rows: np.ndarray
    times: np.ndarray
    stood: np.ndarray | None
    knots: np.ndarray
    values: np.ndarray


def followed(
    commands: list[tuple[int, str, list[float], np.ndarray]], *, streamed_period: float = 0.0
) -> dict[str, list[Followed]]:
    """Each command topic's messages in sending order, each a plan from where the one before had the reference when
    it was sent through its rows, linearly (a trajectory's rows when due; a streamed target, ``streamed_period`` > 0,
    one period after it was sent)."""
    plans: dict[str, list[Followed]] = {}
    for topic in sorted({command[1] for command in commands}):
        mine = plans.setdefault(topic, [])
        for sent_ns, _, times, points in sorted((c for c in commands if c[1] == topic), key=lambda c: c[0]):
            rows = points[:, :6]
            before = mine[-1] if mine else None
            stood = None if before is None else interpolate(sent_ns, before.knots, before.values)
            if streamed_period > 0:
                due = np.array([sent_ns + round(streamed_period * NS)])
            else:
                due = sent_ns + np.round(np.asarray(times) * NS).astype(np.int64)
            start = rows[0] if stood is None else stood
            knots, values = np.concatenate([[sent_ns], due]), np.vstack([start[None, :], rows])
            mine.append(Followed(sent_ns, rows, np.asarray(times, dtype=np.float64), stood, knots, values))
    return plans


def interpolate(t: float, knots: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` (K, 6) at ``t``, linearly between ``knots``, held outside them."""
    return np.array([np.interp(t, knots, values[:, j]) for j in range(values.shape[1])])


def commanded_references(
    commands: list[tuple[int, str, list[float], np.ndarray]], grid: np.ndarray, *, streamed_period: float
) -> dict[str, np.ndarray]:
    """Each command topic's commanded arm reference (6 joints) at ``grid`` (ns), as the fake controllers follow their
    messages (``followed``)."""
    references = {}
    for topic, plans in followed(commands, streamed_period=streamed_period).items():
        starts = np.array([plan.sent_ns for plan in plans])
        reference = np.empty((len(grid), 6))
        for i, t in enumerate(grid):
            plan = plans[max(int(np.searchsorted(starts, t, side='right')) - 1, 0)]
            reference[i] = interpolate(t, plan.knots, plan.values)
        references[topic] = reference
    return references


def commanded_rest(
    commands: list[tuple[int, str, list[float], np.ndarray]], fault_ns: int, end_ns: int, *, streamed_period: float
) -> float | None:
    """Seconds from the fault to the moment the commanded reference of every arm stops moving (None when nothing was
    heard; ``commanded_references``, sampled every 5 ms up to ``end_ns``)."""
    grid = np.arange(fault_ns - NS // 2, end_ns, 5_000_000)
    if not commands or len(grid) < 2:
        return None
    last_moving = None
    for reference in commanded_references(commands, grid, streamed_period=streamed_period).values():
        speed = np.abs(np.diff(reference, axis=0)).max(axis=1) / 0.005
        moving = np.flatnonzero((speed > REST_SPEED) & (grid[1:] >= fault_ns))
        if moving.size:
            last_moving = max(last_moving or 0, int(grid[moving[-1] + 1]))
    return 0.0 if last_moving is None else max(0.0, (last_moving - fault_ns) / NS)


def window_joins(commands: list[tuple[int, str, list[float], np.ndarray]]) -> tuple[int, int, float]:
    """How the trajectories that re-send a chunk (their first point a row of the message before on their topic: a
    JTC's windows) join the reference that message left: the velocity of the segment from where the reference stood
    when the window was sent to its first row, against the velocity the reference had there (the step a controller
    following it sees), for windows whose first row is the reference's next knot (one that skips a knot within its
    lead joins along a chord across it, a step of the chunk's own rows, whatever the timing). Returns (such joins
    while the reference moved, those stepping by more than ``JOIN_DEVIATION``, the largest step in rad/s, any
    joint)."""
    joins = off = 0
    largest = 0.0
    for plans in followed(commands).values():
        for before, plan in itertools.pairwise(plans):
            first = plan.rows[0]
            matches = np.flatnonzero(np.abs(before.rows - first).max(axis=1) < 1e-9)
            if plan.stood is None or not matches.size or matches[0] == 0:
                continue
            knots, values = before.knots, before.values
            i = min(int(np.searchsorted(knots, plan.sent_ns, side='right')) - 1, len(knots) - 2)
            moving = (values[i + 1] - values[i]) / ((knots[i + 1] - knots[i]) / NS)
            if np.abs(values[i + 1] - first).max() < 1e-9 and np.abs(moving).max() >= 0.1:
                deviation = float(np.abs((first - plan.stood) / float(plan.times[0]) - moving).max())
                joins += 1
                off += deviation > JOIN_DEVIATION
                largest = max(largest, deviation)
    return joins, off, largest


# --- the graph -------------------------------------------------------------------------------------------------


@dataclass
class Cell:
    """Fake hardware and the graph over it, for one profile."""

    profile: RobotProfile
    domain: int
    out: Path
    control: Path
    tasks: str
    images: bool
    window: float
    stamped: bool = MotionSettings.stamped_windows
    state_watchdog: float = MotionSettings.state_watchdog
    state_pause: float = MotionSettings.state_pause
    blind_travel: float = MotionSettings.blind_travel
    stop_seconds: float = MotionSettings.stop_seconds
    policy: str = 'fault_policy:sweep'
    run_name: str = 'run'
    hardware: subprocess.Popen[str] | None = None
    launcher: subprocess.Popen[str] | None = None
    logs: list[Path] = field(default_factory=list)
    hardware_started: float = 0.0

    def bridge_arguments(self) -> dict[str, str]:
        """The bridge's launch arguments this cell sets."""
        return {
            'command_window': str(self.window),
            'stamped_windows': str(self.stamped).lower(),
            'state_watchdog': str(self.state_watchdog),
            'state_pause': str(self.state_pause),
            'blind_travel': str(self.blind_travel),
            'stop_seconds': str(self.stop_seconds),
        }

    def env(self) -> dict[str, str]:
        env = graph_env(self.domain, python_path=(ROOT, HOOKS))
        env['ROBOFOLLOW_FAULTS'] = str(self.control)
        return env

    def start_hardware(self) -> None:
        log = (self.out / 'fake_hardware.log').open('a')
        command = [sys.executable, '-m', 'robofollow_ros.nodes.fake_hardware', '--ros-args']
        command += ['-p', f'robot_profile:={self.profile.name}', '-p', 'publish_object_poses:=true']
        for name in all_object_names():  # the simulation's truth as a motion-capture system would publish it
            command += ['-r', f'{object_pose_topic(name)}:=/vrpn_mocap/{name}/pose']
        self.hardware = subprocess.Popen(
            command, env=self.env(), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        self.hardware_started = time.monotonic()

    def launch(self) -> None:
        sweeping = self.policy == 'fault_policy:sweep'
        kwargs = json.dumps({'control': str(self.control), 'needs_images': self.images} if sweeping else {})
        command = launch_command(
            'real',
            robot_profile=self.profile.name,
            fake_hardware='false',
            pose_source='mocap',
            policy=self.policy,
            policy_kwargs=kwargs,
            policy_scratch=str(self.control) if sweeping else '',
            task_ids=self.tasks,
            rounds='50',
            layout_check='false',
            **self.bridge_arguments(),
            out=str(self.out / self.run_name),
        )
        log = self.out / f'launch-{len(self.logs):03d}.log'
        self.logs.append(log)
        self.launcher = subprocess.Popen(
            command,
            env=self.env(),
            cwd=ROOT,
            stdout=log.open('w'),
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def alive(self) -> bool:
        return self.launcher is not None and self.launcher.poll() is None

    def restart_hardware(self) -> None:
        """Kill fake hardware (SIGKILL: a participant deadlocked in Fast DDS does not shut down) and start it again."""
        if self.hardware is not None and self.hardware.poll() is None:
            self.hardware.kill()
            self.hardware.wait()
        self.start_hardware()

    def node_pid(self, name: str) -> int | None:
        assert self.launcher is not None
        for child in Path(f'/proc/{self.launcher.pid}/task/{self.launcher.pid}/children').read_text().split():
            with contextlib.suppress(OSError):
                command = Path(f'/proc/{child}/cmdline').read_bytes().split(b'\0')
                if f'robofollow_ros.nodes.{name}'.encode() in command:
                    return int(child)
        return None

    def stop_graph(self, *, timeout: float = 60.0) -> None:
        if self.launcher is None or self.launcher.poll() is not None:
            return
        os.killpg(self.launcher.pid, signal.SIGINT)
        try:
            self.launcher.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.launcher.pid, signal.SIGKILL)
            self.launcher.wait()

    def close(self) -> None:
        self.stop_graph()
        if self.hardware is not None and self.hardware.poll() is None:
            self.hardware.send_signal(signal.SIGINT)
            try:
                self.hardware.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.hardware.kill()

    def run_state(self) -> str:
        """run.json's status (and reason), and the last record's outcome."""
        run_file, results = self.out / self.run_name / 'run.json', self.out / self.run_name / 'results.jsonl'
        parts = []
        with contextlib.suppress(OSError, ValueError):
            run = json.loads(run_file.read_text())
            parts.append(f'run {run.get("status")}' + (f' ({run["reason"]})' if run.get('reason') else ''))
        with contextlib.suppress(OSError, ValueError, IndexError):
            last = json.loads(results.read_text().splitlines()[-1])
            outcome = last.get('void_reason') or last.get('policy_error') or 'scored'
            kinds = last.get('interventions') or {}
            parts.append(f'last trial: {str(outcome)[:70]}' + (f' {kinds}' if kinds else ''))
        return '; '.join(parts)

    def call(self, service: str) -> str:
        command = [sys.executable, '-m', 'robofollow_ros', 'operator', service, '--timeout', '20']
        done = subprocess.run(command, env=self.env(), cwd=ROOT, capture_output=True, text=True, timeout=60)
        return (done.stdout + done.stderr).strip().splitlines()[-1] if (done.stdout + done.stderr).strip() else ''


def moving(heard: Heard, period: float, *, within: float = 0.2) -> bool:
    now = time.time_ns()
    times, states = heard.states_between(now - round(within * NS) - NS // 10, now)
    _, velocity = speeds(times, states, period)
    return bool(len(velocity)) and float(np.abs(velocity).max()) > MOVING_SPEED


STILL_S = 90.0
"""A graph whose arms have not moved this long after its start (home, the first query, the sweep) is stuck."""
DEAF_SECONDS = 3.0
"""Fake hardware's side channel silent this long while no fault silences it: its participant is deadlocked."""


class Listener:
    """The bench's listener node (``listen``), started again in a new participant by ``restart``: it lives through
    every graph the bench kills, so it meets the Fast DDS deadlock of docs/graph.md more than any node (seen: the
    listener deaf to fake hardware's side channel while the graph ran episodes over the same fake hardware)."""

    def __init__(self, profile: RobotProfile, heard: Heard, domain: int) -> None:
        self.profile, self.heard, self.domain = profile, heard, domain
        self.stop = threading.Event()
        self.thread = listen(profile, heard, self.stop, domain)
        self.started = time.monotonic()

    def restart(self) -> None:
        """A new listener; the old one's thread is left to end if it can (a deadlocked participant never does)."""
        self.stop.set()
        self.stop = threading.Event()
        self.thread = listen(self.profile, self.heard, self.stop, self.domain)
        self.started = time.monotonic()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def deaf(heard: Heard, cell: Cell, listener: Listener) -> bool:
    """Whether nothing was heard on fake hardware's side channel for ``DEAF_SECONDS`` (the joint states are not
    switched off then: a fault's hold has ended before the next one), fake hardware and the listener up 30 s."""
    if cell.hardware is None or time.monotonic() - max(cell.hardware_started, listener.started) < 30.0:
        return False
    now = time.time_ns()
    times, _ = heard.states_between(now - round(DEAF_SECONDS * NS), now)
    return not len(times)


def wait_for(condition: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def fired_at(path: Path, timeout: float) -> int | None:
    """The wall clock (ns) a hook or the policy wrote into ``path``, waiting up to ``timeout`` for it."""
    if not wait_for(path.exists, timeout):
        return None
    time.sleep(0.01)
    return int(path.read_text().split()[-1])


# --- one fault -------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    fault: str
    fault_ns: int
    to_commanded_rest: float | None
    to_rest: float | None
    travel_mm: float
    peak_speed: float
    peak_acceleration: float
    says: str
    resumed: bool | None


def inject(cell: Cell, heard: Heard, fault: str) -> int | None:
    """Inject ``fault`` now; the wall clock (ns) it took effect (None: it never did)."""
    control = cell.control
    for stale in control.glob('*.fired'):
        stale.unlink()
    who, _, name = fault.partition('_')
    if who in ('bridge', 'evaluator', 'launcher') and name in SIGNALS:
        pid = cell.launcher.pid if who == 'launcher' else cell.node_pid('policy_bridge' if who == 'bridge' else who)
        if pid is None:
            return None
        at = time.time_ns()
        os.kill(pid, SIGNALS[name])
        return at
    if fault == 'worker_exception':
        (control / fault).write_text('')
        return fired_at(control / f'{fault}.fired', 10.0)
    if who == 'policy':
        (control / 'fault').write_text(name)
        answered = fired_at(control / 'fault.fired', 10.0)
        if answered is None or name not in MID_CHUNK:
            return answered
        # The chunk's first half is sound and runs; the fault reaches the arms with its middle row.
        return answered + round(MIDDLE_ROW * cell.profile.row_period * NS)
    if fault.endswith('_off'):
        (control / fault).write_text('')
        return fired_at(control / f'{fault}.fired', 2.0)
    if fault in ('stop', 'stop_continue'):
        # As the evaluator's stop key: a client that has known the service since the graph started.
        from std_srvs.srv import Trigger

        if heard.stop_client is None or not heard.stop_client.service_is_ready():
            return None
        at = time.time_ns()
        heard.stop_client.call_async(Trigger.Request())
        return at
    if fault == 'stop_command':
        at = time.time_ns()
        threading.Thread(target=cell.call, args=('stop',), daemon=True).start()
        return at
    raise ValueError(fault)


def after_fault(cell: Cell, fault: str, hold: float) -> None:
    """What the operator (or the world) does after the fault: lift a silenced topic, release a stop."""
    if fault.endswith('_off'):
        time.sleep(hold)
        with contextlib.suppress(FileNotFoundError):
            (cell.control / fault).unlink()
    if fault == 'stop_continue':
        time.sleep(0.3)
        cell.call('ready')
    elif fault in ('stop', 'stop_command'):
        time.sleep(WATCH_SECONDS)
        cell.call('ready')


def measure(cell: Cell, heard: Heard, checker: Checker, fault: str, fault_ns: int) -> Outcome:
    end_ns = fault_ns + round(WATCH_SECONDS * NS)
    wait_for(lambda: time.time_ns() > end_ns + NS // 2, WATCH_SECONDS + 2)
    return outcome_after(heard, checker, fault, fault_ns)


def accelerations(mid: np.ndarray, velocity: np.ndarray, period: float) -> np.ndarray:
    """The arm joints' accelerations (rad/s^2) between consecutive ``speeds``: their midpoints are a whole number
    of control periods apart, however late each message went out (stamps 1 ms apart read 300 rad/s^2)."""
    if len(mid) < 2:
        return np.zeros((0, velocity.shape[1]))
    dt = np.maximum(np.round(np.diff(mid) / period), 1.0) * period
    return np.diff(velocity, axis=0) / dt[:, None]


def outcome_after(heard: Heard, checker: Checker, fault: str, fault_ns: int) -> Outcome:
    """What ``heard`` holds of the arms after the fault at ``fault_ns``: until ``WATCH_SECONDS`` after it, or the
    next trial's first command, or fake hardware's reset."""
    end_ns = fault_ns + round(WATCH_SECONDS * NS)
    with heard.lock:
        cuts = [at for at in heard.resets if at > fault_ns]
        ended = [at for at in heard.ends if at > fault_ns]
    if ended:
        cuts += [published for published, *_ in heard.commands_between(min(ended), end_ns)][:1]
    cut = bool(cuts) and min(cuts) < end_ns
    end_ns = min([end_ns, *cuts])
    times, states = heard.states_between(fault_ns - NS // 5, end_ns)
    period = 1.0 / checker.profile.control_rate
    mid, velocity = speeds(times, states, period)
    start = fault_ns / NS
    rest = at_rest_from(mid, velocity, start, cut=cut)
    after = mid >= start
    peak_speed = float(np.abs(velocity[after]).max()) if after.any() else 0.0
    peak_acceleration = 0.0
    if after.sum() > 3:
        peak_acceleration = float(np.abs(accelerations(mid[after], velocity[after], period)).max())
    until = rest if rest is not None else times[-1] if len(times) else start
    moved = states[(times >= start) & (times <= until)]
    travel = tcp_travel(checker, moved) * 1e3 if len(moved) > 1 else 0.0
    commands = heard.commands_between(fault_ns - 5 * NS, end_ns)
    trajectories = checker.profile.driver == 'ros2_control'
    return Outcome(
        fault=fault,
        fault_ns=fault_ns,
        to_commanded_rest=commanded_rest(
            commands, fault_ns, end_ns, streamed_period=0.0 if trajectories else 1.0 / checker.profile.control_rate
        ),
        to_rest=None if rest is None else rest - start,
        travel_mm=travel,
        peak_speed=peak_speed,
        peak_acceleration=peak_acceleration,
        says='',
        resumed=None,
    )


def episode_motion(heard: Heard, start_ns: int, end_ns: int, period: float) -> tuple[int, int]:
    """(dwells, discontinuities) of the measured motion between two wall-clock times (resampled to ``period``)."""
    times, states = heard.states_between(start_ns, end_ns)
    if len(times) < 10:
        return 0, 0
    grid = np.arange(times[0], times[-1], period)
    resampled = np.stack([np.interp(grid, times, states[:, c]) for c in ARM_JOINTS], axis=1)
    velocity = np.diff(resampled, axis=0) / period
    jumps = np.abs(np.diff(velocity, axis=0)).max(axis=1) > JUMP
    still = np.abs(velocity).max(axis=1) < REST_SPEED
    dwells, run = 0, 0
    seen_motion = False
    for slow in still:
        if slow:
            run += 1
            continue
        if seen_motion and run * period >= DWELL:
            dwells += 1
        seen_motion, run = True, 0
    return dwells, int(jumps.sum())


# --- the bench -------------------------------------------------------------------------------------------------


def run_profile(name: str, args: argparse.Namespace, domain: int) -> list[Outcome] | str:
    import rclpy  # noqa: F401  (the listener's)

    profile = load_profile(name)
    if profile.robot is None:
        return f'refused: robot profile {name!r} names no robot description (the bridge does not drive it)'
    out = Path(args.out) / name
    control = out / 'control'
    control.mkdir(parents=True, exist_ok=True)
    for leftover in control.iterdir():
        leftover.unlink()
    from robofollow_ros.cli.demo import demo_task_ids

    tasks = ','.join(demo_task_ids()[:4])
    cell = Cell(
        profile,
        domain,
        out,
        control,
        tasks,
        args.images,
        **bridge_settings(args),
    )
    heard = Heard()
    os.environ.update({k: v for k, v in cell.env().items() if k.startswith(('ROS_', 'FASTDDS', 'FASTRTPS', 'RMW'))})
    listener = Listener(profile, heard, domain)
    checker = Checker(profile)

    def moving_or_stuck() -> bool:
        """Wait until the arms move (or the graph ended). A deaf side channel, or a graph that does not move within
        ``STILL_S`` (fake hardware deaf to the new graph's nodes only): fake hardware and the listener again,
        up to three times."""
        for _ in range(4):
            if wait_for(lambda: moving(heard, period) or not cell.alive() or deaf(heard, cell, listener), STILL_S):
                if not deaf(heard, cell, listener):
                    return cell.alive()
            elif not cell.alive():
                return False
            print(f'  {name}: fake hardware unheard or the graph still (docs/graph.md, a Fast DDS deadlock): restarted')
            cell.stop_graph()
            cell.restart_hardware()
            listener.restart()
            cell.launch()
        return False

    period = 1.0 / profile.control_rate
    outcomes: list[Outcome] = []
    chosen = FAULTS if args.faults == 'all' else () if args.faults == 'none' else tuple(args.faults.split(','))
    try:
        cell.start_hardware()
        for fault in chosen:
            for repeat in range(args.repeats):
                if not cell.alive():
                    cell.launch()
                if not moving_or_stuck():
                    outcomes.append(
                        Outcome(fault, 0, None, None, 0, 0, 0, f'the graph did not move: {cell.run_state()}', None)
                    )
                    continue
                time.sleep(random.uniform(0.0, 1.0))
                fault_ns = inject(cell, heard, fault)
                if fault_ns is None:
                    outcomes.append(Outcome(fault, 0, None, None, 0, 0, 0, 'the fault never took effect', None))
                    continue
                lifted = threading.Thread(target=after_fault, args=(cell, fault, args.hold), daemon=True)
                lifted.start()
                outcome = measure(cell, heard, checker, fault, fault_ns)
                lifted.join(timeout=60)
                if not cell.alive():
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        assert cell.launcher is not None
                        cell.launcher.wait(timeout=60)
                    outcome.says = cell.run_state()
                    cell.launch()
                    outcome.resumed = moving_or_stuck()
                else:
                    time.sleep(1.0)
                    outcome.says = cell.run_state()
                outcomes.append(outcome)
                print(f'  {name} {fault} #{repeat + 1}: {row(outcome)}', flush=True)
        if args.expert:
            settings = [(0.0, True), (args.command_window, False), (args.command_window, True)]
            if profile.driver != 'ros2_control':
                settings = settings[::2]  # windows and their stamps are a trajectory controller's
            for window, stamped in settings:
                per_episode = expert_motion(
                    cell, heard, window=window, stamped=stamped, episodes=args.expert, period=period
                )
                dwells, jumps, joins, off = ([episode[k] for episode in per_episode] for k in range(4))
                largest = max((episode[4] for episode in per_episode), default=0.0)
                print(
                    f'  {name} expert, command window {window:g} s{"" if stamped else " stamped zero"}: '
                    f'{len(per_episode)} episodes, dwells per episode {np.mean(dwells):.1f} '
                    f'(max {max(dwells, default=0)}), measured velocity discontinuities per episode '
                    f'{np.mean(jumps):.1f} (max {max(jumps, default=0)}); windows joining a moving chunk '
                    f'{sum(joins)}, {sum(off)} of them off its speed by over {JOIN_DEVIATION:g} rad/s, by at most '
                    f'{largest:.3f} rad/s',
                    flush=True,
                )
    finally:
        cell.close()
        listener.close()
    with heard.lock:
        violations = list(heard.violations)
        commands = len(heard.commands)
        dump = {
            'states': heard.states,
            'commands': heard.commands,
            'resets': heard.resets,
            'ends': heard.ends,
            'outcomes': [dataclasses.asdict(outcome) for outcome in outcomes],
        }
    with (out / 'heard.pickle').open('wb') as file:
        pickle.dump(dump, file)
    print(
        f'  {name}: {commands} command messages checked, {len(violations)} violations; {heard.unjudged} after a '
        'message the listener missed (velocity not judged)',
        flush=True,
    )
    for item in violations[:20]:
        print(f'    {item}')
    return outcomes


def expert_motion(
    cell: Cell, heard: Heard, *, window: float, stamped: bool, episodes: int, period: float
) -> list[tuple[int, int, int, int, float]]:
    """Run ``episodes`` expert trials with ``command_window`` ``window`` (``stamped`` windows or not); per episode
    (fake hardware's reset to the bridge's end), the dwells and the velocity discontinuities of the measured motion,
    and how the windows joined their chunks (``window_joins``)."""
    cell.stop_graph()
    cell.window, cell.stamped, cell.policy = window, stamped, 'expert'
    cell.run_name = f'expert-window-{window:g}' + ('' if stamped else '-stamped-zero')
    with heard.lock:
        first = len(heard.ends)
    cell.launch()
    wait_for(lambda: len(heard.ends) >= first + episodes or not cell.alive(), 120.0 * episodes)
    cell.stop_graph()
    found = []
    with heard.lock:
        ends, resets = heard.ends[first:], sorted(heard.resets)
    for end in ends:
        started = [at for at in resets if at < end]
        if started:
            dwells, jumps = episode_motion(heard, started[-1], end, period)
            found.append((dwells, jumps, *window_joins(heard.commands_between(started[-1], end))))
    return found


def row(outcome: Outcome) -> str:
    def seconds(value: float | None) -> str:
        return 'never' if value is None else f'{value:.2f} s'

    resumed = '' if outcome.resumed is None else (' resumed' if outcome.resumed else ' NOT resumed')
    return (
        f'commanded rest {seconds(outcome.to_commanded_rest)}, at rest {seconds(outcome.to_rest)}, '
        f'travel {outcome.travel_mm:.0f} mm, peak {outcome.peak_speed:.2f} rad/s '
        f'{outcome.peak_acceleration:.1f} rad/s2; {outcome.says}{resumed}'
    )


def summary(name: str, outcomes: list[Outcome]) -> None:
    print(f'\n{name}: per fault, median [max] over the repeats')
    print(f'  {"fault":<20} {"cmd rest s":>12} {"rest s":>12} {"travel mm":>12} {"speed":>10} {"accel":>10} resumed')
    for fault in dict.fromkeys(o.fault for o in outcomes):
        mine = [o for o in outcomes if o.fault == fault]

        def cell(values: list[float | None], digits: int) -> str:
            known = [v for v in values if v is not None]
            if not known:
                return 'never'
            missing = '!' if len(known) < len(values) else ''
            return f'{np.median(known):.{digits}f} [{max(known):.{digits}f}]{missing}'

        resumed = [o.resumed for o in mine if o.resumed is not None]
        print(
            f'  {fault:<20} {cell([o.to_commanded_rest for o in mine], 2):>12} {cell([o.to_rest for o in mine], 2):>12}'
            f' {cell([o.travel_mm for o in mine], 0):>12} {cell([o.peak_speed for o in mine], 2):>10}'
            f' {cell([o.peak_acceleration for o in mine], 1):>10} '
            + (f'{sum(resumed)}/{len(resumed)}' if resumed else '-')
        )


def recheck(checker: Checker, dump: dict[str, Any]) -> list[str]:
    """Every command message of a finished run through ``checker`` (its references cleared first) in order, the arm
    measured as the listener last heard it, the references cleared at fake hardware's resets (writers' publication
    numbers are not kept: every message counts as following the one before)."""
    profile = checker.profile
    checker.reference.clear()
    arm_of = {profile.arms[arm].command.topic: arm for arm in ARMS}
    state_times = np.array([t for t, _ in dump['states']], dtype=np.int64)
    resets = sorted(dump['resets'])
    found: list[str] = []
    for published, topic, times, points in sorted(dump['commands'], key=lambda c: c[0]):
        while resets and resets[0] <= published:
            resets.pop(0)
            checker.reference.clear()
        arm = arm_of[topic]
        j = int(np.searchsorted(state_times, published, side='right')) - 1
        measured = dump['states'][j][1][ARM_SLICE[arm]] if j >= 0 else None
        issues = checker.check(arm, published, times, points, measured=measured)
        found.extend(f'{topic} at {published}: {item}' for item in issues)
    return found


def analyse(folder: Path) -> None:
    """Print the summary of a finished run again from its ``heard.pickle`` files, every measure recomputed from what
    was heard (what the run's results said kept)."""
    for dump_file in sorted(folder.glob('*/heard.pickle')):
        with dump_file.open('rb') as file:
            dump = pickle.load(file)
        profile = load_profile(dump_file.parent.name)
        heard = Heard(states=dump['states'], commands=dump['commands'], resets=dump['resets'], ends=dump['ends'])
        checker = Checker(profile)
        outcomes = []
        for item in dump['outcomes']:
            outcome = Outcome(**item) if isinstance(item, dict) else item
            if outcome.fault_ns:
                again = outcome_after(heard, checker, outcome.fault, outcome.fault_ns)
                outcome = dataclasses.replace(again, says=outcome.says, resumed=outcome.resumed)
            outcomes.append(outcome)
        violations = recheck(checker, dump)
        print(f'\n{profile.name}: {len(dump["commands"])} command messages checked again, {len(violations)} violations')
        for item in violations[:20]:
            print(f'    {item}')
        summary(dump_file.parent.name, outcomes)


def add_bridge_options(parser: argparse.ArgumentParser) -> None:
    """The bridge's launch arguments a bench sets on its ``Cell`` (``bridge_settings``): ``--command-window``,
    ``--state-watchdog``, ``--state-pause``, ``--blind-travel``, ``--stop-seconds``, each defaulting to the bridge's."""
    parser.add_argument(
        '--command-window', type=float, default=WINDOW_SECONDS, help="the bridge's command_window (0: whole chunks)"
    )
    parser.add_argument(
        '--state-watchdog',
        type=float,
        default=MotionSettings.state_watchdog,
        help="the bridge's state_watchdog (s): a quiet driver's limit",
    )
    parser.add_argument(
        '--state-pause',
        type=float,
        default=MotionSettings.state_pause,
        help="the bridge's state_pause (s): how long it drives arms it does not see",
    )
    parser.add_argument(
        '--blind-travel',
        type=float,
        default=MotionSettings.blind_travel,
        help="the bridge's blind_travel (m): how far it drives a TCP unseen once the state is half the pause old",
    )
    parser.add_argument(
        '--stop-seconds',
        type=float,
        default=MotionSettings.stop_seconds,
        help="the bridge's stop_seconds: a controlled stop brings a joint at full speed to rest in this time",
    )


def bridge_settings(args: argparse.Namespace) -> dict[str, float]:
    """The ``Cell`` fields ``add_bridge_options``'s arguments set."""
    return {
        'window': args.command_window,
        'state_watchdog': args.state_watchdog,
        'state_pause': args.state_pause,
        'blind_travel': args.blind_travel,
        'stop_seconds': args.stop_seconds,
    }


def bridge_description(args: argparse.Namespace) -> str:
    """``add_bridge_options``'s arguments in one line."""
    return (
        f'command window {args.command_window:g} s; state watchdog {args.state_watchdog:g} s, '
        f'state pause {args.state_pause:g} s, blind travel {args.blind_travel:g} m; stop seconds {args.stop_seconds:g}'
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--profiles', default='aloha_ros2_control,aloha_interbotix,piper')
    parser.add_argument('--faults', default='all', help=f'all, or some of: {",".join(FAULTS)}')
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--expert', type=int, default=0, help='expert episodes per command window (0: none)')
    parser.add_argument('--hold', type=float, default=3.0, help='seconds a silenced topic stays silent')
    parser.add_argument('--images', action='store_true', help='the policy asks for camera images')
    add_bridge_options(parser)
    parser.add_argument('--domain', type=int, default=120)
    parser.add_argument('--out', default='/tmp/bench_faults')
    parser.add_argument('--analyse', action='store_true', help="print --out's results again, from its recordings")
    args = parser.parse_args()
    if args.analyse:
        analyse(Path(args.out))
        return 0
    print(
        f'load {os.getloadavg()[0]:.1f}; {args.repeats} repeats; faults {args.faults}; ' + bridge_description(args),
        flush=True,
    )
    results: dict[str, list[Outcome] | str] = {}
    for index, name in enumerate(args.profiles.split(',')):
        print(f'{name}:', flush=True)
        results[name] = run_profile(name, args, args.domain + index)
    for name, outcomes in results.items():
        if isinstance(outcomes, str):
            print(f'\n{name}: {outcomes}')
        else:
            summary(name, outcomes)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
