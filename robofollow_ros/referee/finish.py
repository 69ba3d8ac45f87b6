"""Stage 3, finish (protocol §4.6): leave the scene, return home in time, stay home, no re-grasp.

Frame constants are times: "home" must hold for every sample in a window [t, t + window) (truncated at
the episode end), the return may take at most ``lateness`` seconds after the completion time.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robofollow_ros.benchmark.types import Arm
from robofollow_ros.referee.config import RefereeConfig
from robofollow_ros.referee.context import EpisodeContext
from robofollow_ros.referee.events import close_transitions
from robofollow_ros.referee.signals import EpisodeSignals
from robofollow_ros.referee.stage import StageOutcome

STAGE_NAME = 'stage3_finish'


def first_lift_from(ctx: EpisodeContext, start: int | None, name: str | None = None) -> int | None:
    """First sample at or after ``start`` where the object rose ``completion_lift`` above its start height."""
    if start is None:
        return None
    rise = ctx.signals.rise(name or ctx.source)[start:]
    hits = np.flatnonzero(rise >= ctx.config.finish.completion_lift)
    return start + int(hits[0]) if hits.size else None


def fallback_completion(ctx: EpisodeContext) -> int:
    """Completion time when no stage provides one: first lift from the close, else the final sample."""
    lifted = first_lift_from(ctx, ctx.events.close_expected)
    return ctx.signals.last if lifted is None else lifted


def first_of(*candidates: int | None) -> int | None:
    """The first candidate that is not ``None``."""
    return next((c for c in candidates if c is not None), None)


def _inside_area(points: np.ndarray, config: RefereeConfig) -> np.ndarray:
    area = config.finish.operation_area
    inside = np.ones(points.shape[0], dtype=bool)
    for axis, (low, high) in enumerate((area.x, area.y, area.z)):
        inside &= (points[:, axis] >= low) & (points[:, axis] <= high)
    return inside


def home_return(
    signals: EpisodeSignals, arm: Arm, *, anchor: int, radius: float, window: float
) -> tuple[int | None, np.ndarray]:
    """First sample ``t >= anchor`` from which the arm stays within ``radius`` of home for ``window`` seconds.

    Returns:
        That sample (``None`` if there is none) and the arm's distance from home over time.
    """
    distance = np.linalg.norm(signals.ee[arm] - signals.home(arm), axis=1)
    away = np.concatenate(([0], np.cumsum(distance > radius)))
    starts = np.arange(anchor, signals.n)
    ends = signals.window_ends(starts, window)
    settled = starts[(away[ends] - away[starts]) == 0]
    return (int(settled[0]) if settled.size else None), distance


def _arm_failure(ctx: EpisodeContext, arm: Arm, anchor: int) -> str | None:
    signals, config = ctx.signals, ctx.config
    finish = config.finish
    radius = finish.home_radius[ctx.scene]
    home, distance = home_return(signals, arm, anchor=anchor, radius=radius, window=finish.window)
    if home is None:
        return f'the {arm} arm never stays within {radius} m of home for {finish.window} s after {signals.when(anchor)}'
    delay = float(signals.t[home] - signals.t[anchor])
    if delay > finish.lateness + config.time_tolerance:
        return f'the {arm} arm is home {delay:.2f} s after completion (limit {finish.lateness} s)'
    leave = finish.leave_radius[ctx.scene]
    left = np.flatnonzero(distance[home + 1 :] > leave)
    if left.size:
        return f'the {arm} arm leaves home again ({leave} m) at {signals.when(home + 1 + int(left[0]))}'
    regrasp = close_transitions(signals.grip[arm], config.gripper.regrasp)
    later = regrasp[regrasp > anchor]
    if later.size:
        return f'the {arm} gripper closes again at {signals.when(int(later[0]))}'
    return None


def finish_stage(
    ctx: EpisodeContext,
    *,
    anchor: int,
    maximum: float,
    arms: Sequence[Arm] | None = None,
    idle_arm: Arm | None = None,
) -> StageOutcome:
    """Score the finish stage from completion sample ``anchor``.

    Args:
        ctx: the episode.
        anchor: the completion time t_c (sample index).
        maximum: the stage maximum.
        arms: arms that must return home (default: the designated arm).
        idle_arm: the arm that must never enter the operation area (``None``: not checked).
    """
    signals = ctx.signals
    if idle_arm is not None:
        entered = np.flatnonzero(_inside_area(signals.ee[idle_arm], ctx.config))
        if entered.size:
            reason = f'the {idle_arm} arm enters the operation area at {signals.when(int(entered[0]))}'
            return StageOutcome(STAGE_NAME, maximum, False, False, reason, reason, anchor)
    for arm in arms or (ctx.arm,):
        failure = _arm_failure(ctx, arm, anchor)
        if failure is not None:
            return StageOutcome(STAGE_NAME, maximum, False, False, failure, failure, anchor)
    reason = f'home from completion at {signals.when(anchor)} and stays there'
    return StageOutcome(STAGE_NAME, maximum, True, True, reason, reason, anchor)
