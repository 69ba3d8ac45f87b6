"""Scene 2 push: push setup replaces grasp selection, then the push itself (protocol §4.5).

Both use the push close threshold: the gripper is closed fully to act as a pusher.
"""

from __future__ import annotations

import numpy as np

from robofollow_ros.referee.context import EpisodeContext
from robofollow_ros.referee.stage import StageOutcome, failed

SETUP_NAME = 'stage1_push_setup'
PUSH_NAME = 'stage2_push'


def push_direction(ctx: EpisodeContext) -> np.ndarray:
    """Unit xy vector from the source's to the target's sample-0 position."""
    assert ctx.truth.target is not None
    delta = ctx.signals.pos[ctx.truth.target][0, :2] - ctx.signals.pos[ctx.source][0, :2]
    return delta / np.linalg.norm(delta)


def push_setup_stage(ctx: EpisodeContext, *, maximum: float) -> StageOutcome:
    """Stage 1 of a push.

    Samples after the close where the source is on the table (lifted at most ``push_setup_max_lift``) and
    has moved at least ``push_setup_min_motion`` from where it was at the close are pushing samples.
    Intent: on some pushing sample the source is the object nearest the EE and closer than the intent
    radius. Execution: the EE height at the first pushing sample matches a contact at the source
    (|ee_z - offset - source z0| within tolerance) and on some pushing sample the source is nearest and
    within the execution radius; the corrected variant also requires Intent (the published scorer does not).
    """
    signals, source, config = ctx.signals, ctx.source, ctx.config.scene2
    close = ctx.events.close_expected
    if close is None:
        return failed(SETUP_NAME, maximum, f'the {ctx.arm} gripper never closes fully (push threshold)')
    after = np.arange(close + 1, signals.n)
    xy = signals.pos[source][:, :2]
    moved = np.linalg.norm(xy[after] - xy[close], axis=1) >= config.push_setup_min_motion
    low = signals.rise(source)[after] <= config.push_setup_max_lift
    frames = after[moved & low]
    if not frames.size:
        return failed(SETUP_NAME, maximum, f'{source} never moves on the table after the close')
    ee = signals.ee[ctx.arm]
    nearest, _ = signals.nearest_indices(ee[frames, :2], frames)
    is_source = nearest == signals.candidates.index(source)
    distance = np.linalg.norm(ee[frames, :2] - xy[frames], axis=1)
    touching = is_source & (distance < config.push_setup_intent_radius)
    first = int(frames[0])
    contact = abs(ee[first, 2] - config.push_tcp_contact_offset - signals.z(source)[0])
    if touching.any():
        frame = int(frames[np.argmax(touching)])
        intent, intent_reason = True, f'EE pushes {source} from {signals.when(frame)}'
    else:
        frame, intent = first, False
        radius = config.push_setup_intent_radius
        intent_reason = f'while {source} moves, the EE is never nearest to it within {radius} m'
    if not intent and ctx.rules.push_setup_needs_intent:
        return failed(SETUP_NAME, maximum, intent_reason)
    if contact > config.push_contact_height_tolerance:
        exec_reason = f'EE contact height off by {contact:.3f} m at {signals.when(first)}'
        return StageOutcome(SETUP_NAME, maximum, intent, False, intent_reason, exec_reason, frame)
    if not (is_source & (distance < config.push_setup_exec_radius)).any():
        exec_reason = f'EE never nearest to {source} within {config.push_setup_exec_radius} m'
        return StageOutcome(SETUP_NAME, maximum, intent, False, intent_reason, exec_reason, frame)
    exec_reason = f'contact height off by {contact:.3f} m, within {config.push_contact_height_tolerance} m'
    return StageOutcome(SETUP_NAME, maximum, intent, True, intent_reason, exec_reason, frame)


def push_stage(ctx: EpisodeContext, *, maximum: float) -> StageOutcome:
    """Stage 2 of a push: the best displacement of the source towards the target since the close.

    Only samples whose displacement since the close points within 45° of the target direction and where
    the EE is behind the source (pushing, not pulling) count. Intent: best projection >= ``push_intent``;
    Execution: >= ``push_exec``. The stage's frame is the best-push sample.
    """
    signals, source, config = ctx.signals, ctx.source, ctx.config.scene2
    close = ctx.events.close_expected
    if close is None:
        return failed(PUSH_NAME, maximum, 'no close of the designated arm')
    towards = push_direction(ctx)
    after = np.arange(close + 1, signals.n)
    xy = signals.pos[source][:, :2]
    moved = xy[after] - xy[close]
    length = np.linalg.norm(moved, axis=1)
    along = moved @ towards
    with np.errstate(invalid='ignore', divide='ignore'):
        aligned = (length > 0) & (along / length >= config.push_min_cos)
    behind = (signals.ee[ctx.arm][after, :2] - xy[after]) @ towards <= 0
    kept = aligned & behind
    if not kept.any():
        return failed(PUSH_NAME, maximum, f'{source} never moves towards {ctx.truth.target} with the EE behind it')
    best_index = int(np.argmax(np.where(kept, along, -np.inf)))
    best, frame = float(along[best_index]), int(after[best_index])
    reason = f'best push {best:.3f} m towards {ctx.truth.target} at {signals.when(frame)}'
    intent = best >= config.push_intent
    execution = best >= config.push_exec
    return StageOutcome(
        PUSH_NAME,
        maximum,
        intent,
        execution,
        reason + ('' if intent else f' (needs {config.push_intent} m)'),
        reason + ('' if execution else f' (needs {config.push_exec} m)'),
        frame,
    )


def push_final_target(ctx: EpisodeContext) -> tuple[bool, str]:
    """Retry ``final_target_ok`` of a push: the source's best projected displacement from sample 0."""
    xy = ctx.signals.pos[ctx.source][:, :2]
    best = float(((xy - xy[0]) @ push_direction(ctx)).max())
    needed = ctx.config.scene2.retry_push
    ok = best >= needed
    return ok, f'{ctx.source} moved {best:.3f} m towards {ctx.truth.target} (needs {needed} m)'
