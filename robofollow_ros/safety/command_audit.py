"""``audit_commands``: the commands that reached a real cell's arms, checked after the fact against its limits.

A recorded episode (``record:=bag`` on the real-mode graph) holds every arm and gripper command as it was sent, at
the time it was sent (``bags/commands.py`` reads them into ``ArmCommand``). The audit follows each arm's commanded
reference as a controller does: a message replaces the reference from where it stood when the message was logged,
through its points (linear in between), each due ``time_from_start`` after its stamp (``safety.jtc.seconds_due``;
points already due when it was logged are skipped, the reference joining the trajectory where it is then, as a JTC
does); a streamed target is one point one control period ahead. Every point must be finite, within the joint
limits, with the arm's TCP inside the workspace box, and every segment within the velocity limits
(``VELOCITY_SLACK``: a controller takes a message up a little after it was sent); a gripper's opening must lie in
0..1 and move within its speed. A position stream's targets (``ArmCommand.streamed``) are judged as a servo takes
them, whatever the transport's timing: each within the velocity limit times one control period of the one before
(float32 targets keep half an ulp at each end). Accelerations are not judged: the log's timing jitter dominates
them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from robofollow_ros.safety.command_filter import TcpFunction
from robofollow_ros.safety.limits import SafetyLimits
from robofollow_ros.state_layout import ACTION_DIM, ARM_SLICE, ARMS, GRIP_INDEX, Arm

NS_PER_S = 1_000_000_000
VELOCITY_SLACK = 1.05
"""Relative slack of the velocity check across messages: their log times are when they were sent, not when the
controller took them up."""
STREAM_SLACK = 1.0 + 1e-6
"""A streamed target's step is exact (one control period of the limit at most): rounding only."""
IDLE_PERIODS = 3.0
"""Control periods a stream may be idle before its next target starts a new plan (judged from nothing before)."""
SPEED_FLOOR = 1e-3
"""Absolute slack (rad/s; strokes/s for grippers) for segments of a few microseconds."""
LIMIT_TOLERANCE = 1e-6
JOIN_TOLERANCE = 1e-3
"""rad (strokes for grippers): how far a message whose first points were already due when it was logged may take
up its trajectory from where the reference stood (windows of one chunk share its timeline: they join exactly)."""


@dataclass(frozen=True)
class ArmCommand:
    """One command message in the policy's units.

    Attributes:
        topic: where it was sent.
        arm: the arm it commands.
        log_ns: when it was logged (the reference is replaced from there).
        times: (N,) seconds after ``log_ns`` each point is due.
        joints: (N, 6) arm joints (rad), or None for a gripper-only message.
        grips: (N,) normalised gripper openings, not clipped (1 open), or None for an arm-only message.
    """

    topic: str
    arm: Arm
    log_ns: int
    times: np.ndarray
    joints: np.ndarray | None = None
    grips: np.ndarray | None = None
    streamed: bool = False
    """A position stream's target: ``times`` is one control period."""
    stamp_ns: int = 0
    """A JointTrajectory's ``header.stamp`` (0: "now"): windows of one chunk share their chunk's start."""


@dataclass(frozen=True)
class AuditReport:
    """What ``audit_commands`` found: messages per topic, points checked and every violation (one line each)."""

    messages: dict[str, int]
    points: int
    violations: tuple[str, ...]

    @property
    def clean(self) -> bool:
        return not self.violations


@dataclass
class _Reference:
    knots_ns: np.ndarray = field(default_factory=lambda: np.zeros(0))
    values: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    stamp_ns: int = 0

    def at(self, when_ns: int) -> np.ndarray | None:
        if not len(self.knots_ns):
            return None
        return np.array([np.interp(when_ns, self.knots_ns, self.values[:, j]) for j in range(self.values.shape[1])])


def audit_commands(
    commands: Iterable[ArmCommand], limits: SafetyLimits, *, tcp: TcpFunction, home: np.ndarray
) -> AuditReport:
    """Check ``commands`` (in log order) against ``limits`` and its workspace box by ``tcp``; ``home`` (14,) fills
    the other arm's values for the TCP function (an arm's TCP depends on its own joints only)."""
    counts: Counter[str] = Counter()
    joint_references: dict[Arm, _Reference] = {arm: _Reference() for arm in ARMS}
    grip_references: dict[Arm, _Reference] = {arm: _Reference() for arm in ARMS}
    found: list[str] = []
    points = 0
    for command in commands:
        counts[command.topic] += 1
        where = f'{command.topic} at {command.log_ns}'
        due = command.log_ns + command.times * NS_PER_S
        if command.joints is not None:
            points += len(command.joints)
            columns = np.arange(ACTION_DIM)[ARM_SLICE[command.arm]]
            problems = _arm_points(command.arm, command.joints, limits, columns, tcp=tcp, home=home)
            if not problems:
                reference = joint_references[command.arm]
                problems = _speeds(reference, command, due, command.joints, limits.velocity[columns])
            found += [f'{where} {item}' for item in problems]
        if command.grips is not None:
            grips = command.grips[:, None]
            points += len(grips)
            if not (
                np.isfinite(grips).all() and (grips >= -LIMIT_TOLERANCE).all() and (grips <= 1 + LIMIT_TOLERANCE).all()
            ):
                found.append(f'{where} gripper {grips[:, 0].tolist()} outside 0..1')
            else:
                speeds = _speeds(
                    grip_references[command.arm], command, due, grips, limits.velocity[[GRIP_INDEX[command.arm]]]
                )
                found += [f'{where} gripper {item}' for item in speeds]
    return AuditReport(messages=dict(counts), points=points, violations=tuple(found))


def _arm_points(
    arm: Arm, joints: np.ndarray, limits: SafetyLimits, columns: np.ndarray, *, tcp: TcpFunction, home: np.ndarray
) -> list[str]:
    """The points of one message that are not finite, outside the joint limits or with the TCP outside the box."""
    problems = []
    box = limits.workspace
    for i, row in enumerate(joints):
        if row.shape != (len(columns),) or not np.isfinite(row).all():
            return [f'point {i}: not {len(columns)} finite joint positions']
        if (row < limits.lower[columns] - LIMIT_TOLERANCE).any() or (
            row > limits.upper[columns] + LIMIT_TOLERANCE
        ).any():
            problems.append(f'point {i}: {np.round(row, 4).tolist()} outside the joint limits')
        if box is not None:
            state = home.copy()
            state[columns] = row
            point = tcp(state)[ARMS.index(arm)]
            if (point < np.subtract(box.lower, LIMIT_TOLERANCE)).any() or (
                point > np.add(box.upper, LIMIT_TOLERANCE)
            ).any():
                problems.append(f'point {i}: TCP {np.round(point, 4).tolist()} outside the workspace box')
    return problems


def _speeds(
    reference: _Reference, command: ArmCommand, due: np.ndarray, values: np.ndarray, limit: np.ndarray
) -> list[str]:
    """The segments of one message over ``limit`` (the first from where ``reference`` stood when it was logged; a
    streamed target from the target before, over one control period), and the reference replaced by it."""
    if command.streamed:
        before = reference.values[-1] if len(reference.values) else None
        idle = len(reference.knots_ns) and command.log_ns - reference.knots_ns[-1] > IDLE_PERIODS * (
            due[0] - command.log_ns
        )
        reference.knots_ns, reference.values = due, values
        if before is None or idle:
            return []
        period = float(command.times[0])
        step = np.maximum(np.abs(values[0] - before) - np.spacing(np.abs(values[0]).astype(np.float32)), 0.0)
        if (step <= limit * period * STREAM_SLACK).all():
            return []
        ratio = float((step / (limit * period)).max())
        return [f'target: {step.max():.5f} in one control period of {period * 1e3:.1f} ms (x{ratio:.4f})']
    start = reference.at(command.log_ns)
    skipped = 0
    problems = []
    if start is not None and due[0] <= command.log_ns:
        if due[-1] < command.log_ns:
            return []  # the controller drops a trajectory that ended before it arrived: the reference stays
        # A window logged after its first point was due (a bag recorded with arrival times, whose recorder lagged):
        # the controller takes it up where the trajectory is at that moment, skipping the points already due.
        skipped = int(np.searchsorted(due, command.log_ns, side='right'))
        if skipped == len(due):  # its last point due as it arrived: the controller holds there
            joined = values[-1]
        else:
            share = (command.log_ns - due[skipped - 1]) / (due[skipped] - due[skipped - 1])
            joined = values[skipped - 1] + share * (values[skipped] - values[skipped - 1])
        jump = float(np.abs(joined - start).max())
        # A window of the chunk the last one carried joins it where the chunk is: whether the controller took it up
        # before the last one's closing stop began, which log times taken at the recorder cannot tell, only the
        # sending can (a window every 50 ms, 0.15 s before that stop).
        continues = command.stamp_ns != 0 and command.stamp_ns == reference.stamp_ns
        if jump > JOIN_TOLERANCE and not continues:
            point = min(skipped, len(due) - 1)
            problems.append(f'point {point}: joins its trajectory {jump:.4f} away from where the last one had it')
        start, due, values = joined, due[skipped:], values[skipped:]
    knots = np.concatenate([[command.log_ns], due]) if start is not None else due
    path = np.vstack([start[None, :], values]) if start is not None else values
    reference.knots_ns, reference.values, reference.stamp_ns = knots, path, command.stamp_ns
    if len(knots) < 2:
        return problems
    spans = np.maximum(np.diff(knots) / NS_PER_S, 1e-9)
    speed = np.abs(np.diff(path, axis=0)) / spans[:, None]
    over = speed > limit * VELOCITY_SLACK + SPEED_FLOOR
    arriving = skipped if start is not None else 1
    return problems + [
        f'point {i + arriving}: {speed[i].max():.4f} per s over {spans[i] * 1e3:.1f} ms (limit {limit.max():g})'
        for i in np.flatnonzero(over.any(axis=1))
    ]
