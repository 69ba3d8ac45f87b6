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

Where none of these passes, each arm may bring its joint groups (waist, shoulder, elbow, wrist) home one at a time,
in the first of the 24 orders that keeps its own TCP in the box (``arm_orders``); an arm's TCP depends on its own
joints only, so both arms then move at once, stage by stage (``joints_in_turn``). From 300 random states in the box
(seed 7) the three paths pass from 200, the groups in turn from 39 more; the search took at most 67 ms (0.8 ms
median for every home move).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
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
JOINT_GROUPS = {'waist': (0,), 'shoulder': (1,), 'elbow': (2,), 'wrist': (3, 4, 5)}
"""The groups of an arm's joints a home move may bring home one at a time (``arm_orders``), as offsets."""
ARM_JOINTS = tuple(offset for offsets in JOINT_GROUPS.values() for offset in offsets)
"""Every joint of an arm but its gripper, as offsets."""


def lifting_columns() -> np.ndarray:
    """The 14-D columns of both arms' lifting joints."""
    return np.array([ARM_SLICE[arm].start + offset for arm in ARMS for offset in LIFTING_JOINTS])


def group_mask(arm: Arm, offsets: tuple[int, ...]) -> np.ndarray:
    """The (14,) mask of ``arm``'s joints at ``offsets`` into its slice."""
    mask = np.zeros(ACTION_DIM, dtype=bool)
    mask[[ARM_SLICE[arm].start + offset for offset in offsets]] = True
    return mask


def staged_rows(
    start: np.ndarray, goal: np.ndarray, stages: list[np.ndarray], *, speed: np.ndarray, row_period_s: float
) -> np.ndarray:
    """Rows from ``start`` to ``goal`` that bring the values of each (14,) mask of ``stages`` home in turn, each stage
    a straight line at most ``speed`` per second, then the values no stage named; none when ``start`` is ``goal``."""
    rows, here = [], np.asarray(start, dtype=np.float64)
    for mask in [*stages, np.ones(ACTION_DIM, dtype=bool)]:
        via = np.where(mask, goal, here)
        rows.append(linear_rows(here, via, speed=speed, row_period_s=row_period_s))
        here = via
    return np.vstack(rows)


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
        if np.any(via != start) and np.any(via != goal):
            yield name, staged_rows(start, goal, [first], speed=speed, row_period_s=row_period_s)


def arm_orders(
    start: np.ndarray,
    goal: np.ndarray,
    *,
    speed: np.ndarray,
    row_period_s: float,
    passes: Callable[[np.ndarray], bool],
) -> dict[Arm, tuple[str, ...]] | None:
    """Per arm, the first order of ``JOINT_GROUPS`` in which bringing that arm's groups home one at a time (the other
    arm still) ``passes`` (an arm at home: the first order); None when some arm has none. An arm's TCP depends on
    its own joints only, so moving both arms through their orders stage by stage at once traces the same TCP paths."""
    orders = {}
    for arm in ARMS:
        arm_home = np.where(group_mask(arm, ARM_JOINTS), goal, start)
        for order in itertools.permutations(JOINT_GROUPS):
            stages = [group_mask(arm, JOINT_GROUPS[group]) for group in order]
            rows = staged_rows(start, arm_home, stages, speed=speed, row_period_s=row_period_s)
            if not len(rows) or passes(rows):  # (an arm at home already takes any order)
                orders[arm] = order
                break
        else:
            return None
    return orders


def joints_in_turn(
    start: np.ndarray, goal: np.ndarray, orders: dict[Arm, tuple[str, ...]], *, speed: np.ndarray, row_period_s: float
) -> np.ndarray:
    """Rows that bring both arms' ``JOINT_GROUPS`` home at once in each arm's own order (``arm_orders``), stage by
    stage, then the grippers."""
    stages = [
        group_mask('left', JOINT_GROUPS[left]) | group_mask('right', JOINT_GROUPS[right])
        for left, right in zip(orders['left'], orders['right'], strict=True)
    ]
    return staged_rows(start, goal, stages, speed=speed, row_period_s=row_period_s)


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
    Where none passes, a TCP outside the workspace is led back into it first (``into_box_rows``) and the paths tried
    from there; then each arm brings its joint groups home in turn (``arm_orders``, ``joints_in_turn``)."""
    speed = np.asarray(limits.velocity) * speed_fraction
    start = np.asarray(state.positions, dtype=np.float64)

    def judged(name: str, rows: np.ndarray) -> HomePlan:
        decision = filter_chunk(
            rows, state=state, limits=limits, row_period_s=row_period_s, tcp=tcp, path_samples=path_samples
        )
        return HomePlan(name, rows, decision)

    plans = []
    for name, rows in home_paths(start, goal, speed=speed, row_period_s=row_period_s):
        plans.append(judged(name, rows))
        if plans[-1].whole:
            return plans[-1]
    if tcp is None or limits.workspace is None:
        return plans[0]
    back = into_box_rows(start, tcp=tcp, box=limits.workspace, speed=speed, row_period_s=row_period_s, limits=limits)
    if len(back):
        for name, rows in home_paths(back[-1], goal, speed=speed, row_period_s=row_period_s):
            plan = judged(f'into the box, then {name}', np.vstack([back, rows]))
            if plan.whole:
                return plan
    orders = arm_orders(start, goal, speed=speed, row_period_s=row_period_s, passes=lambda rows: judged('', rows).whole)
    if orders is not None:
        named = '; '.join(f'{arm}: {", ".join(orders[arm])}' for arm in ARMS)
        plan = judged(
            f'joints in turn ({named})', joints_in_turn(start, goal, orders, speed=speed, row_period_s=row_period_s)
        )
        if plan.whole:
            return plan
    return plans[0]
