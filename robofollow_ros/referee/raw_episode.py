"""What a scorer returns: raw stage results plus the inputs of the adjustments and completion rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from robofollow_ros.referee.gating import GateRule
from robofollow_ros.referee.s1_relation import FinalLayout
from robofollow_ros.referee.stage import StageOutcome


@dataclass(frozen=True)
class RetryCheck:
    """Scene 2 retry-bonus ``final_target_ok`` and why."""

    ok: bool
    reason: str


@dataclass(frozen=True)
class RawEpisode:
    """A scorer's verdict before gating.

    Attributes:
        stages: raw stage results in stage order.
        gate: the gating rule of this stage structure.
        final_layout: Scene 1 relation tasks: the final-layout check (bonus and completion signal).
        retry: Scene 2: the retry-bonus layout check (bonus and completion signal).
        wrong_arm: Scenes 1-3: the wrong-arm flag (penalty); ``None`` where no penalty applies (Scene 4).
        support_lift: Scene 4 pickups: why the support-lift penalty applies, else ``None``.
        fields: further scene-specific record fields.
    """

    stages: tuple[StageOutcome, ...]
    gate: GateRule
    final_layout: FinalLayout | None = None
    retry: RetryCheck | None = None
    wrong_arm: bool | None = None
    support_lift: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
