"""The scorer registry: one scorer per (scene, action), each returning raw stages (protocol §4.3-4.6).

A scorer assembles the stage modules for its stage structure, picks the completion time of the finish
stage and states which adjustments apply. ``score_episode`` does the rest (gating, totals, completion).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from robofollow_ros.benchmark.types import GroundTruth, other_arm
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.referee import s1_relation, s2_place, s2_push, s3_route, s4_place, s4_sequence
from robofollow_ros.referee.context import EpisodeContext
from robofollow_ros.referee.finish import fallback_completion, finish_stage, first_lift_from, first_of
from robofollow_ros.referee.gating import GateRule
from robofollow_ros.referee.raw_episode import RawEpisode, RetryCheck
from robofollow_ros.referee.source import source_stage
from robofollow_ros.referee.stage import StageOutcome
from robofollow_ros.referee.validation import Requirements

ScoreFn = Callable[[EpisodeContext], RawEpisode]


@dataclass(frozen=True)
class Scorer:
    """A registered scorer and what it needs from the trajectory.

    Attributes:
        scene: scene family 1-4.
        action: ground-truth action name.
        score: the scoring function.
        push: use the push close threshold for the gripper events.
        fingertip: score the fingertip proxy instead of the TCP (Scene 1).
        source_orientation: the source's quaternion is read (Scene 3).
    """

    scene: int
    action: str
    score: ScoreFn = field(repr=False)
    push: bool = False
    fingertip: bool = False
    source_orientation: bool = False

    def requirements(self, truth: GroundTruth) -> Requirements:
        """Optional signals this scorer reads for ``truth``."""
        return Requirements(ee_quat=self.fingertip, obj_quat=(truth.source,) if self.source_orientation else ())


SCORERS: dict[tuple[int, str], Scorer] = {}


def register(
    scene: int, action: str, *, push: bool = False, fingertip: bool = False, source_orientation: bool = False
) -> Callable[[ScoreFn], ScoreFn]:
    """Register the decorated function as the scorer of ``(scene, action)``."""

    def decorate(function: ScoreFn) -> ScoreFn:
        SCORERS[(scene, action)] = Scorer(scene, action, function, push, fingertip, source_orientation)
        return function

    return decorate


def scorer_for(scene: int, action: str) -> Scorer:
    """The scorer of ``(scene, action)``.

    Raises:
        RoboFollowError: no scorer is registered for the pair.
    """
    try:
        return SCORERS[(scene, action)]
    except KeyError:
        known = ', '.join(f'S{s} {a}' for s, a in sorted(SCORERS))
        raise RoboFollowError(f'no scorer for Scene {scene} action {action!r} (known: {known})') from None


def _completed_at(ctx: EpisodeContext, *candidates: int | None) -> int:
    """The first available completion candidate, else the generic fallback."""
    chosen = first_of(*candidates)
    return fallback_completion(ctx) if chosen is None else chosen


def _intent_frame(stage: StageOutcome) -> int | None:
    return stage.frame if stage.intent else None


def _pickup(ctx: EpisodeContext, *, lift: float) -> RawEpisode:
    maxima = ctx.config.stages.pickup
    selection = source_stage(ctx, maximum=maxima[0], lift=lift)
    finish = finish_stage(ctx, anchor=fallback_completion(ctx), maximum=maxima[1], idle_arm=other_arm(ctx.arm))
    return RawEpisode((selection.stage, finish), 'pickup', wrong_arm=ctx.events.wrong_arm)


def _place(ctx: EpisodeContext, action: Callable[..., StageOutcome], *, lift: float) -> tuple[StageOutcome, ...]:
    maxima = ctx.config.stages.three_stage
    selection = source_stage(ctx, maximum=maxima[0], lift=lift)
    stage2 = action(ctx, maximum=maxima[1])
    anchor = _completed_at(ctx, ctx.events.open_after_close, _intent_frame(stage2))
    finish = finish_stage(ctx, anchor=anchor, maximum=maxima[2], idle_arm=other_arm(ctx.arm))
    return selection.stage, stage2, finish


@register(1, 'pickup', fingertip=True)
def score_s1_pickup(ctx: EpisodeContext) -> RawEpisode:
    """Scene 1 pickup: source select (0.8) + finish (0.2)."""
    raw = _pickup(ctx, lift=ctx.config.source.lift)
    return RawEpisode(raw.stages, raw.gate, wrong_arm=raw.wrong_arm, fields={'wrong_arm_intervened': raw.wrong_arm})


@register(1, 'place_relative', fingertip=True)
def score_s1_relation(ctx: EpisodeContext) -> RawEpisode:
    """Scene 1 relative placement: source select, relation, finish; final-layout bonus; wrong-arm penalty."""
    stages = _place(ctx, s1_relation.relation_stage, lift=ctx.config.source.lift)
    final = s1_relation.final_layout(ctx)
    fields = {
        'final_target_ok': final.ok,
        'final_target_reason': final.reason,
        'final_target_window': list(final.window) if final.window else None,
        'wrong_arm_intervened': ctx.events.wrong_arm,
    }
    return RawEpisode(stages, 'chain', final_layout=final, wrong_arm=ctx.events.wrong_arm, fields=fields)


def _scene2(ctx: EpisodeContext, stages: tuple[StageOutcome, ...], gate: GateRule, retry: RetryCheck) -> RawEpisode:
    fields = {'wrong_arm_intervened': ctx.events.wrong_arm}
    return RawEpisode(stages, gate, retry=retry, wrong_arm=ctx.events.wrong_arm, fields=fields)


@register(2, 'pickup')
def score_s2_pickup(ctx: EpisodeContext) -> RawEpisode:
    """Scene 2 pickup: source select with the higher lift (0.03 m) + finish; no retry layout."""
    raw = _pickup(ctx, lift=ctx.config.source.lift_s2_pickup)
    return _scene2(ctx, raw.stages, 'pickup', RetryCheck(False, 'a pickup has no final layout'))


@register(2, 'stack')
def score_s2_stack(ctx: EpisodeContext) -> RawEpisode:
    """Scene 2 stack: source select, stack, finish; retry bonus; wrong-arm penalty."""
    stages = _place(ctx, s2_place.stack_stage, lift=ctx.config.source.lift)
    return _scene2(ctx, stages, 'chain', RetryCheck(*s2_place.stack_final_target(ctx)))


@register(2, 'place_bowl')
def score_s2_bowl(ctx: EpisodeContext) -> RawEpisode:
    """Scene 2 place in bowl: source select, bowl, finish; retry bonus; wrong-arm penalty."""
    stages = _place(ctx, s2_place.bowl_stage, lift=ctx.config.source.lift)
    return _scene2(ctx, stages, 'chain', RetryCheck(*s2_place.bowl_final_target(ctx)))


@register(2, 'push', push=True)
def score_s2_push(ctx: EpisodeContext) -> RawEpisode:
    """Scene 2 push: push setup, push, finish (from the best-push sample); retry bonus; wrong-arm penalty."""
    maxima = ctx.config.stages.three_stage
    setup = s2_push.push_setup_stage(ctx, maximum=maxima[0])
    push = s2_push.push_stage(ctx, maximum=maxima[1])
    anchor = _completed_at(ctx, push.frame, ctx.events.close_expected)
    finish = finish_stage(ctx, anchor=anchor, maximum=maxima[2], idle_arm=other_arm(ctx.arm))
    gate: GateRule = 'chain' if ctx.rules.push_setup_needs_intent else 'push'
    return _scene2(ctx, (setup, push, finish), gate, RetryCheck(*s2_push.push_final_target(ctx)))


@register(3, 'place_on_label_route', source_orientation=True)
def score_s3(ctx: EpisodeContext) -> RawEpisode:
    """Scene 3: source select (0.3), route (0.3), orientation (0.4); wrong-arm penalty; no finish."""
    maxima = ctx.config.stages.scene3
    selection = source_stage(ctx, maximum=maxima[0], lift=ctx.config.source.lift)
    route = s3_route.route_stage(ctx, maximum=maxima[1])
    orientation = s3_route.orientation_stage(ctx, maximum=maxima[2])
    fields = {'wrong_arm_intervened': ctx.events.wrong_arm}
    return RawEpisode((selection.stage, route, orientation), 'chain', wrong_arm=ctx.events.wrong_arm, fields=fields)


@register(4, 'pickup')
def score_s4_pickup(ctx: EpisodeContext) -> RawEpisode:
    """Scene 4 pickup: support-aware source select + finish; wrong arm zeroes stage 1; support-lift penalty."""
    config, events, signals = ctx.config, ctx.events, ctx.signals
    maxima = config.stages.pickup
    selection = source_stage(ctx, maximum=maxima[0], lift=config.source.lift, lift_from_close=True, support_aware=True)
    stage1 = selection.stage
    fields: dict[str, object] = {'support': selection.support}
    close, other = events.close_expected, events.close_other
    if close is not None and other is not None and other <= close:
        stage1 = stage1.zeroed(f'the {other_arm(ctx.arm)} arm closes first ({signals.when(other)})')
        fields['wrong_arm_zeroed'] = True
    penalty = None
    if selection.support is not None and close is not None:
        rise = float(signals.rise(selection.support)[close:].max())
        if rise >= config.scene4.support_lift:
            penalty = f'support {selection.support} rose {rise:.3f} m after the close'
    anchor = fallback_completion(ctx, at_close=ctx.rules.s4_pickup_finish_at_close)
    finish = finish_stage(ctx, anchor=anchor, maximum=maxima[1], idle_arm=other_arm(ctx.arm))
    return RawEpisode((stage1, finish), 'pickup', support_lift=penalty, fields=fields)


def _s4_place(ctx: EpisodeContext, action: Callable[..., StageOutcome]) -> RawEpisode:
    config, events = ctx.config, ctx.events
    maxima = config.stages.three_stage
    selection = source_stage(ctx, maximum=maxima[0], lift=config.source.lift, lift_from_close=True, support_aware=True)
    stage1, stage2 = selection.stage, action(ctx, maximum=maxima[1])
    fields: dict[str, object] = {'support': selection.support}
    if events.close_other is not None:
        reason = f'the {other_arm(ctx.arm)} arm closes ({ctx.signals.when(events.close_other)})'
        stage1, stage2 = stage1.zeroed(reason), stage2.zeroed(reason)
        fields['wrong_arm_zeroed'] = True
    close = events.close_expected
    anchor = _completed_at(ctx, events.open_after_close, _intent_frame(stage2), first_lift_from(ctx, close), close)
    finish = finish_stage(ctx, anchor=anchor, maximum=maxima[2], idle_arm=other_arm(ctx.arm))
    return RawEpisode((stage1, stage2, finish), 'chain', fields=fields)


@register(4, 'stack_on_target')
def score_s4_stack(ctx: EpisodeContext) -> RawEpisode:
    """Scene 4 stack on target: source select, stack, finish; any close of the other arm zeroes stages 1-2."""
    return _s4_place(ctx, s4_place.stack_on_target_stage)


@register(4, 'unstack_to_slot')
def score_s4_unstack(ctx: EpisodeContext) -> RawEpisode:
    """Scene 4 unstack to slot: source select, slot, finish; any close of the other arm zeroes stages 1-2."""
    return _s4_place(ctx, s4_place.unstack_stage)


@register(4, 'sequence_pickups')
def score_s4_sequence(ctx: EpisodeContext) -> RawEpisode:
    """Scene 4 sequence: action A, action B, finish of both arms (gated when corrected, raw when published)."""
    stages = s4_sequence.sequence_stages(ctx, maxima=ctx.config.stages.three_stage)
    return RawEpisode(stages, 'sequence' if ctx.rules.sequence_gating else 'none')
