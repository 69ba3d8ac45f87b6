"""Completion (protocol §4.8): one boolean per episode, by signal priority.

1. Pickup-like actions: adjusted IS and ES both at least ``pickup_total``.
2. Otherwise an explicit final-layout boolean when the scene has one: Scene 1 relation ``final_target_ok``,
   then Scene 2 retry ``final_target_ok``. An explicit false is a failure.
3. Otherwise the post-gating Execution of the first existing stage among orientation, stack, unstack,
   bowl, push.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from robofollow_ros.benchmark.types import GroundTruth
from robofollow_ros.referee.adjustments import Totals
from robofollow_ros.referee.config import RefereeConfig
from robofollow_ros.referee.gating import GatedStage
from robofollow_ros.referee.raw_episode import RawEpisode

EXEC_FALLBACK = ('stage3_orientation', 'stage2_stack', 'stage2_unstack_slot', 'stage2_place_bowl', 'stage2_push')


@dataclass(frozen=True)
class Completion:
    """Whether the episode completed the task, and which signal decided it."""

    ok: bool
    signal: str


def completion(
    truth: GroundTruth, stages: Sequence[GatedStage], raw: RawEpisode, totals: Totals, config: RefereeConfig
) -> Completion:
    """Decide ``completion_ok`` by the priority above."""
    if truth.is_pickup_like:
        needed = config.completion.pickup_total - config.score_tolerance
        return Completion(totals.intent >= needed and totals.exec >= needed, 'totals')
    if raw.final_layout is not None:
        return Completion(raw.final_layout.ok, 'final_target_ok')
    if raw.retry is not None:
        return Completion(raw.retry.ok, 'retry_final_target_ok')
    by_name = {stage.name: stage for stage in stages}
    for name in EXEC_FALLBACK:
        if name in by_name:
            return Completion(by_name[name].exec > 0, f'{name}.exec')
    return Completion(False, 'none')
