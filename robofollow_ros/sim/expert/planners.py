"""One planner per ground-truth action: ``PLANNERS[action](assignment)`` returns the phases of the behaviour.

Each phase is planned from the observation current when it starts (see ``phases``); a planner decides
where the phase boundaries are: after a grasp, so that the placement uses where the object really sits
in the hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from robofollow_ros.benchmark.scene4 import SLOTS
from robofollow_ros.benchmark.types import TABLE_Z, GroundTruth, Layout
from robofollow_ros.errors import PolicyError
from robofollow_ros.sim.expert import constants as c
from robofollow_ros.sim.expert import geometry as g
from robofollow_ros.sim.expert.phases import Phase, PhaseContext, carry_and_release, go_home, grasp, push, then


@dataclass(frozen=True)
class Assignment:
    """What the expert is to do in one episode.

    Attributes:
        truth: the behaviour (a resolved ground truth).
        layout: the layout the episode runs in.
        route_objects: Scene 3 only, the slabs to pass right over, in the order they are crossed.
    """

    truth: GroundTruth
    layout: Layout
    route_objects: tuple[str, ...] = ()


Planner = Callable[[Assignment], tuple[Phase, ...]]
PLANNERS: dict[str, Planner] = {}


def planner(action: str) -> Callable[[Planner], Planner]:
    """Register the decorated function as the planner of ``action``."""

    def register(function: Planner) -> Planner:
        PLANNERS[action] = function
        return function

    return register


def phases_for(assignment: Assignment) -> tuple[Phase, ...]:
    """The phases of ``assignment``'s behaviour.

    Raises:
        PolicyError: no planner for the action.
    """
    action = assignment.truth.action
    if action not in PLANNERS:
        raise PolicyError(f'the expert has no planner for action {action!r} (known: {", ".join(sorted(PLANNERS))})')
    return PLANNERS[action](assignment)


def _target(truth: GroundTruth) -> str:
    if truth.target is None:
        raise PolicyError(f'{truth.action} of {truth.source} needs a target')
    return truth.target


def _place(truth: GroundTruth, goal: Callable[[PhaseContext], np.ndarray]) -> tuple[Phase, ...]:
    """Grasp the source, then (from a fresh observation) carry it to ``goal(ctx)``, release, go home."""
    arm, source = truth.arm, truth.source

    def release(ctx: PhaseContext) -> np.ndarray:
        return carry_and_release(ctx, arm, source, goal(ctx))

    return partial(grasp, arm=arm, name=source), then(release, partial(go_home, arm=arm))


@planner('pickup')
def plan_pickup(assignment: Assignment) -> tuple[Phase, ...]:
    """Grasp and lift the source, carry it home and hold it there."""
    truth = assignment.truth
    return (then(partial(grasp, arm=truth.arm, name=truth.source), partial(go_home, arm=truth.arm)),)


@planner('place_relative')
def plan_place_relative(assignment: Assignment) -> tuple[Phase, ...]:
    """Scene 1: put the source on the table in the relation to the anchor (``target``)."""
    truth = assignment.truth
    anchor, relation = _target(truth), truth.relation or ''
    return _place(truth, lambda ctx: g.relation_target(ctx.view, truth.source, anchor, relation))


@planner('stack')
def plan_stack(assignment: Assignment) -> tuple[Phase, ...]:
    """Scene 2: put the source on top of the target."""
    truth = assignment.truth
    target = _target(truth)
    return _place(truth, lambda ctx: g.s2_stack_target(ctx.view, truth.source, target))


@planner('place_bowl')
def plan_place_bowl(assignment: Assignment) -> tuple[Phase, ...]:
    """Scene 2: put the source into the target bowl."""
    truth = assignment.truth
    bowl = _target(truth)
    return _place(truth, lambda ctx: g.bowl_target(ctx.view, truth.source, bowl))


@planner('push')
def plan_push(assignment: Assignment) -> tuple[Phase, ...]:
    """Scene 2: push the source towards the target with the closed gripper, then go home."""
    truth = assignment.truth
    target = _target(truth)

    def pushing(ctx: PhaseContext) -> np.ndarray:
        centre_z = float(ctx.view.pos(truth.source)[2])
        tcp_z = max(centre_z + c.PUSH_TCP_ABOVE_CENTRE, ctx.motion.min_tcp_z)
        return push(ctx, truth.arm, g.push_path(ctx.view, truth.source, target, tcp_z=tcp_z))

    return (then(pushing, partial(go_home, arm=truth.arm)),)


@planner('place_on_label_route')
def plan_route(assignment: Assignment) -> tuple[Phase, ...]:
    """Scene 3: carry the slab right over the route slab(s) to the label, at the place mode's yaw."""
    truth = assignment.truth
    label = _target(truth)
    if truth.place_mode not in g.PLACE_MODE_YAW:
        raise PolicyError(f'unknown Scene 3 place mode {truth.place_mode!r}')
    goal_yaw = g.PLACE_MODE_YAW[truth.place_mode]
    carry_z = TABLE_Z + c.ROUTE_CARRY_HEIGHT

    def release(ctx: PhaseContext) -> np.ndarray:
        points = [g.route_point(ctx.view, name, carry_z=carry_z) for name in assignment.route_objects]
        goal = g.label_target(ctx.view, truth.source, label)
        return carry_and_release(
            ctx, truth.arm, truth.source, goal, goal_yaw=goal_yaw, waypoints=points, dwell_rows=c.ROUTE_DWELL_ROWS
        )

    return (
        partial(grasp, arm=truth.arm, name=truth.source),
        then(release, partial(go_home, arm=truth.arm, hold_rows=0)),
    )


@planner('unstack_to_slot')
def plan_unstack(assignment: Assignment) -> tuple[Phase, ...]:
    """Scene 4: take the source off its support and stand it at the nominal centre of the empty slot."""
    truth = assignment.truth
    if truth.slot not in SLOTS:
        raise PolicyError(f'unstack_to_slot needs a slot 1-6, got {truth.slot!r}')
    slot_xy = SLOTS[truth.slot]
    return _place(truth, lambda ctx: g.unstack_target(ctx.view, truth.source, slot_xy))


@planner('stack_on_target')
def plan_stack_on_target(assignment: Assignment) -> tuple[Phase, ...]:
    """Scene 4: put the source on the target at the referee's expected height."""
    truth = assignment.truth
    target = _target(truth)
    return _place(truth, lambda ctx: g.s4_stack_target(ctx.view, truth.source, target))


@planner('sequence_pickups')
def plan_sequence(assignment: Assignment) -> tuple[Phase, ...]:
    """Scene 4: arm A picks its source and takes it home; then arm B does the same; both hold at home."""
    truth = assignment.truth
    if truth.then_arm is None or truth.then_source is None:
        raise PolicyError('sequence_pickups needs then_arm and then_source')
    first = then(partial(grasp, arm=truth.arm, name=truth.source), partial(go_home, arm=truth.arm, hold_rows=0))
    second = then(partial(grasp, arm=truth.then_arm, name=truth.then_source), partial(go_home, arm=truth.then_arm))
    return first, second
