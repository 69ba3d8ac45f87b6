"""Stage 1, source selection (protocol §4.4), and Scene 4 support detection."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robofollow_ros.referee.config import SourceConfig
from robofollow_ros.referee.context import EpisodeContext
from robofollow_ros.referee.signals import EpisodeSignals
from robofollow_ros.referee.stage import StageOutcome, failed

STAGE_NAME = 'stage1_source_select'


def find_support(signals: EpisodeSignals, source: str, index: int, config: SourceConfig) -> str | None:
    """The object ``source`` rests on at sample ``index``, if any.

    A support is another graspable object within ``support_radius`` in xy whose centre is at least
    ``support_drop`` lower; of several, the one with the smallest height gap.
    """
    here = signals.pos[source][index]
    best: tuple[float, str] | None = None
    for name in signals.candidates:
        if name == source:
            continue
        other = signals.pos[name][index]
        gap = here[2] - other[2]
        beneath = np.linalg.norm(here[:2] - other[:2]) <= config.support_radius and gap >= config.support_drop
        if beneath and (best is None or gap < best[0]):
            best = (gap, name)
    return None if best is None else best[1]


@dataclass(frozen=True)
class SourceSelection:
    """Stage 1 and, in Scene 4, the support found under the source at the first close."""

    stage: StageOutcome
    support: str | None = None


def source_stage(
    ctx: EpisodeContext,
    *,
    maximum: float,
    lift: float,
    lift_from_close: bool = False,
    support_aware: bool = False,
) -> SourceSelection:
    """Score stage 1 at t* = the designated arm's first close.

    Intent: the graspable object nearest (xy) to the EE at t* is the source and closer than the radius;
    with ``support_aware`` (Scene 4) a support under the source is not a candidate. Execution: Intent and
    the source rose by ``lift`` above its sample-0 height at some sample (from t* on with
    ``lift_from_close``).
    """
    signals, source = ctx.signals, ctx.source
    close = ctx.events.close_expected
    if close is None:
        return SourceSelection(failed(STAGE_NAME, maximum, f'the {ctx.arm} gripper never closes'))
    support = find_support(signals, source, close, ctx.config.source) if support_aware else None
    exclude = (support,) if support else ()
    nearest, distance = signals.nearest(signals.ee[ctx.arm][close, :2], close, exclude=exclude)
    radius = ctx.config.source.radius
    at = f'at the {ctx.arm} close ({signals.when(close)})'
    if nearest != source:
        reason = f'{at} the nearest object is {nearest} ({distance:.3f} m), not {source}'
        return SourceSelection(failed(STAGE_NAME, maximum, reason), support)
    if distance >= radius:
        reason = f'{at} {source} is nearest but {distance:.3f} m away (needs < {radius} m)'
        return SourceSelection(failed(STAGE_NAME, maximum, reason), support)
    intent_reason = f'{at} {source} is nearest, {distance:.3f} m' + (
        f' (support {support} excluded)' if support else ''
    )
    rise = signals.rise(source)[close if lift_from_close else 0 :]
    best = float(rise.max())
    lifted = best >= lift
    scope = 'from the close' if lift_from_close else 'in the episode'
    exec_reason = f'{source} rose {best:.3f} m {scope} (needs {lift} m)'
    return SourceSelection(StageOutcome(STAGE_NAME, maximum, True, lifted, intent_reason, exec_reason, close), support)
