"""Scene 4 stack-on-target and unstack-to-slot stages (protocol §4.5)."""

from __future__ import annotations

import numpy as np

from robofollow_ros.benchmark.scene4 import SLOTS
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.referee.context import EpisodeContext
from robofollow_ros.referee.stage import StageOutcome, failed

STACK_NAME = 'stage2_stack'
UNSTACK_NAME = 'stage2_unstack_slot'


def _placement_stage(
    ctx: EpisodeContext,
    *,
    name: str,
    goal: str,
    xy_error: np.ndarray,
    z_error: np.ndarray,
    intent_limits: tuple[float, float],
    exec_limits: tuple[float, float],
    maximum: float,
) -> StageOutcome:
    signals = ctx.signals
    close = ctx.events.close_expected
    if close is None:
        return failed(name, maximum, 'no close of the designated arm')
    after = np.arange(close + 1, signals.n)
    near = (xy_error[after] <= intent_limits[0]) & (z_error[after] <= intent_limits[1])
    hits = after[near]
    if not hits.size:
        return failed(name, maximum, f'{ctx.source} never comes near {goal} after the close')
    first = int(hits[0])
    intent_reason = f'{ctx.source} near {goal} at {signals.when(first)}'

    def placed(index: int) -> bool:
        return bool(xy_error[index] <= exec_limits[0] and z_error[index] <= exec_limits[1])

    opened = ctx.events.open_after_close
    if opened is None:
        exec_reason = f'the {ctx.arm} gripper never opens after the close'
    elif not placed(opened):
        exec_reason = (
            f'at the opening ({signals.when(opened)}) {ctx.source} is {xy_error[opened]:.3f} m / '
            f'{z_error[opened]:.3f} m off {goal}'
        )
    elif not placed(signals.last):
        exec_reason = f'at the end {ctx.source} is {xy_error[-1]:.3f} m / {z_error[-1]:.3f} m off {goal}'
    else:
        exec_reason = f'released on {goal} at {signals.when(opened)} and still there at the end'
        return StageOutcome(name, maximum, True, True, intent_reason, exec_reason, first)
    return StageOutcome(name, maximum, True, False, intent_reason, exec_reason, first)


def stack_on_target_stage(ctx: EpisodeContext, *, maximum: float) -> StageOutcome:
    """Stage 2 of a Scene 4 stack: the source centre at target z + both half-heights + gap, over the target."""
    signals, layout, config, source = ctx.signals, ctx.layout, ctx.config.scene4, ctx.source
    target = ctx.truth.target
    assert target is not None
    expected = signals.z(target) + layout.spec(source).half_height + layout.spec(target).half_height + config.stack_gap
    return _placement_stage(
        ctx,
        name=STACK_NAME,
        goal=target,
        xy_error=signals.xy_distance(source, target),
        z_error=np.abs(signals.z(source) - expected),
        intent_limits=(config.stack_intent_xy, config.stack_intent_z),
        exec_limits=(config.stack_exec_xy, config.stack_exec_z),
        maximum=maximum,
    )


def unstack_stage(ctx: EpisodeContext, *, maximum: float) -> StageOutcome:
    """Stage 2 of an unstack: the source standing on the table at the nominal (unperturbed) slot centre."""
    signals, config, source, slot = ctx.signals, ctx.config, ctx.source, ctx.truth.slot
    if slot not in SLOTS:
        raise RoboFollowError(f'unstack_to_slot needs a slot number 1-6, got {slot!r}')
    expected = config.table_z + ctx.layout.spec(source).half_height + config.scene4.unstack_clearance
    s4 = config.scene4
    return _placement_stage(
        ctx,
        name=UNSTACK_NAME,
        goal=f'slot {slot}',
        xy_error=np.linalg.norm(signals.pos[source][:, :2] - np.asarray(SLOTS[slot]), axis=1),
        z_error=np.abs(signals.z(source) - expected),
        intent_limits=(s4.unstack_intent_xy, s4.unstack_intent_z),
        exec_limits=(s4.unstack_exec_xy, s4.unstack_exec_z),
        maximum=maximum,
    )
