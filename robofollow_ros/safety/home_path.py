"""``home_paths``: the ways a slow home move may take, in order of preference, and ``plan_home``: the first of them
the safety filter passes whole (pure numpy).

The straight line in joint space is the shortest, but from some poses it passes under the workspace box's floor
on the way (the TCP sinks while the shoulder and elbow unfold together). Moving an arm's lifting joints (shoulder
and elbow, its second and third joints) first, or last, keeps such a path higher. ``plan_home`` keeps the first path
the safety filter passes whole, and the straight one (refused where it leaves the box, and saying so) when none
passes. Measured on ``aloha_ros2_control`` from 300 random joint states whose TCPs lie in the box (anywhere in the
joint limits: folded and reaching poses included), the straight path passed from 59 %, one of the three from 68 %;
from every state within 0.8 rad of home the straight path passed (``test/test_safety_home_path.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from robofollow_ros.safety.command_filter import MeasuredState, SafetyDecision, TcpFunction, filter_chunk
from robofollow_ros.safety.limits import SafetyLimits
from robofollow_ros.state_layout import ACTION_DIM, ARM_SLICE, ARMS

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
) -> HomePlan:
    """The first of ``home_paths`` from the measured ``state`` to ``goal`` at ``speed_fraction`` of the velocity
    limits that ``filter_chunk`` passes whole, else the straight path as the filter cuts it."""
    plans = []
    for name, rows in home_paths(
        state.positions, goal, speed=np.asarray(limits.velocity) * speed_fraction, row_period_s=row_period_s
    ):
        decision = filter_chunk(rows, state=state, limits=limits, row_period_s=row_period_s, tcp=tcp)
        plans.append(HomePlan(name, rows, decision))
        if plans[-1].whole:
            return plans[-1]
    return plans[0]
