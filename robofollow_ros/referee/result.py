"""The result record of one scored episode (protocol §4.10, with stage reasons and adjustments)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from robofollow_ros.referee.adjustments import Adjustment
from robofollow_ros.referee.gating import GatedStage
from robofollow_ros.referee.selection import Selection


@dataclass(frozen=True)
class EpisodeResult:
    """Scores of one episode.

    Attributes:
        task_id, instruction, scene, layout, level_tag, arm: the task.
        variant: the scoring variant applied (``published`` or ``corrected``).
        window_units: ``frames`` or ``seconds``: what the frame windows counted in this episode.
        seed, round: bookkeeping passed in by the caller (``None`` when unknown).
        base_task_type: the ground-truth action (``pickup``, ``place_relative``...).
        intent_score, exec_score: adjusted totals IS and ES (0-1).
        intent_ok, exec_ok: totals at least 0.99 of the maximum ("full rate").
        completion_ok, completion_signal: Completion and the signal that decided it.
        intent_msg, exec_msg: ``full`` or the reason of the first stage that is not full.
        stages: stage scores after gating, before bonuses and penalties.
        adjustments: bonuses and penalties in the order applied.
        scene_fields: scene-specific fields (final_target_ok, retry_bonus, wrong_arm_intervened...).
        events: gripper event times (seconds since the first recorded frame).
        gaps: signal dropouts as (start, end) seconds since the first recorded frame.
        dropped_frames, frames, duration: how much of the recording was scored.
        metric_version: the referee's metric identifier.
        extra: any other meta keys given by the caller, copied into the record.
        selection: what the policy went for (arm, object, action, target...; ``referee.selection``).
        required: what the instruction asks for, in the same terms.
    """

    task_id: str
    instruction: str
    scene: int
    layout: str
    level_tag: str
    arm: str
    base_task_type: str
    intent_score: float
    exec_score: float
    intent_ok: bool
    exec_ok: bool
    completion_ok: bool
    completion_signal: str
    intent_msg: str
    exec_msg: str
    stages: tuple[GatedStage, ...]
    adjustments: tuple[Adjustment, ...]
    metric_version: str
    variant: str | None = None
    window_units: str = 'seconds'
    seed: int | None = None
    round: int | None = None
    scene_fields: Mapping[str, Any] = field(default_factory=dict)
    events: Mapping[str, Any] = field(default_factory=dict)
    gaps: tuple[tuple[float, float], ...] = ()
    dropped_frames: int = 0
    frames: int = 0
    duration: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)
    selection: Selection | None = None
    required: Selection | None = None

    def to_record(self) -> dict[str, Any]:
        """The JSON-able result record (one line of a results file)."""
        record: dict[str, Any] = dict(self.extra)
        record.update(
            {
                'task_id': self.task_id,
                'instruction': self.instruction,
                'scene': self.scene,
                'layout': self.layout,
                'level_tag': self.level_tag,
                'variant': self.variant,
                'window_units': self.window_units,
                'seed': self.seed,
                'round': self.round,
                'arm': self.arm,
                'base_task_type': self.base_task_type,
                'intent_score': self.intent_score,
                'exec_score': self.exec_score,
                'intent_ok': self.intent_ok,
                'exec_ok': self.exec_ok,
                'completion_ok': self.completion_ok,
                'completion_signal': self.completion_signal,
                'intent_msg': self.intent_msg,
                'exec_msg': self.exec_msg,
                'stages': [
                    {
                        'name': s.name,
                        'intent': s.intent,
                        'exec': s.exec,
                        'max': s.max,
                        'intent_reason': s.intent_reason,
                        'exec_reason': s.exec_reason,
                    }
                    for s in self.stages
                ],
                'adjustments': [
                    {'name': a.name, 'score': a.score, 'amount': a.amount, 'reason': a.reason} for a in self.adjustments
                ],
                'events': dict(self.events),
                'gaps': [[a, b] for a, b in self.gaps],
                'dropped_frames': self.dropped_frames,
                'frames': self.frames,
                'duration': self.duration,
                'metric_version': self.metric_version,
                'selection': None if self.selection is None else self.selection.to_dict(),
                'required_selection': None if self.required is None else self.required.to_dict(),
            }
        )
        record.update(self.scene_fields)
        return record
