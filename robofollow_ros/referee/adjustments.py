"""Totals and their adjustments (protocol §4.7), in the published order.

1. IS, ES = sums of gated stage scores.
2. Scene 4 pickups: support-lift penalty on stage-1 Execution (floor 0).
3. Scene 1 relation tasks: final-layout bonus (+0.3 to a total below 0.5).
4. Scene 2: retry bonus (+0.3 to a total below 0.5, capped at 1).
5. Scenes 1-3: wrong-arm penalty (-0.2 from a total whose last stage is full, floor 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from robofollow_ros.referee.config import RefereeConfig
from robofollow_ros.referee.gating import GatedStage
from robofollow_ros.referee.raw_episode import RawEpisode

Score = Literal['intent', 'exec']
DIGITS = 9


@dataclass(frozen=True)
class Adjustment:
    """A bonus (positive amount) or penalty (negative amount) applied to one total."""

    name: str
    score: Score
    amount: float
    reason: str


@dataclass(frozen=True)
class Totals:
    """Adjusted Intent and Execution totals and the adjustments that produced them."""

    intent: float
    exec: float
    adjustments: tuple[Adjustment, ...]


def _bonus(
    totals: dict[Score, float], name: str, reason: str, config: RefereeConfig, *, cap: float | None
) -> list[Adjustment]:
    applied = []
    for score in ('intent', 'exec'):
        before = totals[score]
        if before < config.adjustments.bonus_below:
            after = before + config.adjustments.bonus
            if cap is not None:
                after = min(cap, after)
            totals[score] = round(after, DIGITS)
            applied.append(Adjustment(name, score, round(totals[score] - before, DIGITS), reason))
    return applied


def apply_adjustments(stages: Sequence[GatedStage], raw: RawEpisode, config: RefereeConfig) -> Totals:
    """Sum the gated stages and apply the bonuses and penalties that ``raw`` calls for."""
    totals: dict[Score, float] = {
        'intent': round(sum(s.intent for s in stages), DIGITS),
        'exec': round(sum(s.exec for s in stages), DIGITS),
    }
    max_total = round(sum(s.max for s in stages), DIGITS)
    adjustments: list[Adjustment] = []
    if raw.support_lift is not None:
        amount = min(config.scene4.support_lift_penalty, stages[0].exec)
        if amount > 0:
            totals['exec'] = round(max(0.0, totals['exec'] - amount), DIGITS)
            adjustments.append(Adjustment('support_lift_penalty', 'exec', -amount, raw.support_lift))
    if raw.final_layout is not None and raw.final_layout.ok:
        adjustments += _bonus(totals, 'final_layout_bonus', raw.final_layout.reason, config, cap=None)
    if raw.retry is not None and raw.retry.ok:
        adjustments += _bonus(totals, 'retry_bonus', raw.retry.reason, config, cap=max_total)
    if raw.wrong_arm:
        last = stages[-1]
        tolerance = config.score_tolerance
        checks: tuple[tuple[Score, bool], ...] = (
            ('intent', last.intent_full(tolerance)),
            ('exec', last.exec_full(tolerance)),
        )
        for score, full in checks:
            if full:
                before = totals[score]
                totals[score] = round(max(0.0, before - config.adjustments.wrong_arm_penalty), DIGITS)
                reason = f'the other arm took part and {last.name} is full'
                adjustments.append(
                    Adjustment('wrong_arm_penalty', score, round(totals[score] - before, DIGITS), reason)
                )
    return Totals(totals['intent'], totals['exec'], tuple(adjustments))
