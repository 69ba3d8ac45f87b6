"""Scene 3: the route over the middle column and the orientation on the label (protocol §4.5, §4.6)."""

from __future__ import annotations

import math

import numpy as np

from robofollow_ros.benchmark import scene3
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.referee.context import EpisodeContext
from robofollow_ros.referee.stage import StageOutcome, failed

ROUTE_NAME = 'stage2_route'
ORIENTATION_NAME = 'stage3_orientation'


def route_references(ctx: EpisodeContext) -> tuple[str, str]:
    """The (correct, wrong) slabs to pass over and to avoid: the route object and its partner in the truth."""
    if ctx.truth.route not in ('via', 'around'):
        raise RoboFollowError(f'Scene 3 route must be "via" or "around", got {ctx.truth.route!r}')
    return scene3.route_references(ctx.truth)


def route_stage(ctx: EpisodeContext, *, maximum: float) -> StageOutcome:
    """Stage 2 of Scene 3 (Intent and Execution together).

    After the source has been lifted (latched), some sample must have the source within ``route_x_band``
    in x and ``route_y_correct`` in y of the correct object, more than ``route_y_wrong`` in y from the
    wrong one, and nearer in y to the correct than to the wrong object. The published variant scans only
    the samples after the designated arm's close, the corrected one every sample.
    """
    signals, source, config = ctx.signals, ctx.source, ctx.config.scene3
    correct, wrong = route_references(ctx)
    start = 0
    if ctx.rules.route_after_close:
        if ctx.events.close_expected is None:
            return failed(ROUTE_NAME, maximum, f'the {ctx.arm} gripper never closes')
        start = ctx.events.close_expected + 1
    here = signals.pos[source][start:]
    good, bad = signals.pos[correct][start:], signals.pos[wrong][start:]
    latched = np.logical_or.accumulate(signals.rise(source)[start:] >= config.route_lift)
    dy_good = np.abs(here[:, 1] - good[:, 1])
    dy_bad = np.abs(here[:, 1] - bad[:, 1])
    over = (
        latched
        & (np.abs(here[:, 0] - good[:, 0]) < config.route_x_band)
        & (dy_good < config.route_y_correct)
        & (dy_bad > config.route_y_wrong)
        & (dy_good < dy_bad)
    )
    hits = np.flatnonzero(over)
    if not hits.size:
        scope = ' after the close' if start else ''
        reason = f'{source} never crosses over {correct} (avoiding {wrong}) after a lift{scope}'
        return failed(ROUTE_NAME, maximum, reason)
    first = start + int(hits[0])
    reason = f'{source} crosses over {correct} at {signals.when(first)}'
    return StageOutcome(ROUTE_NAME, maximum, True, True, reason, reason, first)


def yaw_of(quat: np.ndarray) -> float:
    """Yaw (rad) of a unit quaternion (w, x, y, z)."""
    w, x, y, z = (float(v) for v in quat)
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def yaw_error(yaw: float, target: float) -> float:
    """Smallest |yaw - target| modulo π (a slab is symmetric under a half turn), in radians."""

    def wrapped(angle: float) -> float:
        return abs(math.atan2(math.sin(angle), math.cos(angle)))

    return min(wrapped(yaw - target), wrapped(yaw - target - math.pi), wrapped(yaw - target + math.pi))


def orientation_stage(ctx: EpisodeContext, *, maximum: float) -> StageOutcome:
    """Stage 3 of Scene 3, at the final sample only.

    The source must lie on the label (xy distance below the label edge) with its yaw within the Intent
    (40°) or Execution (20°) tolerance of the place mode's yaw, modulo π.
    """
    signals, source, config, truth = ctx.signals, ctx.source, ctx.config.scene3, ctx.truth
    if truth.place_mode not in config.place_mode_yaw_deg:
        raise RoboFollowError(f'unknown Scene 3 place mode {truth.place_mode!r}')
    assert truth.target is not None
    target_yaw = math.radians(config.place_mode_yaw_deg[truth.place_mode])
    error = math.degrees(yaw_error(yaw_of(signals.quat[source][-1]), target_yaw))
    distance = float(signals.xy_distance(source, truth.target)[-1])
    on_label = distance < config.label_edge
    where = f'{source} {distance:.3f} m from {truth.target}'
    if not on_label:
        reason = f'{where} at the end (needs < {config.label_edge} m)'
        return failed(ORIENTATION_NAME, maximum, reason)
    angle = f'{where}, yaw error {error:.1f}° for {truth.place_mode}'
    intent = error <= config.orientation_intent_deg
    execution = error <= config.orientation_exec_deg
    return StageOutcome(
        ORIENTATION_NAME,
        maximum,
        intent,
        execution,
        angle + ('' if intent else f' (needs ≤ {config.orientation_intent_deg}°)'),
        angle + ('' if execution else f' (needs ≤ {config.orientation_exec_deg}°)'),
        signals.last,
    )
