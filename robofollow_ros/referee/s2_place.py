"""Scene 2 stack and place-in-bowl stages and their retry-bonus layout checks (protocol §4.5, §4.7)."""

from __future__ import annotations

import numpy as np

from robofollow_ros.referee.context import EpisodeContext
from robofollow_ros.referee.stage import StageOutcome, failed

STACK_NAME = 'stage2_stack'
BOWL_NAME = 'stage2_place_bowl'


def _target(ctx: EpisodeContext) -> str:
    assert ctx.truth.target is not None
    return ctx.truth.target


def _stacked(ctx: EpisodeContext, index: int) -> bool:
    signals, source, target, config = ctx.signals, ctx.source, _target(ctx), ctx.config.scene2
    xy = float(np.linalg.norm(signals.pos[source][index, :2] - signals.pos[target][index, :2]))
    height = float(signals.z(source)[index] - signals.z(target)[index])
    return xy <= config.stack_place_radius and height > config.stack_min_height


def stack_stage(ctx: EpisodeContext, *, maximum: float) -> StageOutcome:
    """Stage 2 of a Scene 2 stack.

    Intent: after the close and a latched lift, some sample has the source above the target and the EE
    near the source. Execution: Intent, an opening, the source stacked on the target at the opening and
    at the final sample, and no drop to the target's height after the opening.
    """
    signals, source, target, config = ctx.signals, ctx.source, _target(ctx), ctx.config.scene2
    close = ctx.events.close_expected
    if close is None:
        return failed(STACK_NAME, maximum, 'no close of the designated arm')
    after = np.arange(close + 1, signals.n)
    latched = np.logical_or.accumulate(signals.rise(source)[after] >= config.stack_lift)
    above = signals.z(source)[after] > signals.z(target)[after] + config.stack_min_height
    near = np.linalg.norm(signals.ee[ctx.arm][after, :2] - signals.pos[source][after, :2], axis=1)
    hits = after[latched & above & (near <= config.stack_ee_radius)]
    if not hits.size:
        return failed(STACK_NAME, maximum, f'{source} is never carried above {target} after a lift')
    first = int(hits[0])
    intent_reason = f'{source} carried above {target} at {signals.when(first)}'
    opened = ctx.events.open_after_close
    if opened is None:
        exec_reason = f'the {ctx.arm} gripper never opens after the close'
    elif not _stacked(ctx, opened):
        exec_reason = f'{source} not on {target} at the opening ({signals.when(opened)})'
    elif not _stacked(ctx, signals.last):
        exec_reason = f'{source} not on {target} at the end'
    else:
        dropped = np.flatnonzero(signals.z(source)[opened:] <= signals.z(target)[opened:] + config.stack_drop_height)
        if dropped.size:
            exec_reason = f'{source} dropped to {target} height at {signals.when(opened + int(dropped[0]))}'
        else:
            exec_reason = f'released on {target} at {signals.when(opened)} and still there at the end'
            return StageOutcome(STACK_NAME, maximum, True, True, intent_reason, exec_reason, first)
    return StageOutcome(STACK_NAME, maximum, True, False, intent_reason, exec_reason, first)


def stack_final_target(ctx: EpisodeContext) -> tuple[bool, str]:
    """Retry ``final_target_ok`` of a stack: stacked at the final sample."""
    ok = _stacked(ctx, ctx.signals.last)
    return ok, f'{ctx.source} {"is" if ok else "is not"} on {_target(ctx)} at the end'


def _bowl_xy(ctx: EpisodeContext) -> np.ndarray:
    return ctx.signals.xy_distance(ctx.source, _target(ctx))


def _in_bowl(ctx: EpisodeContext) -> np.ndarray:
    signals, config, bowl = ctx.signals, ctx.config.scene2, _target(ctx)
    low = signals.z(ctx.source) <= signals.z(bowl) + config.bowl_height
    return (_bowl_xy(ctx) <= config.bowl_radius) & low


def _where(ctx: EpisodeContext, index: int) -> str:
    signals, bowl = ctx.signals, _target(ctx)
    height = float(signals.z(ctx.source)[index] - signals.z(bowl)[index])
    return f'{float(_bowl_xy(ctx)[index]):.3f} m from its centre, {height:.3f} m above its origin'


def _nearest_bowl_is_target(ctx: EpisodeContext) -> np.ndarray:
    signals = ctx.signals
    source_xy = signals.pos[ctx.source][:, :2]
    distances = np.stack([np.linalg.norm(signals.pos[b][:, :2] - source_xy, axis=1) for b in signals.bowls], axis=1)
    return np.asarray(signals.bowls)[np.argmin(distances, axis=1)] == _target(ctx)


def bowl_stage(ctx: EpisodeContext, *, maximum: float) -> StageOutcome:
    """Stage 2 of a place-in-bowl.

    Intent: some sample after the close has the source low (below ``bowl_max_lift`` over its start), in
    the target bowl, with the target the nearest bowl. Execution: Intent, an opening, and the source in
    the bowl at the opening and at the final sample: within the bowl radius (xy) and, in the published
    variant, also below the height cap.
    """
    signals, source, bowl, config = ctx.signals, ctx.source, _target(ctx), ctx.config.scene2
    close = ctx.events.close_expected
    if close is None:
        return failed(BOWL_NAME, maximum, 'no close of the designated arm')
    after = np.arange(close + 1, signals.n)
    good = (signals.rise(source) < config.bowl_max_lift) & _in_bowl(ctx) & _nearest_bowl_is_target(ctx)
    hits = after[good[after]]
    if not hits.size:
        return failed(BOWL_NAME, maximum, f'{source} never goes into {bowl} after the close')
    first = int(hits[0])
    intent_reason = f'{source} in {bowl} at {signals.when(first)}'
    opened = ctx.events.open_after_close
    xy = _bowl_xy(ctx)
    inside = _in_bowl(ctx) if ctx.rules.bowl_exec_height_cap else xy <= config.bowl_radius
    if opened is None:
        exec_reason = f'the {ctx.arm} gripper never opens after the close'
    elif not inside[opened]:
        exec_reason = f'{source} not in {bowl} at the opening ({signals.when(opened)}): {_where(ctx, opened)}'
    elif not inside[-1]:
        exec_reason = f'{source} not in {bowl} at the end: {_where(ctx, signals.last)}'
    else:
        exec_reason = f'released in {bowl} at {signals.when(opened)} and still there at the end'
        return StageOutcome(BOWL_NAME, maximum, True, True, intent_reason, exec_reason, first)
    return StageOutcome(BOWL_NAME, maximum, True, False, intent_reason, exec_reason, first)


def bowl_final_target(ctx: EpisodeContext) -> tuple[bool, str]:
    """Retry ``final_target_ok`` of a bowl placement: in the target bowl, which is the nearest bowl, at the end."""
    ok = bool(_in_bowl(ctx)[-1] and _nearest_bowl_is_target(ctx)[-1])
    return ok, f'{ctx.source} {"is" if ok else "is not"} in {_target(ctx)} at the end'
