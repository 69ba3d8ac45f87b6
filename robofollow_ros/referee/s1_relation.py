"""Scene 1: relative placement (protocol §4.5) and the final-layout check (protocol §4.7)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robofollow_ros.errors import RoboFollowError
from robofollow_ros.referee.config import Scene1Config
from robofollow_ros.referee.context import EpisodeContext
from robofollow_ros.referee.stage import StageOutcome, failed

STAGE_NAME = 'stage2_relative_place'

DIRECTIONS: dict[str, tuple[float, float]] = {
    'behind': (0.0, 1.0),
    'in_front': (0.0, -1.0),
    'left_of': (-1.0, 0.0),
    'right_of': (1.0, 0.0),
}
ALIASES = {'in_front_of': 'in_front', 'beside': 'right_of', 'left': 'left_of', 'right': 'right_of'}


def direction(relation: str | None) -> np.ndarray:
    """Unit xy vector of a relation word (``behind`` = +y, ``in_front`` = -y, ``left_of`` = -x, ``right_of`` = +x)."""
    key = ALIASES.get(relation or '', relation or '')
    if key not in DIRECTIONS:
        raise RoboFollowError(f'unknown Scene 1 relation {relation!r} (expected one of {", ".join(DIRECTIONS)})')
    return np.asarray(DIRECTIONS[key])


def relation_holds(offset_xy: np.ndarray, towards: np.ndarray, config: Scene1Config) -> np.ndarray:
    """Whether ``source - anchor`` offsets satisfy the relation: distance in (min, max] and within 45°."""
    distance = np.linalg.norm(offset_xy, axis=1)
    with np.errstate(invalid='ignore', divide='ignore'):
        cosine = (offset_xy @ towards) / distance
    return (
        (distance > config.relation_min_distance)
        & (distance <= config.relation_max_distance)
        & (cosine >= config.relation_min_cos)
    )


def placed(ctx: EpisodeContext) -> np.ndarray:
    """Per sample: the source is on the table (within tolerance of its start height) in the relation."""
    signals, truth, config = ctx.signals, ctx.truth, ctx.config.scene1
    assert truth.target is not None
    offset = signals.pos[truth.source][:, :2] - signals.pos[truth.target][:, :2]
    on_table = np.abs(signals.rise(truth.source)) <= config.on_table_tolerance
    return on_table & relation_holds(offset, direction(truth.relation), config)


def relation_stage(ctx: EpisodeContext, *, maximum: float) -> StageOutcome:
    """Stage 2 of a relative placement.

    Intent: after the close and once the source has been lifted (latched), some sample has it back on
    the table in the relation. Execution: Intent, an opening after the close, a lift between the close
    and the opening, and at the opening the source is on the table in the relation.
    """
    signals, truth = ctx.signals, ctx.truth
    close = ctx.events.close_expected
    relation = f'{truth.source} {truth.relation} {truth.target}'
    if close is None:
        return failed(STAGE_NAME, maximum, 'no close of the designated arm')
    config = ctx.config.scene1
    ok = placed(ctx)
    rise = signals.rise(truth.source)
    after = np.arange(close + 1, signals.n)
    latched = np.logical_or.accumulate(rise[after] >= config.lift) if after.size else after.astype(bool)
    hits = after[latched & ok[after]]
    if not hits.size:
        reason = f'never on the table with {relation} after a lift'
        return failed(STAGE_NAME, maximum, reason)
    first = int(hits[0])
    intent_reason = f'{relation} on the table at {signals.when(first)}'
    opened = ctx.events.open_after_close
    if opened is None:
        exec_reason = f'the {ctx.arm} gripper never opens after the close'
    elif not (rise[close : opened + 1] >= config.lift).any():
        exec_reason = f'{truth.source} not lifted between the close and the opening at {signals.when(opened)}'
    elif not ok[opened]:
        exec_reason = f'at the opening ({signals.when(opened)}) {relation} does not hold on the table'
    else:
        exec_reason = f'released in place at {signals.when(opened)}'
        return StageOutcome(STAGE_NAME, maximum, True, True, intent_reason, exec_reason, first)
    return StageOutcome(STAGE_NAME, maximum, True, False, intent_reason, exec_reason, first)


@dataclass(frozen=True)
class FinalLayout:
    """Scene 1 ``final_target_ok``: the relation holds on the table over the final window."""

    ok: bool
    reason: str
    window: tuple[float, float] | None


def _final_window_start(ctx: EpisodeContext) -> int | None:
    """First sample of the final window, or ``None`` when the episode is shorter than the window."""
    signals, config = ctx.signals, ctx.config
    frames = config.scene1.final_window_frames
    if signals.frame_windows:
        return signals.n - frames if signals.n >= frames else None
    t = signals.t
    if t[-1] - t[0] < config.scene1.final_min_duration - config.time_tolerance:
        return None
    return int(np.searchsorted(t, t[-1] - config.scene1.final_window + config.time_tolerance, side='right'))


def final_layout(ctx: EpisodeContext) -> FinalLayout:
    """Check the final window: the last ``final_window_frames`` frames, or samples with t > t_end - window."""
    signals, config = ctx.signals, ctx.config.scene1
    window = signals.limit(seconds=config.final_window, frames=config.final_window_frames)
    start = _final_window_start(ctx)
    if start is None:
        return FinalLayout(False, f'episode shorter than the final window ({window})', None)
    span = (signals.seconds(start) or 0.0, signals.seconds(signals.last) or 0.0)
    ok = placed(ctx)[start:]
    if ok.all():
        return FinalLayout(True, f'relation holds on the table over the last {window}', span)
    broken = start + int(np.argmin(ok))
    return FinalLayout(False, f'relation or table contact broken at {signals.when(broken)}', span)
