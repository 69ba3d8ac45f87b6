"""Stage 3, finish (protocol §4.6): leave the scene, return home in time, stay home, no re-grasp.

"Home" must hold for every sample of a window from t (truncated at the episode end) and the return may
take at most ``lateness`` after the completion time. Both count recorded frames when the episode's
frames are executed rows and the variant counts frames, else seconds (``EpisodeSignals.frame_windows``).
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


def fallback_completion(ctx: EpisodeContext, *, at_close: bool = False) -> int:
    """Completion time when no stage provides one: first lift from the close, else the final sample.

    With ``at_close`` (published S4 pickup) an episode whose source never lifts completes at the close.
    """
    close = ctx.events.close_expected
    lifted = first_lift_from(ctx, close)
    if lifted is not None:
        return lifted
    return close if at_close and close is not None else ctx.signals.last


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
    signals: EpisodeSignals, arm: Arm, *, anchor: int, radius: float, window: float, window_frames: int
) -> tuple[int | None, np.ndarray]:
    """First sample ``t >= anchor`` from which the arm stays within ``radius`` of home for the window.

    The window is ``window_frames`` frames or ``window`` seconds (``EpisodeSignals.window_ends``).

    Returns:
        That sample (``None`` if there is none) and the arm's distance from home over time.
    """
    distance = np.linalg.norm(signals.ee[arm] - signals.home(arm), axis=1)
    away = np.concatenate(([0], np.cumsum(distance > radius)))
    starts = np.arange(anchor, signals.n)
    ends = signals.window_ends(starts, seconds=window, frames=window_frames)
    settled = starts[(away[ends] - away[starts]) == 0]
    return (int(settled[0]) if settled.size else None), distance


def _arm_failure(ctx: EpisodeContext, arm: Arm, anchor: int) -> str | None:
    signals, config = ctx.signals, ctx.config
    finish = config.finish
    radius = finish.home_radius[ctx.scene]
    home, distance = home_return(
        signals, arm, anchor=anchor, radius=radius, window=finish.window, window_frames=finish.window_frames
    )
    if home is None:
        window = signals.limit(seconds=finish.window, frames=finish.window_frames)
        return f'the {arm} arm never stays within {radius} m of home for {window} after {signals.when(anchor)}'
    if signals.longer_than(anchor, home, seconds=finish.lateness, frames=finish.lateness_frames):
        limit = signals.limit(seconds=finish.lateness, frames=finish.lateness_frames)
        return f'the {arm} arm is home {signals.span(anchor, home)} after completion (limit {limit})'
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
