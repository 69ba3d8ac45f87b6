"""Scene 4 sequences: arm A picks source A, then arm B picks source B (protocol §4.7, sequence evaluator)."""

from __future__ import annotations

import numpy as np

from robofollow_ros.benchmark.types import Arm
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.referee.context import EpisodeContext
from robofollow_ros.referee.events import close_starts
from robofollow_ros.referee.finish import finish_stage, first_of
from robofollow_ros.referee.source import find_support
from robofollow_ros.referee.stage import StageOutcome, failed

A_NAME = 'stage1_action_a'
B_NAME = 'stage2_action_b'
FINISH_NAME = 'stage3_finish'


def matching_start(ctx: EpisodeContext, arm: Arm, source: str, *, start_from: int = 0) -> int | None:
    """First close of ``arm`` at or after ``start_from`` where ``source`` is the object nearest its EE.

    Closes include sample 0 when the gripper starts closed; a support under the source is not a
    candidate; the source must be within ``sequence_radius`` (inclusive in the published variant).
    """
    signals, config = ctx.signals, ctx.config
    for close in close_starts(signals.grip[arm], config.gripper.close):
        index = int(close)
        if index < start_from:
            continue
        support = find_support(signals, source, index, config.source)
        nearest, distance = signals.nearest(signals.ee[arm][index, :2], index, exclude=(support,) if support else ())
        radius = config.scene4.sequence_radius
        close_enough = distance <= radius if ctx.rules.sequence_match_inclusive else distance < radius
        if nearest == source and close_enough:
            return index
    return None


def _lift_after(ctx: EpisodeContext, source: str, start: int) -> int | None:
    hits = np.flatnonzero(ctx.signals.rise(source)[start:] >= ctx.config.scene4.sequence_lift)
    return start + int(hits[0]) if hits.size else None


def _pick(ctx: EpisodeContext, name: str, maximum: float, arm: Arm, source: str, start: int) -> StageOutcome:
    signals = ctx.signals
    done = _lift_after(ctx, source, start)
    intent_reason = f'the {arm} arm closes on {source} at {signals.when(start)}'
    if done is None:
        exec_reason = f'{source} never rises {ctx.config.scene4.sequence_lift} m after {signals.when(start)}'
        return StageOutcome(name, maximum, True, False, intent_reason, exec_reason, start)
    return StageOutcome(name, maximum, True, True, intent_reason, f'{source} lifted at {signals.when(done)}', done)


def sequence_stages(ctx: EpisodeContext, *, maxima: tuple[float, ...]) -> tuple[StageOutcome, ...]:
    """Raw stages A, B and finish of a sequence task.

    A's start is its first matching close; none → all 0. If B's first matching close (anywhere) comes
    before A's start → all 0 (reverse order). A's completion is the first lift of source A from its
    start; B's start is searched from A's completion (or A's start). The finish anchor is B's completion,
    else A's, else A's start; both arms must return home (no operation-area check).
    """
    truth = ctx.truth
    if truth.then_arm is None or truth.then_source is None:
        raise RoboFollowError(f'sequence task {ctx.task.task_id} lacks then_arm / then_source')
    a_max, b_max, finish_max = maxima
    arm_a, arm_b, source_a, source_b = truth.arm, truth.then_arm, truth.source, truth.then_source
    a_start = matching_start(ctx, arm_a, source_a)
    if a_start is None:
        reason = f'the {arm_a} arm never closes on {source_a}'
        return failed(A_NAME, a_max, reason), failed(B_NAME, b_max, reason), failed(FINISH_NAME, finish_max, reason)
    b_first = matching_start(ctx, arm_b, source_b)
    if b_first is not None and b_first < a_start:
        reason = (
            f'reverse order: the {arm_b} arm closes on {source_b} at {ctx.signals.when(b_first)}, before the '
            f'{arm_a} arm closes on {source_a} at {ctx.signals.when(a_start)}'
        )
        return failed(A_NAME, a_max, reason), failed(B_NAME, b_max, reason), failed(FINISH_NAME, finish_max, reason)
    stage_a = _pick(ctx, A_NAME, a_max, arm_a, source_a, a_start)
    a_done = stage_a.frame if stage_a.exec else None
    b_start = matching_start(ctx, arm_b, source_b, start_from=first_of(a_done, a_start) or 0)
    if b_start is None:
        stage_b = failed(B_NAME, b_max, f'the {arm_b} arm never closes on {source_b} after {source_a}')
        b_done = None
    else:
        stage_b = _pick(ctx, B_NAME, b_max, arm_b, source_b, b_start)
        b_done = stage_b.frame if stage_b.exec else None
    anchor = first_of(b_done, a_done, a_start)
    assert anchor is not None
    finish = finish_stage(ctx, anchor=anchor, maximum=finish_max, arms=(arm_a, arm_b), idle_arm=None)
    return stage_a, stage_b, finish
