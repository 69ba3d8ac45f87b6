"""``home_paths``: the ways a slow home move may take, in order of preference, and ``plan_home``: the first of them
the safety filter passes whole (pure numpy).

The straight line in joint space is the shortest, but from some poses it passes under the workspace box's floor
on the way (the TCP sinks while the shoulder and elbow unfold together). Moving an arm's lifting joints (shoulder
and elbow, its second and third joints) first, or last, keeps such a path higher. ``plan_home`` keeps the first path
the safety filter passes whole, and the straight one (refused where it leaves the box, and saying so) when none
passes. Measured on ``aloha_ros2_control`` from 300 random joint states whose TCPs lie in the box (anywhere in the
joint limits: folded and reaching poses included), the straight path passed from 59 %, one of the three from 68 %;
from every state within 0.8 rad of home the straight path passed (``test/test_safety_home_path.py``).

An arm measured outside the box (it overshot a hostile chunk's last row by a few millimetres) may only move back,
and every joint-space path home can first take a TCP further out on some axis. Such a move then starts by leading
each TCP outside straight back into the box (``into_box_rows``: damped least squares on the arm's position
Jacobian) and goes home from there.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from robofollow_ros.errors import RoboFollowError
from robofollow_ros.safety.command_filter import MeasuredState, SafetyDecision, TcpFunction, filter_chunk
from robofollow_ros.safety.limits import SafetyLimits, WorkspaceBox
from robofollow_ros.state_layout import ACTION_DIM, ARM_SLICE, ARMS, Arm

INTO_BOX_MARGIN = 0.01
"""m: how far inside the box the way back leads a TCP that was outside it."""
INTO_BOX_MAX_ROWS = 200
JACOBIAN_STEP = 1e-6
"""rad: the finite difference of the numerical position Jacobian."""
DAMPING = 1e-3
"""m: damping of the least-squares step near singular poses."""

LIFTING_JOINTS = (1, 2)
"""An arm's shoulder and elbow, as offsets into its slice of the 14-D layout (6-DoF arms: waist, shoulder, elbow...)."""


def lifting_columns() -> np.ndarray:
    """The 14-D columns of both arms' lifting joints."""
    return np.array([ARM_SLICE[arm].start + offset for arm in ARMS for offset in LIFTING_JOINTS])


def linear_rows(start: np.ndarray, goal: np.ndarray, *, speed: np.ndarray, row_period_s: float) -> np.ndarray:
    """Rows from ``start`` (excluded) to ``goal`` (the last row), every value moving at most ``speed`` per second,
    one row per ``row_period_s``; none when ``start`` is ``goal``."""
    seconds = float((np.abs(goal - start) / speed).max())
    if seconds == 0.0:
        return np.zeros((0, ACTION_DIM))
    rows = max(1, math.ceil(seconds / row_period_s))
    fractions = np.arange(1, rows + 1, dtype=np.float64)[:, None] / rows
    rows_out = start[None, :] + fractions * (goal - start)[None, :]
    rows_out[-1] = goal
    return rows_out


def into_box_rows(
    start: np.ndarray,
    *,
    tcp: TcpFunction,
    box: WorkspaceBox,
    speed: np.ndarray,
    row_period_s: float,
    limits: SafetyLimits,
) -> np.ndarray:
    """Rows that lead every TCP outside ``box`` back in, ``INTO_BOX_MARGIN`` inside it on each axis it left, each
    value moving at most ``speed`` per second, within the joint limits; none when both TCPs are inside already or
    the way back is not found within ``INTO_BOX_MAX_ROWS`` (the forward kinematics fails, or the arm is held at a
    joint limit)."""
    try:
        return _into_box(np.asarray(start, dtype=np.float64), tcp, box, speed * row_period_s, limits)
    except (ValueError, TypeError, np.linalg.LinAlgError, RoboFollowError):
        return np.zeros((0, ACTION_DIM))


def _into_box(
    start: np.ndarray, tcp: TcpFunction, box: WorkspaceBox, step: np.ndarray, limits: SafetyLimits
) -> np.ndarray:
    lower, upper = np.asarray(box.lower) + INTO_BOX_MARGIN, np.asarray(box.upper) - INTO_BOX_MARGIN
    state = start.copy()
    if not _outside(state, tcp, box):
        return np.zeros((0, ACTION_DIM))
    rows = []
    for _ in range(INTO_BOX_MAX_ROWS):
        change = np.zeros(ACTION_DIM)
        points = tcp(state)
        for arm, point in zip(ARMS, points, strict=True):
            here = np.asarray(point, dtype=np.float64)
            error = np.clip(here, lower, upper) - here
            if np.abs(error).max() > 1e-6:
                change[ARM_SLICE[arm]] = _least_squares_step(state, arm, here, error, tcp)
        if not change.any():
            break
        scale = float(np.max(np.abs(change) / step))
        state = np.clip(state + change / max(1.0, scale), limits.lower, limits.upper)
        rows.append(state.copy())
    if _outside(state, tcp, box):
        return np.zeros((0, ACTION_DIM))
    return np.array(rows)


def _outside(state: np.ndarray, tcp: TcpFunction, box: WorkspaceBox) -> bool:
    return any(not box.contains(np.asarray(point)) for point in tcp(state))


def _least_squares_step(
    state: np.ndarray, arm: Arm, here: np.ndarray, error: np.ndarray, tcp: TcpFunction
) -> np.ndarray:
    """The change of ``arm``'s joints (6,) that moves its TCP from ``here`` by ``error`` (3,) to first order
    (damped)."""
    index = ARMS.index(arm)
    columns = range(ARM_SLICE[arm].start, ARM_SLICE[arm].stop)
    jacobian = np.empty((3, len(columns)))
    for offset, column in enumerate(columns):
        moved = state.copy()
        moved[column] += JACOBIAN_STEP
        jacobian[:, offset] = (np.asarray(tcp(moved)[index], dtype=np.float64) - here) / JACOBIAN_STEP
    normal = jacobian @ jacobian.T + DAMPING**2 * np.eye(3)
    return jacobian.T @ np.linalg.solve(normal, error)


def home_paths(
    start: np.ndarray, goal: np.ndarray, *, speed: np.ndarray, row_period_s: float
) -> Iterator[tuple[str, np.ndarray]]:
    """The home move's candidate paths from ``start`` to ``goal`` (14,), each named: ``straight``, then
    ``lift first`` and ``lift last`` (both arms' shoulders and elbows moved alone before or after the rest).

    Every path ends at ``goal`` and moves each value at most ``speed`` (14,) per second.
    """
    start, goal = np.asarray(start, dtype=np.float64), np.asarray(goal, dtype=np.float64)
    straight = linear_rows(start, goal, speed=speed, row_period_s=row_period_s)
    yield 'straight', straight if len(straight) else goal[None, :]
    lifting = np.zeros(ACTION_DIM, dtype=bool)
    lifting[lifting_columns()] = True
    for name, first in (('lift first', lifting), ('lift last', ~lifting)):
        via = np.where(first, goal, start)
        stages = [
            linear_rows(start, via, speed=speed, row_period_s=row_period_s),
            linear_rows(via, goal, speed=speed, row_period_s=row_period_s),
        ]
        if all(len(stage) for stage in stages):
            yield name, np.vstack(stages)


@dataclass(frozen=True)
class HomePlan:
    """The home move chosen: the path's ``name``, its ``rows`` and the safety filter's ``decision`` on them."""

    name: str
    rows: np.ndarray
    decision: SafetyDecision

    @property
    def whole(self) -> bool:
        """Whether every row of the path may be sent."""
        return self.decision.rows_sent == len(self.rows)


def plan_home(
    state: MeasuredState,
    goal: np.ndarray,
    *,
    limits: SafetyLimits,
    speed_fraction: float,
    row_period_s: float,
    tcp: TcpFunction | None,
    path_samples: int = 1,
) -> HomePlan:
    """The first of ``home_paths`` from the measured ``state`` to ``goal`` at ``speed_fraction`` of the velocity
    limits that ``filter_chunk`` passes whole (with ``path_samples``), else the straight path as the filter cuts it.
    The paths that lead a TCP back into the workspace first (``into_box_rows``) are tried only when no other
    passes."""
    speed = np.asarray(limits.velocity) * speed_fraction
    start = np.asarray(state.positions, dtype=np.float64)
    plans = []
    for name, rows in home_paths(start, goal, speed=speed, row_period_s=row_period_s):
        decision = filter_chunk(
            rows, state=state, limits=limits, row_period_s=row_period_s, tcp=tcp, path_samples=path_samples
        )
        plans.append(HomePlan(name, rows, decision))
        if plans[-1].whole:
            return plans[-1]
    if tcp is None or limits.workspace is None:
        return plans[0]
    back = into_box_rows(start, tcp=tcp, box=limits.workspace, speed=speed, row_period_s=row_period_s, limits=limits)
    if not len(back):
        return plans[0]
    for name, rows in home_paths(back[-1], goal, speed=speed, row_period_s=row_period_s):
        path = np.vstack([back, rows])
        decision = filter_chunk(
            path, state=state, limits=limits, row_period_s=row_period_s, tcp=tcp, path_samples=path_samples
        )
        if decision.rows_sent == len(path):
            return HomePlan(f'into the box, then {name}', path, decision)
    return plans[0]
