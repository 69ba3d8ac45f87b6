"""Checks of JointTrajectory-like data against the ros2_control JointTrajectoryController's interface.

What the JTC documents and enforces on ``~/joint_trajectory`` (its user documentation, ros2_controllers#902):
``header.stamp`` zero means "start now", anything else is the start time (a trajectory that has ended by the time
it arrives is dropped; one that started in the past is followed from the time already elapsed: it moves from where
the arm stands to its first point still ahead, and points already due are skipped, so here a non-zero stamp's first
point must be due after the message arrives); every joint of the controller named once (unless the
controller allows partial goals); at least one point (an empty trajectory is rejected and does not stop the arm);
each point's ``time_from_start`` positive and strictly increasing (positive is this check's rule); one position
per joint, velocities and accelerations either absent or one per joint; finite numbers; the last point at rest
unless the controller allows otherwise. The command topic should be VOLATILE (a late controller must not replay an
old command) and RELIABLE.

The checks read plain attributes (``header.stamp.sec``, ``joint_names``, ``points[i].time_from_start``, ...), so
rclpy messages, messages read from a bag through ``rosbags`` and ``TrajectoryView`` all work, without ROS here.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from robofollow_ros.state_layout import ARMS, Arm, JointLayout
from robofollow_ros.units import NS_PER_S

DURABILITY_NAMES = {0: 'system_default', 1: 'transient_local', 2: 'volatile', 3: 'unknown', 4: 'best_available'}
"""rmw's durability enum (bag metadata may store the number)."""
RELIABILITY_NAMES = {0: 'system_default', 1: 'reliable', 2: 'best_effort', 3: 'unknown', 4: 'best_available'}
"""rmw's reliability enum."""


@dataclass(frozen=True)
class PointView:
    """One trajectory point: positions, optional velocities and accelerations, ``time_from_start`` in ns."""

    positions: tuple[float, ...]
    time_from_start_ns: int
    velocities: tuple[float, ...] = ()
    accelerations: tuple[float, ...] = ()


@dataclass(frozen=True)
class TrajectoryView:
    """The parts of a JointTrajectory the JTC looks at (``stamp_ns``: ``header.stamp`` in ns, 0 = now)."""

    stamp_ns: int
    joint_names: tuple[str, ...]
    points: tuple[PointView, ...]


@dataclass(frozen=True)
class JtcViolation:
    """One way a trajectory (or a command topic) breaks the JTC's interface.

    Attributes:
        kind: a short code (``empty_trajectory``, ``point_in_past``, ``time_not_increasing``, ...).
        point: the point it concerns, ``None`` for the whole message.
        detail: one line for people.
    """

    kind: str
    point: int | None
    detail: str


def _check_nanoseconds(stamp: Any, what: str, problems: list[JtcViolation], point: int | None) -> None:
    nanosec = int(stamp.nanosec)
    if not 0 <= nanosec < NS_PER_S:
        problems.append(JtcViolation(f'{what}_invalid', point, f'{what} nanosec {nanosec} is outside [0, 1e9)'))


def trajectory_view(message: Any) -> TrajectoryView:
    """A ``TrajectoryView`` of a JointTrajectory message (rclpy or rosbags), or the view itself.

    Raises:
        AttributeError: ``message`` lacks a JointTrajectory field.
    """
    if isinstance(message, TrajectoryView):
        return message
    stamp = message.header.stamp
    points = tuple(
        PointView(
            positions=tuple(float(v) for v in point.positions),
            velocities=tuple(float(v) for v in point.velocities),
            accelerations=tuple(float(v) for v in point.accelerations),
            time_from_start_ns=int(point.time_from_start.sec) * NS_PER_S + int(point.time_from_start.nanosec),
        )
        for point in message.points
    )
    return TrajectoryView(
        stamp_ns=int(stamp.sec) * NS_PER_S + int(stamp.nanosec),
        joint_names=tuple(str(name) for name in message.joint_names),
        points=points,
    )


def seconds_due(message: Any, *, after_ns: int) -> np.ndarray:
    """When each point of a JointTrajectory (rclpy, rosbags or ``TrajectoryView``) is due, in seconds after
    ``after_ns`` (ROS time, when the controller takes it up): its ``time_from_start`` after its ``header.stamp``, or
    after ``after_ns`` for a stamp of zero."""
    view = trajectory_view(message)
    start_ns = view.stamp_ns or after_ns
    return np.array([(start_ns - after_ns + point.time_from_start_ns) / NS_PER_S for point in view.points])


def arm_trajectories(
    positions: np.ndarray, times_s: np.ndarray, layout: JointLayout, *, stamp_ns: int = 0
) -> dict[Arm, TrajectoryView]:
    """Per arm, the JointTrajectory of (N, 14) ``positions`` due ``times_s`` (N,) after ``stamp_ns`` (0: now), in the
    layout's joint names and units (``JointLayout.arm_command``): what a bridge would publish for a ``Command``."""
    nanoseconds = [round(float(seconds) * NS_PER_S) for seconds in np.asarray(times_s).reshape(-1)]
    views = {}
    for arm in ARMS:
        rows = layout.arm_command(positions, arm)
        points = tuple(
            PointView(positions=tuple(float(v) for v in row), time_from_start_ns=ns)
            for row, ns in zip(rows, nanoseconds, strict=True)
        )
        views[arm] = TrajectoryView(stamp_ns=stamp_ns, joint_names=layout.command_joints(arm), points=points)
    return views


def check_trajectory(
    message: Any,
    *,
    controller_joints: Sequence[str],
    received_ns: int | None = None,
    allow_partial_joints: bool = False,
    allow_nonzero_end_velocity: bool = False,
) -> tuple[JtcViolation, ...]:
    """Every way ``message`` (a JointTrajectory, or a ``TrajectoryView``) breaks the JTC's interface.

    Args:
        message: the trajectory.
        controller_joints: the joints of the controller that receives it.
        received_ns: when it arrived on the receiver's clock (a bag's log time); with it, a non-zero stamp whose first
            point was due before that time is reported (``point_in_past``, and ``ends_in_past`` when the JTC would
            drop it whole).
        allow_partial_joints: the controller's ``allow_partial_joints_goal``.
        allow_nonzero_end_velocity: the controller's ``allow_nonzero_velocity_at_trajectory_end``.
    """
    problems: list[JtcViolation] = []
    if not isinstance(message, TrajectoryView):
        _check_nanoseconds(message.header.stamp, 'stamp', problems, None)
        for index, point in enumerate(message.points):
            _check_nanoseconds(point.time_from_start, 'time_from_start', problems, index)
    view = trajectory_view(message)
    problems += _check_joints(view.joint_names, controller_joints, allow_partial_joints)
    if not view.points:
        problems.append(JtcViolation('empty_trajectory', None, 'no points: the JTC rejects it and the arm keeps going'))
        return tuple(problems)
    problems += _check_stamp(view, received_ns)
    problems += _check_points(view, allow_nonzero_end_velocity)
    return tuple(problems)


def _check_joints(names: tuple[str, ...], controller_joints: Sequence[str], allow_partial: bool) -> list[JtcViolation]:
    if not names:
        return [JtcViolation('no_joints', None, 'joint_names is empty')]
    problems = [
        JtcViolation('duplicate_joint', None, f'joint {name!r} is named {count} times')
        for name, count in Counter(names).items()
        if count > 1
    ]
    problems += [
        JtcViolation('unknown_joint', None, f"joint {name!r} is not one of the controller's")
        for name in dict.fromkeys(names)
        if name not in controller_joints
    ]
    missing = [name for name in controller_joints if name not in names]
    if missing and not allow_partial:
        problems.append(JtcViolation('missing_joint', None, f'controller joints not named: {", ".join(missing)}'))
    return problems


def _check_stamp(view: TrajectoryView, received_ns: int | None) -> list[JtcViolation]:
    if view.stamp_ns == 0 or received_ns is None or view.stamp_ns + view.points[0].time_from_start_ns >= received_ns:
        return []
    late = (received_ns - view.stamp_ns - view.points[0].time_from_start_ns) / NS_PER_S
    problems = [
        JtcViolation(
            'point_in_past',
            None,
            f'the first point was due {late:.6f} s before the message arrived: the JTC skips the points already due '
            'and jumps onto the trajectory where it stands now (stamp zero for "now", or a start whose first point is '
            'still ahead)',
        )
    ]
    if view.stamp_ns + view.points[-1].time_from_start_ns < received_ns:
        problems.append(JtcViolation('ends_in_past', None, 'the whole trajectory ends before it arrived: rejected'))
    return problems


def _check_points(view: TrajectoryView, allow_nonzero_end_velocity: bool) -> list[JtcViolation]:
    problems: list[JtcViolation] = []
    joints = len(view.joint_names)
    previous = 0
    for index, point in enumerate(view.points):
        if point.time_from_start_ns <= 0:
            problems.append(JtcViolation('time_not_positive', index, 'time_from_start must be positive'))
        elif point.time_from_start_ns <= previous:
            problems.append(
                JtcViolation(
                    'time_not_increasing',
                    index,
                    f'time_from_start {point.time_from_start_ns} ns after {previous} ns: not strictly increasing',
                )
            )
        previous = max(previous, point.time_from_start_ns)
        if len(point.positions) != joints:
            problems.append(
                JtcViolation('positions_size', index, f'{len(point.positions)} positions for {joints} joints')
            )
        for field, values in (('velocities', point.velocities), ('accelerations', point.accelerations)):
            if len(values) not in (0, joints):
                problems.append(JtcViolation(f'{field}_size', index, f'{len(values)} {field} for {joints} joints'))
        if not all(math.isfinite(v) for v in (*point.positions, *point.velocities, *point.accelerations)):
            problems.append(JtcViolation('non_finite', index, 'a position, velocity or acceleration is not finite'))
    last = view.points[-1].velocities
    if not allow_nonzero_end_velocity and any(abs(v) > 1e-7 for v in last if math.isfinite(v)):
        problems.append(JtcViolation('nonzero_end_velocity', len(view.points) - 1, 'the last point is not at rest'))
    return problems


def check_command_qos(*, durability: str | int, reliability: str | int) -> tuple[JtcViolation, ...]:
    """Whether an arm command topic's QoS is VOLATILE and RELIABLE (names, or rmw's enum numbers as bags store)."""
    durable = DURABILITY_NAMES.get(durability, str(durability)) if isinstance(durability, int) else durability
    reliable = RELIABILITY_NAMES.get(reliability, str(reliability)) if isinstance(reliability, int) else reliability
    problems = []
    if durable.lower() != 'volatile':
        problems.append(
            JtcViolation('qos_durability', None, f'durability {durable}: a late controller may replay an old command')
        )
    if reliable.lower() != 'reliable':
        problems.append(JtcViolation('qos_reliability', None, f'reliability {reliable}: a command may be lost'))
    return tuple(problems)
