"""Fuzz of the real bridge over fake hardware (issue 29): N hostile chunks, and every command that reached the arms
checked against the profile's joint, velocity and acceleration limits and its workspace box.

``bench/hostile_chunks.py`` generates the chunks (Hypothesis, deterministic by ``--seed``) into the policy's scratch
folder; fake hardware runs on its own and the real-mode graph over it (``bench_faults.Cell``: object poses as a
motion-capture system would publish them, the fault hooks announcing each cell reset), with the replay policy
(``bench/fault_injection/hostile_policy.py``) answering each query with the next chunk, ``--max-queries`` per
episode, for as many trials as it takes to serve them all. A listener in this process keeps every message on the
profile's arm and gripper command topics (with its source timestamp) and fake hardware's measured joints (the
hooks' side channel); after the run every message is checked, independently of the safety layer:

* **joint limits**: every point of every message (a window's closing stop included, executed or not) within the
  profile's limits (1e-9 rad); grippers within 0..1 of their driver range (unclipped);
* **workspace**: both TCPs of every arm point inside the box (MuJoCo's forward kinematics of the cell, not the
  safety layer's URDF kinematics), or, for an arm measured outside it at the message's timestamp (it overshot or
  was pushed), no further out than where it was measured or the point before (counted apart: holding or coming
  back, as the filter allows);
* **velocity**: every segment between two points of one message (their times are exact, never executed ones
  included) within each joint's limit (rad/s; grippers within the URDF finger's speed over its travel, as the
  bridge's default, or ``--gripper-velocity``) to 1e-6; and the reference each arm followed, averaged over every
  control period (the controller samples it no faster), within the limit too. The reference is built in two
  ways: a JointTrajectory takes over from where the reference stands at the message's source timestamp (a
  controller starting from its last command: ``open_loop_control`` / ``interpolate_from_desired_state``), and
  from the measured position at that moment (a JointTrajectoryController's default, and fake hardware's).
  Events over the limit are shown by what began within the control period: a window re-anchoring the chunk the
  message before it carried (the bridge times its windows from its own clock, a controller from each message's
  arrival), another new command, or nothing. A position stream (xs_sdk, piper_ros) is judged per target, as a
  servo receives it: each within the limit times one control period of the target before (a new plan's first,
  sent between two ticks or after the stream was idle, may instead be where the arm is measured: a hold there);
  its targets at their timestamps averaged over control periods are shown apart, as the transport's timing;
* **acceleration**: the followed reference's second difference over row periods,
  ``|q(t + 2T) - 2 q(t + T) + q(t)| / T^2`` (T = 0.06 s; exact for the uniform deceleration of a controlled stop
  sampled every row period, a velocity step read as that step over one row period), at every ``t`` that places a
  knot on one of the three samples (where it peaks), against the profile's stop deceleration (velocity limit /
  ``stop_seconds``, 0.5 s: docs/safety.md's controlled stops) and, apart, against the profile's acceleration limit
  (the filter's acceleration rule). Events over it are counted by what the segment at
  ``t + T`` is: the policy's own rows (``rows``: a chunk's rows may accelerate up to the profile's acceleration
  limit, far above the stop's; the knot where a whole chunk's last row ends, too), the end of a chunk the filter
  cut short (``cut``: the arm commanded from its speed to rest at the last row sent), holds and controlled stops
  (``stop``, window tails included) and the home move between trials (``home``). Holds and stops that set a resting
  arm moving are counted apart, with how far they would take it.

Then: chunks served, command messages checked, violations by rule, the acceleration per category, the bridge's
interventions counted by kind (``interventions`` of the trials' records) and how the episodes ended, wall time and
load. The heard messages are kept (``heard.pickle``) and ``--analyse OUT`` checks them again without a run.

    nice -n 10 .venv/bin/python bench/bench_fuzz.py [--chunks 10000] [--profiles aloha_ros2_control,aloha_interbotix]
        [--seed 0] [--max-rows 60] [--max-queries 10] [--command-window 0.2] [--domain 140] [--out /tmp/bench_fuzz]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import functools
import itertools
import json
import math
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from bench_faults import (
    HOOKS,
    NS,
    RESET_TOPIC,
    SIDE_TOPIC,
    Cell,
    Checker,
    Heard,
    MeasuredArms,
    add_bridge_options,
    bridge_description,
    bridge_settings,
    spin_in_thread,
)
from graph_launch import ROOT, launch_command
from hostile_chunks import ChunkFile, generate, save

from robofollow_ros.realcell.safe_motion import MotionSettings
from robofollow_ros.robot.profiles import RobotProfile, load_profile
from robofollow_ros.safety.controlled_stop import FOLLOWING_WITHIN
from robofollow_ros.safety.jtc import seconds_due
from robofollow_ros.state_layout import ARM_SLICE, ARMS

sys.path.insert(0, str(HOOKS))
from hostile_policy import read_log, served_count

ACTIONS_PER_QUERY = 50
"""Rows of a chunk a query executes (the protocol's): the rest are never sent."""
LIMIT_TOLERANCE = 1e-9
WORKSPACE_TOLERANCE = 1e-6
RETURN_SLACK = 1e-3
"""m: a point outside the box counts as holding or coming back when no further out than the arm measured (or the
point before it) by this (the side channel's sample is up to a few milliseconds older than the command)."""
VELOCITY_TOLERANCE = 1e-6
MEASURED_AGE_S = 0.25
"""How far back the measured arm counts for a command outside the box (the bridge's ``max_state_age``, 0.2 s, and
the time the state takes to reach it): a hold or a new plan at a measurement of that age is where the arm was."""
IDLE_PERIODS = 3.0
"""A streamed target this many control periods or more after the one before starts a new plan: the stream was idle
(a plan ended). A tick that late within a plan would be judged the same way, but the stream's own step limit keeps
it within one period's travel of the last target anyway."""
"""Relative slack of the velocity check between the points of one message (their times are exact)."""
ACCELERATION_SLACK = 1.02
"""A knot counts as over the stop deceleration when above it by more than 2 % (timestamps' rounding to ns)."""
MATCH_DECIMALS = 9
PROGRESS_SECONDS = 60.0
VELOCITY_BANDS = (1.0, 1.05, 1.5, 3.0)
OFF_COMMAND = 0.05
"""rad: an arm measured this far from its command does not follow it (blocked: the arms in contact, the table)."""
MEASURED_WITHIN = 0.05
"""s: a measurement this recent tells where a stream's target may start from (a new plan from the measured arm)."""
FROM_REST_SPEED = 0.5
"""rad/s: a hold or stop that sets a resting arm moving faster than this is counted (a hold at a measured position
a few mrad from the commanded one moves at a fraction of it)."""
CATEGORIES = ('rows', 'cut', 'stop', 'home')


# --- the graph ---------------------------------------------------------------------------------------------------


@dataclass
class FuzzCell(Cell):
    """``bench_faults.Cell`` with the replay policy, ``max_queries`` per episode and ``rounds`` of every task."""

    chunks: Path = Path()
    max_queries: int = 10
    rounds: int = 1

    def launch(self) -> None:
        command = launch_command(
            'real',
            robot_profile=self.profile.name,
            fake_hardware='false',
            pose_source='mocap',
            policy='hostile_policy:replay',
            policy_kwargs=json.dumps({'chunks': str(self.chunks)}),
            policy_scratch=str(self.control),
            task_ids=self.tasks,
            rounds=str(self.rounds),
            max_queries=str(self.max_queries),
            layout_check='false',
            progress='false',
            **self.bridge_arguments(),
            out=str(self.out / 'run'),
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


# --- the listener ----------------------------------------------------------------------------------------------


@dataclass
class Message:
    """One command as heard: topic, arm, ``part`` (``arm`` or ``gripper``), source timestamp and arrival (ns), the
    points' times (s from the timestamp; a streamed target: one point at 0) and values in the policy's units
    ((N, 6) joints, or (N, 1) gripper openings, unclipped)."""

    topic: str
    arm: str
    part: str
    published: int
    received: int
    times: np.ndarray
    points: np.ndarray


@dataclass
class Recording:
    heard: Heard = field(default_factory=Heard)
    messages: list[Message] = field(default_factory=list)


def driver_arm(profile: RobotProfile, arm: str, values: list[float]) -> np.ndarray:
    return profile.arms[arm].joints_from_driver(values)


def opening(profile: RobotProfile, arm: str, value: float) -> float:
    scale = profile.arms[arm].gripper.command
    return (float(value) - scale.closed) / (scale.open - scale.closed)


def listen_commands(
    profile: RobotProfile, recording: Recording, stop: threading.Event, domain: int
) -> threading.Thread:
    """A listener node on its own thread and context: the side channel's measured joints, the cell resets and every
    message on the arm and gripper command topics (``bench_faults.listen`` keeps the arm topics only)."""
    import rclpy
    from rclpy.context import Context
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Int64
    from trajectory_msgs.msg import JointTrajectory

    from robofollow_ros.realcell.drivers import message_class

    context = Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node('bench_fuzz_listener', context=context)
    reader = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    heard = recording.heard

    def keep(message: Message) -> None:
        with heard.lock:
            recording.messages.append(message)

    measured = MeasuredArms(profile)

    def on_state(message: Any) -> None:
        state = measured.update(message)
        if state is not None:
            with heard.lock:
                heard.states.append((message.header.stamp.sec * NS + message.header.stamp.nanosec, state))

    def on_reset(message: Any) -> None:
        with heard.lock:
            heard.resets.append(int(message.data))

    def on_trajectory(topic: str, message: Any, info: Any) -> None:
        names = list(message.joint_names)
        times = seconds_due(message, after_ns=info['source_timestamp'])
        for arm in ARMS:
            spec = profile.arms[arm]
            if spec.command.topic == topic and set(spec.joints) <= set(names):
                columns = [names.index(joint) for joint in spec.joints]
                points = np.array([[p.positions[c] for c in columns] for p in message.points]).reshape(-1, 6)
                keep(
                    Message(
                        topic,
                        arm,
                        'arm',
                        info['source_timestamp'],
                        time.time_ns(),
                        times,
                        driver_arm(profile, arm, points),
                    )
                )
            joint = spec.gripper.command.joint
            if spec.gripper.interface.topic == topic and joint in names:
                column = names.index(joint)
                points = np.array([[opening(profile, arm, p.positions[column])] for p in message.points])
                keep(
                    Message(
                        topic, arm, 'gripper', info['source_timestamp'], time.time_ns(), times, points.reshape(-1, 1)
                    )
                )

    def on_group(topic: str, arm: str, message: Any, info: Any) -> None:
        points = driver_arm(profile, arm, list(message.cmd)).reshape(1, -1)
        keep(Message(topic, arm, 'arm', info['source_timestamp'], time.time_ns(), np.zeros(1), points))

    def on_piper(topic: str, arm: str, message: Any, info: Any) -> None:
        positions = list(message.position)
        stamp, now = info['source_timestamp'], time.time_ns()
        points = driver_arm(profile, arm, positions[:6]).reshape(1, -1)
        keep(Message(topic, arm, 'arm', stamp, now, np.zeros(1), points))
        if len(positions) > 6:  # joint_ctrl_single carries the gripper's opening (m) at index 6
            gripper = np.array([[opening(profile, arm, positions[6])]])
            keep(Message(topic, arm, 'gripper', stamp, now, np.zeros(1), gripper))

    def on_single(topic: str, arm: str, message: Any, info: Any) -> None:
        if message.name != 'gripper':
            return
        points = np.array([[opening(profile, arm, message.cmd)]])
        keep(Message(topic, arm, 'gripper', info['source_timestamp'], time.time_ns(), np.zeros(1), points))

    node.create_subscription(JointState, SIDE_TOPIC, on_state, reader)
    node.create_subscription(Int64, RESET_TOPIC, on_reset, reader)
    subscribed: set[str] = set()
    for arm in ARMS:
        spec = profile.arms[arm]
        for interface, part in ((spec.command, 'arm'), (spec.gripper.interface, 'gripper')):
            if interface.topic in subscribed:
                continue
            subscribed.add(interface.topic)
            kind = message_class(interface.type)
            if profile.driver == 'ros2_control':
                callback = functools.partial(on_trajectory, interface.topic)
                node.create_subscription(JointTrajectory, interface.topic, callback, reader)
            elif profile.driver == 'piper':
                callback = functools.partial(on_piper, interface.topic, arm)
                node.create_subscription(kind, interface.topic, callback, reader)
            elif part == 'arm':
                node.create_subscription(
                    kind, interface.topic, functools.partial(on_group, interface.topic, arm), reader
                )
            else:
                callback = functools.partial(on_single, interface.topic, arm)
                node.create_subscription(kind, interface.topic, callback, reader)
    return spin_in_thread(context, node, stop)


# --- what was served -------------------------------------------------------------------------------------------


@dataclass
class Served:
    """A chunk the policy served: its index, when (wall clock ns), its kind, and the rows a query executes of it
    as the bridge receives them (validated to float32 [T, 14], at most 50 rows, in float64; None: not a valid
    chunk of the protocol, refused before any check of the bridge's own)."""

    index: int
    at: int
    kind: str
    state: np.ndarray
    rows: np.ndarray | None


def served_chunks(file: ChunkFile, scratch: Path) -> list[Served]:
    """Every chunk the policy served, rebuilt exactly from ``served.log`` (the state it observed)."""
    from robofollow_ros.errors import PolicyError
    from robofollow_ros.policy.base import validate_chunk

    served = []
    for index, at, state in read_log(scratch):
        value = file.served(index, state)
        try:
            rows = validate_chunk(value, max_rows=ACTIONS_PER_QUERY).astype(np.float64)
        except PolicyError:
            rows = None
        served.append(Served(index, at, str(file.kinds[index]), state, rows))
    served.sort(key=lambda item: item.at)
    return served


def row_key(values: np.ndarray) -> bytes:
    return (np.round(np.asarray(values, dtype=np.float64), MATCH_DECIMALS) + 0.0).tobytes()


# --- the checks ------------------------------------------------------------------------------------------------


@dataclass
class Polyline:
    """The reference a controller followed, between two cell resets: knot times (s), values (K, D), the tag of the
    segment ending at each knot (``rows``, ``stop``, ``home``, ``rest``) and the chunk row a knot is (or None)."""

    t: list[float] = field(default_factory=list)
    q: list[np.ndarray] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    marks: list[tuple[int, int] | None] = field(default_factory=list)
    starts: dict[int, str] = field(default_factory=dict)
    """Knots where a message took over the reference, with what kind of message (``reanchor``, ``new``...)."""

    def add(self, t: float, q: np.ndarray, tag: str, mark: tuple[int, int] | None = None) -> None:
        if self.t and t <= self.t[-1]:
            if t == self.t[-1]:
                self.q[-1], self.tags[-1], self.marks[-1] = q, tag, mark
            return
        self.t.append(t)
        self.q.append(np.asarray(q, dtype=np.float64))
        self.tags.append(tag)
        self.marks.append(mark)


@dataclass
class Track:
    """One command topic's part (an arm's joints or its gripper): the reference now, the polylines followed."""

    streamed: bool
    velocity: np.ndarray
    ref_t: np.ndarray | None = None
    ref_q: np.ndarray | None = None
    ref_tags: list[str] = field(default_factory=list)
    ref_marks: list[tuple[int, int] | None] = field(default_factory=list)
    appended: int = 0
    """How many of the reference's knots are in the current polyline."""
    lines: list[Polyline] = field(default_factory=lambda: [Polyline()])
    last_keys: set[bytes] = field(default_factory=set)
    """The row keys of the last message's points."""

    def at(self, t: float) -> np.ndarray:
        assert self.ref_t is not None and self.ref_q is not None
        if t >= self.ref_t[-1]:
            return self.ref_q[-1].copy()
        return np.array([np.interp(t, self.ref_t, self.ref_q[:, j]) for j in range(self.ref_q.shape[1])])

    def executed_until(self, t: float) -> None:
        """Move the reference's knots due before ``t`` into the polyline, then the point reached at ``t`` (a rest
        once the reference ended)."""
        if self.ref_t is None or self.ref_q is None:
            return
        line = self.lines[-1]
        while self.appended < len(self.ref_t) and self.ref_t[self.appended] < t:
            i = self.appended
            line.add(float(self.ref_t[i]), self.ref_q[i], self.ref_tags[i], self.ref_marks[i])
            self.appended += 1
        if self.appended < len(self.ref_t):
            line.add(t, self.at(t), self.ref_tags[self.appended], None)
        else:
            line.add(t, self.ref_q[-1], 'rest', None)

    def break_line(self, t: float) -> None:
        """A cell reset at ``t``: the reference is dropped (fake hardware drops every command)."""
        self.executed_until(t)
        self.ref_t, self.ref_q = None, None
        self.last_keys = set()
        if self.lines[-1].t:
            self.lines.append(Polyline())

    def finish(self) -> None:
        if self.ref_t is not None:
            self.executed_until(float(self.ref_t[-1]) + 1e-9)


@dataclass
class Extreme:
    """How many, the largest value and an example of one finding."""

    count: int = 0
    worst: float = 0.0
    example: str = ''
    values: list[tuple[float, float]] = field(default_factory=list)
    """Every finding's value, and how far (rad) the arm stood from its command then (NaN: not known)."""

    def add(self, value: float, example: str, gap: float = math.nan) -> None:
        self.count += 1
        self.values.append((value, gap))
        if value > self.worst:
            self.worst, self.example = value, example

    def bands(self, edges: tuple[float, ...], *, off: float) -> str:
        """How many findings fall between the ``edges``, and how many came with the arm ``off`` rad or more from its
        command."""
        values = np.array([value for value, _ in self.values])
        gaps = np.array([gap for _, gap in self.values])
        parts = [
            f'x{low:g}-{high:g}: {int(((values > low) & (values <= high)).sum())}'
            for low, high in itertools.pairwise(edges)
        ]
        parts.append(f'over x{edges[-1]:g}: {int((values > edges[-1]).sum())}')
        return ', '.join(parts) + f'; with the arm {off:g} rad or more off its command: {int((gaps >= off).sum())}'


@dataclass
class Tally:
    """What the checks found."""

    messages: collections.Counter[str] = field(default_factory=collections.Counter)
    points: int = 0
    violations: collections.Counter[str] = field(default_factory=collections.Counter)
    examples: dict[str, list[str]] = field(default_factory=lambda: collections.defaultdict(list))
    first_segments: dict[str, Extreme] = field(default_factory=lambda: collections.defaultdict(Extreme))
    """Velocity over the limit on a message's first segment, by ``reanchor`` (a window continuing the rows of the
    message before it) and ``new`` (any other command): value, how many ms its time fell short."""
    measured_start: dict[str, Extreme] = field(default_factory=lambda: collections.defaultdict(Extreme))
    """The same, each message's first segment from the measured position at its timestamp."""
    stream_arrivals: dict[str, Extreme] = field(default_factory=lambda: collections.defaultdict(Extreme))
    """A stream's targets at their timestamps averaged over control periods (not a violation: the stream's rule is
    per target, ``stream_steps``; this is the transport's timing)."""
    acceleration: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CATEGORIES})
    """Per category, the ratio to the stop deceleration of every event over it."""
    peak: collections.Counter[str] = field(default_factory=collections.Counter)
    windows: collections.Counter[str] = field(default_factory=collections.Counter)
    worst: dict[str, list[tuple[float, str]]] = field(default_factory=lambda: {c: [] for c in CATEGORIES})
    over: collections.Counter[str] = field(default_factory=collections.Counter)
    """Per category, the events over the stop deceleration (runs of windows over it)."""
    """Per category, the knots furthest over the stop deceleration (ratio, what)."""
    from_rest: Extreme = field(default_factory=Extreme)
    """Controlled stops (several points) that set a resting arm moving faster than ``FROM_REST_SPEED`` (value: the
    speed)."""
    hold_jumps: Extreme = field(default_factory=Extreme)
    """One-point holds as fast from the reference where the arm rests (at the measured position, elsewhere)."""
    from_rest_travel: float = 0.0
    """The furthest such a command would take a joint (rad), whether or not a later one replaced it."""
    tails_entered: int = 0

    def violation(self, rule: str, text: str) -> None:
        self.violations[rule] += 1
        if len(self.examples[rule]) < 8:
            self.examples[rule].append(text)


class Analysis:
    """Every heard message against the profile's limits (module docstring)."""

    def __init__(
        self,
        profile: RobotProfile,
        served: list[Served],
        *,
        stop_seconds: float,
        home_speed: float,
        gripper_velocity: float = 0.0,
    ) -> None:
        from robofollow_ros.robot.description import load_robot

        self.profile = profile
        arms = load_robot(profile.robot or 'aloha').arms
        self.gripper_velocity = {
            arm: gripper_velocity or arms[arm].finger_velocity / arms[arm].finger_travel for arm in ARMS
        }
        """Normalised strokes per second: the URDF finger's speed over its travel (the bridge's default)."""
        self.served = served
        self.served_at = np.array([item.at for item in served], dtype=np.int64)
        self.by_index = {item.index: item for item in served}
        self.checker = Checker(profile)
        self.kinematics = self.checker.kinematics
        self.fk_cache: dict[tuple[str, bytes], np.ndarray] = {}
        self.lower = profile.state_lower()
        self.upper = profile.state_upper()
        self.home = profile.home_state()
        self.home_speed = home_speed
        self.row_period = float(profile.row_period)
        self.deceleration = {arm: np.asarray(profile.arms[arm].velocity) / stop_seconds for arm in ARMS}
        self.keys: dict[tuple[int, str], dict[bytes, list[int]]] = {}
        self.states: list[tuple[int, np.ndarray]] = []
        self.state_times = np.zeros(0, dtype=np.int64)
        self.commanded: dict[str, list[Polyline]] = {}
        """Per arm, the reference it was commanded along (each message from where the last left it)."""
        self.first_sent: dict[tuple[str, int], float] = {}
        """When (s) the first message carrying a chunk's rows went out, per topic and chunk."""
        self.tally = Tally()

    # matching a point to the chunk being executed

    def current(self, published: int) -> Served | None:
        i = int(np.searchsorted(self.served_at, published, side='right')) - 1
        return self.served[i] if i >= 0 else None

    def chunk_keys(self, item: Served, arm: str) -> dict[bytes, list[int]]:
        cached = self.keys.get((item.index, arm))
        if cached is None:
            cached = collections.defaultdict(list)
            if item.rows is not None:
                columns = ARM_SLICE[arm]
                for r, row in enumerate(np.clip(item.rows, self.lower, self.upper)[:, columns]):
                    cached[row_key(row)].append(r)
            self.keys[(item.index, arm)] = cached
        return cached

    def on_polyline(self, item: Served, arm: str, q: np.ndarray, tolerance: float = 1e-3) -> bool:
        """Whether a streamed target lies on the chunk's path (from the state it was asked at through its rows)."""
        if item.rows is None:
            return False
        columns = ARM_SLICE[arm]
        path = np.vstack([item.state[columns][None, :], np.clip(item.rows, self.lower, self.upper)[:, columns]])
        for a, b in itertools.pairwise(path):
            d = b - a
            span = float(d @ d)
            s = 0.0 if span == 0.0 else float(np.clip((q - a) @ d / span, 0.0, 1.0))
            if np.abs(a + s * d - q).max() <= tolerance:
                return True
        return False

    def is_home(self, message: Message, chosen: list[int], previous: np.ndarray | None) -> bool:
        """Whether the ``chosen`` points of an arm message are the home move (a window of it, with its closing
        stop): on a straight line through the arm's home, approaching it, no joint faster than ``home_speed`` of
        its limit; a single point only when it is home, or continues such a line from ``previous``."""
        arm = message.arm
        home = self.home[ARM_SLICE[arm]]
        points = message.points[chosen]
        offsets = points - home
        if previous is not None:
            offsets = np.vstack([previous[None, :] - home, offsets])
        norms = np.linalg.norm(offsets, axis=1)
        if norms.max() < 1e-9:
            return True
        if len(offsets) < 2 or (np.diff(norms) > 1e-9).any():
            return False
        u = offsets[int(norms.argmax())] / norms.max()
        residual = offsets - (offsets @ u)[:, None] * u[None, :]
        if np.linalg.norm(residual, axis=1).max() > 1e-6:
            return False
        times = message.times[chosen]
        limit = np.asarray(self.profile.arms[arm].velocity) * self.home_speed * 1.02 + 1e-9
        steps = np.abs(np.diff(points, axis=0))
        spans = np.diff(times)
        return bool(len(spans) == 0 or ((spans > 0) & (steps <= limit * spans[:, None]).all(axis=1)).all())

    def expected_last(self, index: int) -> int | None:
        item = self.by_index.get(index)
        return None if item is None or item.rows is None else len(item.rows) - 1

    # the checks

    def tcp(self, arm: str, q6: np.ndarray) -> np.ndarray:
        key = (arm, q6.tobytes())
        point = self.fk_cache.get(key)
        if point is None:
            point = self.kinematics.fk(arm, q6)[0]
            self.fk_cache[key] = point
        return point

    def check_points(self, message: Message) -> None:
        arm, tally = message.arm, self.tally
        where = f'{message.topic} at {message.published}'
        if not np.isfinite(message.points).all() or not np.isfinite(message.times).all():
            tally.violation('not_finite', f'{where}: {message.points.tolist()}')
            return
        if message.part == 'gripper':
            values = message.points[:, 0]
            bad = (values < -LIMIT_TOLERANCE) | (values > 1.0 + LIMIT_TOLERANCE)
            for i in np.flatnonzero(bad):
                tally.violation('joint_limits', f'{where} point {i}: gripper {values[i]!r} outside 0..1')
            return
        columns = ARM_SLICE[arm]
        low, high = self.lower[columns], self.upper[columns]
        if self.profile.driver == 'interbotix_xs':
            # JointGroupCommand carries float32: a target sent at a limit arrives rounded, up to half an ulp past it.
            low, high = low - np.spacing(np.float32(np.abs(low))), high + np.spacing(np.float32(np.abs(high)))
        box_low, box_high = np.asarray(self.profile.workspace_min), np.asarray(self.profile.workspace_max)

        def excess(point: np.ndarray) -> np.ndarray:
            return np.maximum(np.maximum(box_low - point, point - box_high) - WORKSPACE_TOLERANCE, 0.0)

        start = self.measured_at(self.states, self.state_times, message.published, arm, message.points[0])
        allowed = excess(self.tcp(arm, start))
        if any(excess(self.tcp(arm, q)).any() for q in message.points):
            first = int(np.searchsorted(self.state_times, message.published - round(MEASURED_AGE_S * NS)))
            last = int(np.searchsorted(self.state_times, message.published, side='right'))
            for _, state in self.states[first:last]:
                # The bridge holds at a measurement up to its max_state_age old: where the arm was then counts.
                allowed = np.maximum(allowed, excess(self.tcp(arm, state[ARM_SLICE[arm]])))
        for i, q in enumerate(message.points):
            if (q < low - LIMIT_TOLERANCE).any() or (q > high + LIMIT_TOLERANCE).any():
                tally.violation('joint_limits', f'{where} point {i}: {q.tolist()} outside the joint limits')
            tcp = self.tcp(arm, q)
            beyond = excess(tcp)
            if not beyond.any():
                allowed = beyond
                continue
            text = f'{where} point {i}: TCP {np.round(tcp, 4).tolist()} outside the box'
            if (beyond <= allowed + RETURN_SLACK).all():
                # The arm is measured outside (it overshot, or was pushed): holding or coming back is allowed.
                tally.violation('workspace_returning', f'{text}, the arm measured {np.round(allowed * 1e3, 1)} mm out')
            else:
                tally.violation('workspace', text)
            allowed = beyond

    def check_velocity(self, message: Message, limit: np.ndarray) -> None:
        """The segments between a message's points (their times are exact), never executed ones included."""
        where = f'{message.topic} at {message.published}'
        points = message.points
        for i in range(1, len(points)):
            duration = float(message.times[i] - message.times[i - 1])
            step = np.abs(points[i] - points[i - 1])
            if duration <= 0.0 or (step > limit * duration * (1 + VELOCITY_TOLERANCE) + 1e-12).any():
                speed = step.max() / max(duration, 1e-12)
                self.tally.violation('velocity', f'{where} segment {i}: {speed:.3f} over {duration * 1e3:.1f} ms')

    def tags(self, message: Message, previous: np.ndarray | None) -> tuple[list[str], list[tuple[int, int] | None]]:
        """Per point of an arm message: ``rows`` (a row of the chunk being executed, marked with which: among equal
        rows, the one due closest to the point's time), ``home`` or ``stop``."""
        item = self.current(message.published)
        keys = self.chunk_keys(item, message.arm) if item is not None else {}
        tags: list[str] = []
        marks: list[tuple[int, int] | None] = []
        t = message.published / NS
        for q, offset in zip(message.points, message.times, strict=True):
            rows = keys.get(row_key(q))
            if item is not None and rows:
                first = self.first_sent.setdefault((message.topic, item.index), t)
                due = t + offset
                row = min(rows, key=lambda r: abs(first + (r + 1) * self.row_period - due))
                tags.append('rows')
                marks.append((item.index, row))
            elif message.times[0] == 0.0 and item is not None and self.on_polyline(item, message.arm, q):
                tags.append('rows')
                marks.append(None)
            else:
                tags.append('')
                marks.append(None)
        rest = [i for i, tag in enumerate(tags) if tag == '']
        if rest:
            home = self.is_home(message, rest, previous)
            tags = [tag or ('home' if home else 'stop') for tag in tags]
        return tags, marks

    def run(self, messages: list[Message], resets: list[int], states: list[tuple[int, np.ndarray]]) -> Tally:
        tracks: dict[tuple[str, str], Track] = {}
        state_times = np.array([t for t, _ in states], dtype=np.int64)
        self.states, self.state_times = states, state_times
        events = sorted(
            [(m.published, 1, i) for i, m in enumerate(messages)] + [(r, 0, i) for i, r in enumerate(resets)]
        )
        for stamp, is_message, i in events:
            if not is_message:
                for track in tracks.values():
                    track.break_line(stamp / NS)
                self.checker.reference.clear()
                continue
            message = messages[i]
            self.tally.messages[message.part] += 1
            self.tally.points += len(message.points)
            self.check_points(message)
            if not np.isfinite(message.points).all():
                continue
            key = (message.topic, f'{message.arm}/{message.part}')
            streamed = bool(message.times[0] == 0.0 and len(message.times) == 1)
            limit = (
                np.asarray(self.profile.arms[message.arm].velocity)
                if message.part == 'arm'
                else np.array([self.gripper_velocity[message.arm]])
            )
            track = tracks.setdefault(key, Track(streamed=streamed, velocity=limit))
            t = message.published / NS
            if message.part == 'arm':
                points7 = np.hstack([message.points, np.full((len(message.points), 1), np.nan)])
                here = (
                    self.measured_at(states, state_times, message.published, message.arm, message.points[0])
                    if len(state_times)
                    else None
                )
                for item in self.checker.check(
                    message.arm, message.published, message.times.tolist(), points7, measured=here
                ):
                    self.tally.violation('bench_faults_checker', f'{message.topic}: {item}')
            self.check_velocity(message, limit)
            line = track.lines[-1]
            previous = line.q[-1] if line.q else None
            if message.part == 'arm':
                tags, marks = self.tags(message, previous)
            else:
                tags, marks = ['stop'] * len(message.points), [None] * len(message.points)
            if streamed:
                # A new plan's first target goes out at once, between two ticks of the plan it replaces.
                span = t - line.t[-1] if line.t else math.inf
                period = 1.0 / self.profile.control_rate
                kind = 'plan_start' if span < 0.5 * period else 'resume' if span > IDLE_PERIODS * period else 'stream'
                if previous is not None and kind != 'stream' and message.part == 'arm' and len(state_times):
                    here = self.measured_at(states, state_times, message.published, message.arm, previous)
                    if np.abs(message.points[0] - here).max() < np.abs(message.points[0] - previous).max():
                        # A plan taking over where the arm is measured: the servo's reference restarts there.
                        track.lines.append(Polyline())
                        line = track.lines[-1]
                line.add(t, message.points[0], tags[0], marks[0])
                line.starts[len(line.t) - 1] = kind
                continue
            if track.ref_t is not None:
                track.executed_until(t)
                start = line.q[-1]
                if message.part == 'arm' and len(state_times) and row_key(message.points[0]) not in track.last_keys:
                    here = self.measured_at(states, state_times, message.published, message.arm, start)
                    if np.abs(here - start).max() > FOLLOWING_WITHIN:
                        # An arm off its reference (blocked, pushed): a new command takes over where it is measured,
                        # as the bridge's start and a JointTrajectoryController do.
                        track.lines.append(Polyline())
                        line = track.lines[-1]
                        start = here
                        line.add(t, start, 'rest')
            elif message.part == 'arm' and len(state_times):
                start = self.measured_at(states, state_times, message.published, message.arm, message.points[0])
            else:
                start = message.points[0]
            resting = track.ref_t is None or t >= track.ref_t[-1]
            if message.part == 'arm' and tags[0] == 'stop' and resting:
                self.from_rest(message, start)
            if message.part == 'arm' and len(state_times):
                # The controller's default: each message from the measured position (one piece per message).
                measured = tracks.setdefault((message.topic, 'measured'), Track(streamed=False, velocity=limit))
                measured.break_line(t)
                here = self.measured_at(states, state_times, message.published, message.arm, start)
                measured.lines[-1].add(t, here, 'rest')
                measured.lines[-1].starts[0] = 'reanchor' if row_key(message.points[0]) in track.last_keys else 'new'
                measured.ref_t = np.concatenate([[t], t + message.times])
                measured.ref_q = np.vstack([here[None, :], message.points])
                measured.ref_tags, measured.ref_marks = ['rows'] * len(measured.ref_t), [None] * len(measured.ref_t)
                measured.appended = 1
            kind = 'reanchor' if row_key(message.points[0]) in track.last_keys else 'new'
            track.last_keys = {row_key(q) for q in message.points}
            if not line.t:
                line.add(t, start, 'rest')
            line.starts[len(line.t) - 1] = kind
            track.ref_t = np.concatenate([[t], t + message.times])
            track.ref_q = np.vstack([start[None, :], message.points])
            track.ref_tags = [tags[0], *tags]
            track.ref_marks = [None, *marks]
            track.appended = 1
        period = 1.0 / self.profile.control_rate
        for track in tracks.values():
            track.finish()
        self.commanded = {
            part.split('/')[0]: track.lines for (_, part), track in tracks.items() if part.endswith('/arm')
        }
        for (topic, part), track in tracks.items():
            if part == 'measured':
                arm = next(a for a in ARMS if self.profile.arms[a].command.topic == topic)
                for line in track.lines:
                    self.velocities(line, track.velocity, period, f'{arm} arm', self.tally.measured_start)
                continue
            arm, what = part.split('/')
            for line in track.lines:
                if track.streamed:
                    self.stream_steps(line, track.velocity, period, arm, what)
                if line.t:  # at rest after its last knot, for the windows that reach past it
                    line.add(line.t[-1] + 2.0 * self.row_period, line.q[-1], 'rest')
                found = self.tally.stream_arrivals if track.streamed else None
                self.velocities(line, track.velocity, period, f'{arm} {what}', found)
                if what == 'arm':
                    self.accelerations(line, arm)
        return self.tally

    def measured_excursions(self, states: list[tuple[int, np.ndarray]], every: int = 2) -> str:
        """How far the measured arms (fake hardware's side channel, every ``every``-th sample) went beyond the joint
        limits and outside the box: the commands may keep them while the arm, tracking them, does not."""
        box_low, box_high = np.asarray(self.profile.workspace_min), np.asarray(self.profile.workspace_max)
        outside, worst, worst_at, beyond, beyond_at = 0, 0.0, 0, 0.0, 0
        for stamp, state in states[::every]:
            excess = float(np.maximum(self.lower - state, state - self.upper).max())
            if excess > beyond:
                beyond, beyond_at = excess, stamp
            for arm in ARMS:
                tcp = self.kinematics.fk(arm, state[ARM_SLICE[arm]])[0]
                distance = float(np.maximum(np.maximum(box_low - tcp, tcp - box_high), 0.0).max())
                if distance > 0.0:
                    outside += 1
                    if distance > worst:
                        worst, worst_at = distance, stamp
        return (
            f'{len(states[::every])} measured states (every {every}th): TCP outside the box in {outside}, at most '
            f'{worst * 1e3:.1f} mm (at {worst_at}); joints beyond their limits by at most {beyond:.4f} rad '
            f'(at {beyond_at})'
        )

    @staticmethod
    def measured_at(
        states: list[tuple[int, np.ndarray]], times: np.ndarray, stamp: int, arm: str, default: np.ndarray
    ) -> np.ndarray:
        """The arm's measured joints at ``stamp`` (ns), between the side channel's samples around it."""
        j = int(np.searchsorted(times, stamp, side='right')) - 1
        if j < 0:
            return default
        before = states[j][1][ARM_SLICE[arm]]
        if j + 1 >= len(states) or times[j + 1] == times[j]:
            return before
        share = (stamp - times[j]) / (times[j + 1] - times[j])
        return before + share * (states[j + 1][1][ARM_SLICE[arm]] - before)

    def measured_recently(self, stamp: int) -> bool:
        """Whether the arms were measured within ``MEASURED_WITHIN`` before ``stamp`` (ns): not across a gap of the
        measurements, where the last one may be far from the arm."""
        j = int(np.searchsorted(self.state_times, stamp, side='right')) - 1
        return j >= 0 and stamp - int(self.state_times[j]) <= MEASURED_WITHIN * NS

    def from_rest(self, message: Message, start: np.ndarray) -> None:
        """A hold or stop that sets a resting arm moving (faster than ``FROM_REST_SPEED``)."""
        speed = float((np.abs(message.points[0] - start) / max(float(message.times[0]), 1e-9)).max())
        if speed <= FROM_REST_SPEED:
            return
        travel = float(np.abs(message.points - start).max())
        measured = self.measured_at(self.states, self.state_times, message.published, message.arm, start)
        gap = float(np.abs(measured - start).max())
        which = self.tally.from_rest if len(message.points) > 1 else self.tally.hold_jumps
        if len(message.points) > 1:
            self.tally.from_rest_travel = max(self.tally.from_rest_travel, travel)
        which.add(
            speed,
            f'{message.topic} at {message.published}: from rest at {np.round(start, 4).tolist()} (measured '
            f'{np.round(measured, 4).tolist()}) to {np.round(message.points[0], 4).tolist()} in '
            f'{message.times[0] * 1e3:.0f} ms, on to {np.round(message.points[-1], 4).tolist()} ({travel:.3f} rad) in '
            f'{message.times[-1]:.2f} s',
            gap,
        )

    @staticmethod
    def sample(line: Polyline, times: np.ndarray) -> np.ndarray:
        t, q = np.array(line.t), np.array(line.q)
        return np.stack([np.interp(times, t, q[:, j]) for j in range(q.shape[1])], axis=1)

    @staticmethod
    def events(times: np.ndarray, span: float) -> list[list[int]]:
        """Indices of ``times`` (sorted) grouped into events: runs closer than ``span`` to each other."""
        groups: list[list[int]] = []
        for i in np.argsort(times):
            if groups and times[i] - times[groups[-1][-1]] <= span:
                groups[-1].append(int(i))
            else:
                groups.append([int(i)])
        return groups

    def velocities(
        self, line: Polyline, limit: np.ndarray, period: float, what: str, found: dict[str, Extreme] | None = None
    ) -> None:
        """The followed reference averaged over every control period (every window starting or ending at a knot,
        where the largest averages are) against the velocity limits; one event per run of such windows."""
        if len(line.t) < 2:
            return
        t = np.array(line.t)
        starts = np.concatenate([t, t - period])
        starts = np.unique(starts[(starts >= t[0]) & (starts + period <= t[-1])])
        if not len(starts):
            return
        speed = np.abs(self.sample(line, starts + period) - self.sample(line, starts)) / period
        ratio = (speed / limit).max(axis=1)
        over = np.flatnonzero(ratio > 1.0 + VELOCITY_TOLERANCE)
        for group in self.events(starts[over], self.row_period):
            worst = over[max(group, key=lambda i: ratio[over[i]])]
            begin = starts[worst]
            inside = [k for k in np.flatnonzero((t >= begin - 1e-9) & (t <= begin + period + 1e-9)) if k in line.starts]
            kind = line.starts[inside[-1]] if inside else 'within'
            if found is None:
                self.tally.violation('velocity', f'{what} at {round(begin * NS)} ({kind}): x{ratio[worst]:.3f}')
            arm = what.split()[0]
            gap = self.gap(arm, begin) if what.endswith('arm') else math.nan
            (self.tally.first_segments if found is None else found)[kind].add(
                float(ratio[worst]),
                f'{what} at {round(begin * NS)}: {float((speed[worst] * period).max()):.4f} rad in '
                f'{period * 1e3:.0f} ms (x{ratio[worst]:.2f} of the limit), the arm {gap:.3f} rad off its command',
                gap,
            )

    def stream_steps(self, line: Polyline, limit: np.ndarray, period: float, arm: str, what: str) -> None:
        """A position stream's targets, one per control period: each within the limit times the period of the one
        before (what a servo is asked to travel in a period, whatever the transport's timing), or of where the arm is
        measured: a new plan from there (a hold, a home move planned from an arm that lags its target; its first
        target may go out on the tick grid, so this is not told by the kind of the knot alone)."""
        for k in range(1, len(line.t)):
            step = np.abs(line.q[k] - line.q[k - 1])
            kind = line.starts.get(k, 'stream')
            stamp = round(line.t[k] * NS)
            if what == 'arm' and self.measured_recently(stamp):
                here = self.measured_at(self.states, self.state_times, stamp, arm, line.q[k - 1])
                step = np.minimum(step, np.abs(line.q[k] - here))
            if self.profile.driver == 'interbotix_xs':
                # float32 targets: each end of a step arrives rounded by up to half an ulp.
                step = np.maximum(step - np.spacing(np.float32(np.abs(line.q[k]))), 0.0)
            ratio = float((step / (limit * period)).max())
            if ratio > 1.0 + VELOCITY_TOLERANCE:
                at = round(line.t[k] * NS)
                self.tally.violation('velocity', f'{arm} {what} stream target at {at} ({kind}): x{ratio:.4f}')
                self.tally.first_segments[kind].add(
                    ratio, f'{arm} {what} at {at}: {float(step.max()):.5f} in one control period (x{ratio:.4f})'
                )

    def gap(self, arm: str, t: float) -> float:
        """How far (rad, largest joint) the measured arm stood from the reference it was commanded along, at ``t``."""
        for line in self.commanded.get(arm, []):
            if line.t and line.t[0] <= t <= line.t[-1]:
                reference = self.sample(line, np.array([t]))[0]
                measured = self.measured_at(self.states, self.state_times, round(t * NS), arm, reference)
                return float(np.abs(reference - measured).max())
        return math.nan

    def category(self, line: Polyline, k: int) -> str:
        """What the segment after knot ``k`` is (the one before, when it is a rest)."""
        after = line.tags[k + 1]
        if after != 'rest':
            return after
        before = line.tags[k]
        if before == 'rows':
            mark = line.marks[k]
            last = None if mark is None else self.expected_last(mark[0])
            return 'cut' if mark is not None and last is not None and mark[1] < last else 'rows'
        return before if before in ('home', 'stop') else 'stop'

    def accelerations(self, line: Polyline, arm: str) -> None:
        """The followed reference's second difference over row periods, ``|q(t + 2T) - 2 q(t + T) + q(t)| / T^2``
        at every ``t`` placing a knot at one of the three samples (where it peaks), by the category of the segment
        at ``t + T``; one count per category and run of windows over the limit."""
        self.tally.tails_entered += sum(a == 'rows' and b == 'stop' for a, b in itertools.pairwise(line.tags))
        if len(line.t) < 3:
            return
        t = np.array(line.t)
        T = self.row_period
        starts = np.concatenate([t, t - T, t - 2.0 * T])
        starts = np.unique(starts[(starts >= t[0]) & (starts + 2.0 * T <= t[-1])])
        if not len(starts):
            return
        second = self.sample(line, starts + 2 * T) - 2 * self.sample(line, starts + T) + self.sample(line, starts)
        ratios = (np.abs(second) / T**2 / self.deceleration[arm]).max(axis=1)
        knots = np.clip(np.searchsorted(t, starts + T, side='right') - 1, 0, len(t) - 2)
        categories = np.array([self.category(line, int(k)) for k in knots])
        for category in CATEGORIES:
            chosen = np.flatnonzero(categories == category)
            if not len(chosen):
                continue
            self.tally.windows[category] += len(chosen)
            self.tally.peak[category] = max(self.tally.peak[category], float(ratios[chosen].max()))
            over = chosen[ratios[chosen] > ACCELERATION_SLACK]
            for group in self.events(starts[over], 2.0 * T):
                worst = over[max(group, key=lambda i: ratios[over[i]])]
                k = int(knots[worst])
                j = int((np.abs(second[worst]) / self.deceleration[arm]).argmax())
                self.note(
                    category,
                    float(ratios[worst]),
                    f'{arm} joint {j} around {round((starts[worst] + T) * NS)}: velocity '
                    f'{second[worst][j] / T:+.3f} rad/s in a row period ({line.tags[k]} -> {line.tags[k + 1]}, '
                    f'mark {line.marks[k]})',
                )

    def note(self, category: str, ratio: float, text: str) -> None:
        """An event over the stop deceleration."""
        self.tally.over[category] += 1
        self.tally.acceleration[category].append(ratio)
        worst = self.tally.worst[category]
        if len(worst) < 5 or ratio > worst[-1][0]:
            worst.append((ratio, text))
            worst.sort(key=lambda item: -item[0])
            del worst[5:]


# --- the run ---------------------------------------------------------------------------------------------------


def records(out: Path) -> list[dict[str, Any]]:
    path = out / 'run' / 'results.jsonl'
    if not path.exists():
        return []
    found = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            found.append(json.loads(line))
    return found


def stop_launch(cell: Cell) -> None:
    """Stop the graph (SIGINT to its process group, SIGKILL after 60 s)."""
    if cell.launcher is None or cell.launcher.poll() is not None:
        return
    os.killpg(cell.launcher.pid, signal.SIGINT)
    try:
        cell.launcher.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(cell.launcher.pid, signal.SIGKILL)
        cell.launcher.wait()


def run_profile(name: str, args: argparse.Namespace, domain: int) -> dict[str, Any]:
    """Generate, run and record one profile; what ``report`` needs."""
    profile = load_profile(name)
    out = Path(args.out) / name
    control = out / 'control'
    control.mkdir(parents=True, exist_ok=True)
    for leftover in control.iterdir():
        leftover.unlink()
    for stale in ('run', 'heard.pickle'):
        path = out / stale
        if path.is_dir():
            subprocess.run(['rm', '-rf', str(path)], check=True)
        elif path.exists():
            path.unlink()
    started = time.monotonic()
    chunks = generate(args.chunks, seed=args.seed, profile=name, max_rows=args.max_rows)
    generated = time.monotonic() - started
    path = control / 'chunks.npz'
    save(path, chunks)
    print(f'  {len(chunks)} chunks generated in {generated:.1f} s ({path.stat().st_size / 1e6:.1f} MB)', flush=True)
    from robofollow_ros.cli.demo import demo_task_ids

    tasks = demo_task_ids()[:4]
    cell = FuzzCell(
        profile,
        domain,
        out,
        control,
        ','.join(tasks),
        False,
        **bridge_settings(args),
        chunks=path,
        max_queries=args.max_queries,
        rounds=math.ceil(args.chunks / len(tasks)) + 1,
    )
    recording, stop = Recording(), threading.Event()
    os.environ.update({k: v for k, v in cell.env().items() if k.startswith(('ROS_', 'FASTDDS', 'FASTRTPS', 'RMW'))})
    listener = listen_commands(profile, recording, stop, domain)
    loads: list[float] = []
    launches, operator_resets, aborted = 0, [], None
    run_started = time.monotonic()
    deadline = run_started + args.max_hours * 3600.0
    try:
        cell.start_hardware()
        next_progress = time.monotonic() + PROGRESS_SECONDS
        failures, served_at_launch = 0, -1
        while served_count(control) < args.chunks and time.monotonic() < deadline:
            if not cell.alive():
                if launches and cell.launcher is not None:
                    served, says = served_count(control), cell.run_state()
                    failures = failures + 1 if served == served_at_launch else 0
                    if failures >= 3:
                        tail = cell.logs[-1].read_text().splitlines()[-15:]
                        raise RuntimeError('the graph ended 3 times without serving a chunk:\n' + '\n'.join(tail))
                    print(f'  the graph ended ({says}): launched again', flush=True)
                    if 'refused to move the arms home' in says:
                        # What an operator does when the bridge cannot bring the arms home: put them there.
                        operator_resets.append(f'after {served} chunks: {says}')
                        print(f'  operator: {operator_reset(domain, tasks[0])}', flush=True)
                served_at_launch = served_count(control)
                cell.launch()
                launches += 1
            time.sleep(1.0)
            loads.append(os.getloadavg()[0])
            if time.monotonic() >= next_progress:
                next_progress += PROGRESS_SECONDS
                served, elapsed = served_count(control), time.monotonic() - run_started
                rate = served / elapsed if elapsed > 0 else 0.0
                eta = (args.chunks - served) / rate / 60.0 if rate > 0 else math.inf
                with recording.heard.lock:
                    heard = len(recording.messages)
                print(
                    f'  {elapsed / 60:.1f} min: {served} chunks served, {len(records(out))} trials, {heard} messages, '
                    f'load {loads[-1]:.1f}, {rate * 60:.0f} chunks/min, ~{eta:.0f} min left',
                    flush=True,
                )
        time.sleep(2.0)  # the last chunk's commands
    except (Exception, KeyboardInterrupt) as error:
        aborted = f'{type(error).__name__}: {error}'
        print(f'  aborted: {aborted}', flush=True)
    finally:
        wall = time.monotonic() - run_started
        stop_launch(cell)
        cell.close()
        stop.set()
        listener.join(timeout=10)
    with recording.heard.lock:
        dump = {
            'profile': name,
            'messages': [dataclasses.astuple(message) for message in recording.messages],
            'resets': list(recording.heard.resets),
            'states': list(recording.heard.states),
            'wall': wall,
            'generated': generated,
            'loads': loads,
            'launches': launches,
            'operator_resets': operator_resets,
            'aborted': aborted,
            'args': vars(args),
        }
    with (out / 'heard.pickle').open('wb') as file:
        pickle.dump(dump, file)
    return dump


def operator_reset(domain: int, task_id: str) -> str:
    """Fake hardware's cell reset (arms home), called as an operator would put the arms back by hand."""
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    from robofollow_interfaces.srv import ResetEpisode
    from robofollow_ros import topics
    from robofollow_ros.benchmark import registry
    from robofollow_ros.evaluation.episode_spec import EpisodeSpec
    from robofollow_ros.ros.protocol import spec_message

    task = next(task for task in registry.eval_tasks() if task.task_id == task_id)
    spec = EpisodeSpec.for_trial(task, seed=1, round=1, variant='published', layout=registry.layout_of(task).name)
    context = Context()
    rclpy.init(context=context, domain_id=domain)
    executor = SingleThreadedExecutor(context=context)
    try:
        node = rclpy.create_node('bench_fuzz_operator', context=context)
        executor.add_node(node)
        client = node.create_client(ResetEpisode, topics.CELL_RESET)
        if not client.wait_for_service(timeout_sec=30.0):
            return f'no {topics.CELL_RESET} service'
        for _ in range(3):
            future = client.call_async(ResetEpisode.Request(episode=spec_message(spec)))
            executor.spin_until_future_complete(future, timeout_sec=20.0)
            if future.done() and future.result() is not None:
                return f'cell reset, arms home ({future.result().message or "ok"})'
        return 'the cell reset went unanswered'
    finally:
        executor.shutdown()
        rclpy.shutdown(context=context)


def analyse(out: Path, dump: dict[str, Any], args: argparse.Namespace) -> None:
    """Check what was heard and print the report of one profile."""
    profile = load_profile(dump['profile'])
    control = out / 'control'
    started = time.monotonic()
    served = served_chunks(ChunkFile(control / 'chunks.npz'), control)
    analysis = Analysis(
        profile,
        served,
        stop_seconds=args.stop_seconds,
        home_speed=args.home_speed,
        gripper_velocity=args.gripper_velocity,
    )
    tally = analysis.run([Message(*fields) for fields in dump['messages']], dump['resets'], dump['states'])
    trials = records(out)
    interventions: collections.Counter[str] = collections.Counter()
    endings: collections.Counter[str] = collections.Counter()
    for record in trials:
        interventions.update(record.get('interventions') or {})
        endings[record.get('error_kind') or ('void' if record.get('void_reason') else 'no error')] += 1
    kinds = collections.Counter(item.kind.split(':')[0] for item in served)
    refused = sum(item.rows is None for item in served)
    loads = dump['loads'] or [math.nan]
    decel = max(float(np.max(profile.arms[arm].velocity)) / args.stop_seconds for arm in ARMS)
    acceleration_limit = min(float(np.min(profile.arms[arm].acceleration)) for arm in ARMS)
    print(f'\n{dump["profile"]}: {len(served)} chunks served ({dict(kinds)}), {refused} of them not a valid [T, 14]')
    print(
        f'  wall {dump["wall"] / 60:.1f} min ({dump["wall"] / max(len(served), 1):.2f} s per chunk), generation '
        f'{dump["generated"]:.1f} s, graph launched {dump["launches"]}x, load mean {np.mean(loads):.1f} '
        f'max {np.max(loads):.1f} (2 cores), analysis {time.monotonic() - started:.0f} s'
    )
    if dump.get('aborted'):
        print(f'  THE RUN WAS ABORTED: {dump["aborted"]}')
    for item in dump.get('operator_resets') or []:
        print(f'  the bench reset the cell (as an operator) {item}')
    print(
        f'  trials {len(trials)}; ended: {dict(endings.most_common())}; queries '
        f'{sum(int(r.get("queries") or 0) for r in trials)}, rows executed '
        f'{sum(int(r.get("executed_rows") or 0) for r in trials)}'
    )
    print(f'  interventions by kind: {dict(interventions.most_common())}')
    print(f'  command messages checked: {sum(tally.messages.values())} ({dict(tally.messages)}), {tally.points} points')
    rules = ('not_finite', 'joint_limits', 'velocity', 'workspace')
    print('  violations: ' + ', '.join(f'{rule} {tally.violations[rule]}' for rule in rules))
    print(
        f'  commands outside the box no further out than the arm measured there (holding or coming back): '
        f'{tally.violations["workspace_returning"]}'
    )
    kinds = (
        ('reanchor', 'a window re-anchoring its chunk'),
        ('new', 'another new command'),
        ('stream', 'a streamed target'),
        ('plan_start', 'a new plan (its first target sent between two ticks)'),
        ('resume', 'a new plan after the stream was idle'),
        ('within', 'no message'),
    )
    for found_by, title in (
        (tally.first_segments, 'each message followed from the reference where it stood (a stream: per target)'),
        (tally.measured_start, "each message from the measured position (a JTC's default)"),
        (tally.stream_arrivals, "a stream's targets at their timestamps, per control period (timing, not judged)"),
    ):
        events = sum(found.count for found in found_by.values())
        print(f'  velocity, {title}: {events} events over the limit')
        for kind, what in kinds:
            found = found_by.get(kind)
            if found is not None and found.count:
                print(f'    in a control period with {what}: {found.count}, worst x{found.worst:.2f}: {found.example}')
                print(f'      {found.bands(VELOCITY_BANDS, off=OFF_COMMAND)}')
    print(
        f'  bench_faults Checker (5 % slack, a message due one control period on): '
        f'{tally.violations["bench_faults_checker"]}'
    )
    print(
        f'  acceleration: the second difference over row periods, against the stop deceleration {decel:.2f} rad/s2 '
        f'(x{ACCELERATION_SLACK:g}); events over it (runs of windows):'
    )
    for category in CATEGORIES:
        if not tally.windows[category]:
            print(f'    {category:<5} none')
            continue
        ratios = np.array(tally.acceleration[category])
        over = len(ratios)
        print(
            f'    {category:<5} {tally.windows[category]:>8} windows, peak {tally.peak[category] * decel:8.1f} rad/s2 '
            f"(x{tally.peak[category]:.2f}), events over the limit {over}, over the profile's acceleration limit "
            f'{acceleration_limit:g} rad/s2 {int((ratios * decel > acceleration_limit * ACCELERATION_SLACK).sum())}'
            + (
                f' (x1-2: {int((ratios <= 2.0).sum())}, x2-4: {int(((ratios > 2.0) & (ratios <= 4.0)).sum())}, '
                f'over x4: {int((ratios > 4.0).sum())})'
                if over
                else ''
            )
        )
    print(f'  knots where chunk rows ran into a stop (a window tail or a hold reached): {tally.tails_entered}')
    print(f'  the arms as measured: {analysis.measured_excursions(dump["states"])}')
    print(
        f'  controlled stops that set a resting arm moving faster than {FROM_REST_SPEED:g} rad/s: '
        f'{tally.from_rest.count}, fastest {tally.from_rest.worst:.2f} rad/s, longest commanded travel '
        f'{tally.from_rest_travel:.3f} rad' + (f'; fastest: {tally.from_rest.example}' if tally.from_rest.count else '')
    )
    if tally.from_rest.count:
        print(f'    {tally.from_rest.bands((0.5, 1.0, 2.0), off=OFF_COMMAND)}')
    print(
        f'  one-point holds as fast from the reference where the arm rests: {tally.hold_jumps.count}, fastest '
        f'{tally.hold_jumps.worst:.2f} rad/s'
        + (
            f' ({tally.hold_jumps.bands((0.5, 1.0, 2.0), off=OFF_COMMAND)}); fastest: {tally.hold_jumps.example}'
            if tally.hold_jumps.count
            else ''
        )
    )
    for category in CATEGORIES:
        for ratio, text in tally.worst[category][: args.examples]:
            print(f'    worst {category} x{ratio:.2f}: {text}')
    for rule, examples in tally.examples.items():
        print(f'  {rule} examples:')
        for example in examples:
            print(f'    {example}')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--chunks', type=int, default=10_000)
    parser.add_argument('--profiles', default='aloha_ros2_control,aloha_interbotix')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--max-rows', type=int, default=60)
    parser.add_argument('--max-queries', type=int, default=10)
    add_bridge_options(parser)
    parser.add_argument(
        '--home-speed', type=float, default=MotionSettings.home_speed, help="the bridge's home_speed (fraction)"
    )
    parser.add_argument('--gripper-velocity', type=float, default=0.0, help="the bridge's (0: the URDF finger's)")
    parser.add_argument('--max-hours', type=float, default=12.0)
    parser.add_argument('--domain', type=int, default=140)
    parser.add_argument('--out', default='/tmp/bench_fuzz')
    parser.add_argument('--analyse', action='store_true', help='check the heard.pickle of OUT again, no run')
    parser.add_argument('--examples', type=int, default=3, help='worst knots printed per category')
    args = parser.parse_args()
    # Started in the background SIGINT may be ignored: both signals stop the run through its clean-up.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    names = args.profiles.split(',')
    print(
        f'load {os.getloadavg()[0]:.1f}; {args.chunks} chunks per profile, seed {args.seed}, max rows '
        f'{args.max_rows}, max queries {args.max_queries}; ' + bridge_description(args),
        flush=True,
    )
    for index, name in enumerate(names):
        out = Path(args.out) / name
        if args.analyse:
            with (out / 'heard.pickle').open('rb') as file:
                dump = pickle.load(file)
        else:
            print(f'{name}:', flush=True)
            dump = run_profile(name, args, args.domain + index)
        analyse(out, dump, args)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
