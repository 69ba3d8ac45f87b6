"""``score_episode``: the one entry point that turns a task and a trajectory into an episode result.

The referee node, offline scoring (``robofollow score``) and in-process evaluation all call it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from robofollow_ros.benchmark.constants import DEFAULT_VARIANT
from robofollow_ros.benchmark.parsing import parse_variant
from robofollow_ros.benchmark.types import GroundTruth, Layout, Task
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.referee.adjustments import Totals, apply_adjustments
from robofollow_ros.referee.completion import completion
from robofollow_ros.referee.config import RefereeConfig, default_config
from robofollow_ros.referee.context import EpisodeContext
from robofollow_ros.referee.events import gripper_events
from robofollow_ros.referee.gating import GatedStage, apply_gates
from robofollow_ros.referee.raw_episode import RawEpisode
from robofollow_ros.referee.result import EpisodeResult
from robofollow_ros.referee.scorers import scorer_for
from robofollow_ros.referee.selection import read_selection, required_selection
from robofollow_ros.referee.signals import build_signals
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.referee.validation import prepare_trajectory

BOOKKEEPING = ('seed', 'round', 'variant', 'window_units')


def is_conditional(task: Task) -> bool:
    """An if/else task (protocol §4.7 item 6)."""
    return task.conditional is not None or '_if_' in task.task_id or task.instruction.strip().lower().startswith('if ')


def _check_truth(truth: GroundTruth, layout: Layout) -> None:
    if layout.scene != truth.scene:
        raise RoboFollowError(
            f'layout {layout.name!r} is a Scene {layout.scene} layout, the task is Scene {truth.scene}'
        )
    for name in (truth.source, truth.target, truth.route_object, truth.then_source):
        if name is not None:
            layout.spec(name)
    if truth.action == 'place_bowl' and layout.spec(truth.target or '').kind != 'bowl':
        raise RoboFollowError(f'place_bowl target {truth.target!r} is not a bowl in layout {layout.name!r}')
    if layout.spec(truth.source).kind != 'object':
        raise RoboFollowError(f'source {truth.source!r} is a {layout.spec(truth.source).kind}, not a graspable object')


def _first_short(stages: tuple[GatedStage, ...], totals: Totals, *, intent: bool, ok: bool, tolerance: float) -> str:
    if ok:
        return 'full'
    for stage in stages:
        full = stage.intent_full(tolerance) if intent else stage.exec_full(tolerance)
        if not full:
            return f'{stage.name}: {stage.intent_reason if intent else stage.exec_reason}'
    penalties = [a for a in totals.adjustments if a.amount < 0 and a.score == ('intent' if intent else 'exec')]
    return f'{penalties[0].name}: {penalties[0].reason}' if penalties else 'not full'


def _bonus(totals: Totals, name: str, score: str) -> float:
    return sum(a.amount for a in totals.adjustments if a.name == name and a.score == score)


def _scene_fields(
    task: Task, raw: RawEpisode, stages: tuple[GatedStage, ...], totals: Totals, config: RefereeConfig
) -> dict[str, Any]:
    fields: dict[str, Any] = dict(raw.fields)
    if raw.final_layout is not None:
        fields['intent_bonus'] = _bonus(totals, 'final_layout_bonus', 'intent')
        fields['exec_bonus'] = _bonus(totals, 'final_layout_bonus', 'exec')
    if raw.retry is not None:
        fields['retry_bonus'] = {
            'final_target_ok': raw.retry.ok,
            'reason': raw.retry.reason,
            'intent_bonus': _bonus(totals, 'retry_bonus', 'intent'),
            'exec_bonus': _bonus(totals, 'retry_bonus', 'exec'),
        }
    if task.scene == 4 and is_conditional(task):
        tolerance = config.score_tolerance
        max_total = sum(stage.max for stage in stages)
        fields['conditional_full_success'] = (
            all(stage.intent_full(tolerance) and stage.exec_full(tolerance) for stage in stages)
            and totals.intent + tolerance >= max_total
            and totals.exec + tolerance >= max_total
        )
    return fields


def score_episode(
    task: Task,
    trajectory: Trajectory,
    *,
    layout: Layout,
    config: RefereeConfig | None = None,
    meta: Mapping[str, Any] | None = None,
    seed: int | None = None,
    round: int | None = None,
    variant: str | None = None,
) -> EpisodeResult:
    """Score one episode of ``task`` (protocol §4).

    Args:
        task: the task; its (resolved) ground truth is what is scored.
        trajectory: the recorded episode; frames with missing signals are dropped and reported as gaps.
        layout: the layout the episode ran in (object kinds and sizes).
        config: scoring constants (default: the packaged ``config/referee.yaml``).
        meta: bookkeeping copied into the record (``seed``, ``round``, ``variant`` and any other keys).
        seed: trial seed (overrides ``meta``).
        round: trial round (overrides ``meta``).
        variant: ``published`` or ``corrected`` (overrides ``meta``; default ``published``): the scoring
            rules applied. ``task`` should come from the registry for the same variant (its truth).

    Returns:
        The episode result; ``result.to_record()`` is its JSON record.

    Raises:
        TrajectoryError: the trajectory is empty, malformed or lacks a signal the scorer needs.
        RoboFollowError: no scorer for the task's action, the task does not fit the layout, or an unknown
            variant.
    """
    config = config or default_config()
    given = dict(meta or {})
    for key, value in (('seed', seed), ('round', round), ('variant', variant)):
        if value is not None:
            given[key] = value
    chosen = parse_variant(given.get('variant') or DEFAULT_VARIANT)
    given['variant'] = chosen
    rules = config.rules(chosen)
    truth = task.resolved_truth
    _check_truth(truth, layout)
    scorer = scorer_for(truth.scene, truth.action)
    prepared = prepare_trajectory(trajectory, layout=layout, config=config, needs=scorer.requirements(truth))
    signals = build_signals(
        prepared,
        layout,
        fingertip_offset=config.scene1.fingertip_offset if scorer.fingertip else None,
        time_tolerance=config.time_tolerance,
        origin=float(trajectory.t[0]),
        nearest_by_name=rules.nearest_by_name,
        frame_windows=rules.frame_windows and prepared.frames_are_rows,
    )
    close_threshold = config.gripper.push_close if scorer.push else config.gripper.close
    events = gripper_events(
        signals.grip, truth.arm, close_threshold=close_threshold, open_threshold=config.gripper.open
    )
    context = EpisodeContext(
        task=task,
        truth=truth,
        layout=layout,
        config=config,
        signals=signals,
        events=events,
        variant=chosen,
        rules=rules,
    )
    raw = scorer.score(context)
    stages = apply_gates(raw.stages, raw.gate)
    totals = apply_adjustments(stages, raw, config)
    max_total = sum(stage.max for stage in stages)
    intent_ok = totals.intent >= config.adjustments.full_rate * max_total
    exec_ok = totals.exec >= config.adjustments.full_rate * max_total
    done = completion(truth, stages, raw, totals, config)
    tolerance = config.score_tolerance
    return EpisodeResult(
        task_id=task.task_id,
        instruction=task.instruction,
        scene=truth.scene,
        layout=layout.name,
        level_tag=task.level_tag,
        arm=truth.arm,
        base_task_type=truth.action,
        intent_score=totals.intent,
        exec_score=totals.exec,
        intent_ok=intent_ok,
        exec_ok=exec_ok,
        completion_ok=done.ok,
        completion_signal=done.signal,
        intent_msg=_first_short(stages, totals, intent=True, ok=intent_ok, tolerance=tolerance),
        exec_msg=_first_short(stages, totals, intent=False, ok=exec_ok, tolerance=tolerance),
        stages=stages,
        adjustments=totals.adjustments,
        metric_version=config.metric_version,
        variant=chosen,
        window_units=signals.window_units,
        seed=given.get('seed'),
        round=given.get('round'),
        scene_fields=_scene_fields(task, raw, stages, totals, config),
        events={
            'close_threshold': close_threshold,
            'close': signals.seconds(events.close_expected),
            'close_other': signals.seconds(events.close_other),
            'open': signals.seconds(events.open_after_close),
            'first_close_arm': events.first_close_arm,
        },
        gaps=tuple((round_time(a - signals.origin), round_time(b - signals.origin)) for a, b in prepared.gaps),
        dropped_frames=prepared.dropped_frames,
        frames=signals.n,
        duration=round_time(float(signals.t[-1] - signals.t[0])),
        extra={key: value for key, value in given.items() if key not in BOOKKEEPING},
        selection=read_selection(task, signals, layout=layout, config=config),
        required=required_selection(task),
    )


def round_time(seconds: float) -> float:
    """Seconds rounded to microseconds for records."""
    return float(f'{seconds:.6f}')
