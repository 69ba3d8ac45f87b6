"""Scene 4 instructions as data: referring expressions, predicates, actions and their wording.

A task is a ``Step`` (one arm, one action), a ``Sequence`` of two pickups or an ``IfElse`` over a
predicate. ``truth_of`` grounds any of them in a layout: references are resolved with
``references.resolve`` and predicates are evaluated from the layout's positions and stacking relations,
so the branch of a conditional in an evaluation layout is computed, not copied.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from robofollow_ros.benchmark.references import Descriptor, resolve, resolve_or_fallback
from robofollow_ros.benchmark.scene4 import SCENE, SLOTS, TRAITS
from robofollow_ros.benchmark.types import Arm, Conditional, GroundTruth, Layout

CUBE_IN_BOWL = Descriptor('the cube inside the bowl', shape='cube', in_bowl=True)
YELLOW_CYLINDER = Descriptor('the yellow cylinder', colour='yellow', shape='cylinder')
GREEN_CYLINDER = Descriptor('the green cylinder', colour='green', shape='cylinder')
BLUE_SPHERE = Descriptor('the blue sphere', colour='blue', shape='sphere')
RED_SPHERE = Descriptor('the red sphere', colour='red', shape='sphere')
RED_BALL = Descriptor('the red ball', colour='red', shape='sphere')
BLUE_CUBE = Descriptor('the blue cube', colour='blue', shape='cube')
RIGHT_CUBE = Descriptor('the right cube', shape='cube', side='right')
RIGHT_CYLINDER = Descriptor('the cylinder on the right', shape='cylinder', side='right')
CYLINDER_FROM_RIGHT_CUBE = Descriptor(
    'the cylinder from the right cube', shape='cylinder', on=RIGHT_CUBE, fallback='green_cylinder_top'
)
BLUE_NOT_CUBE = Descriptor('the blue object that is not a cube', colour='blue', not_shape='cube')
RED_NOT_IN_BOWL = Descriptor('the red object that is not in the bowl', colour='red', in_bowl=False)
BALL_NOT_LEFTMOST = Descriptor('the ball that is not in the leftmost position', shape='sphere', not_side='left')
BALL_NOT_RIGHTMOST = Descriptor('the ball that is not in the rightmost position', shape='sphere', not_side='right')
BALL_NOT_RED = Descriptor('the ball that is not red', shape='sphere', not_colour='red')
BALL_NOT_BLUE = Descriptor('the ball that is not blue', shape='sphere', not_colour='blue')
BALL_NOT_ON_LEFT = Descriptor('the ball that is not on the left', shape='sphere', not_side='left')
LEFT_BALL = Descriptor('the left ball', shape='sphere', side='left')
RIGHT_BALL = Descriptor('the right ball', shape='sphere', side='right')
NOT_TOUCHING = Descriptor('the object that is not touching the table', touching_table=False)
CUBE_NOT_TOUCHING = Descriptor('the cube that is not touching the table', shape='cube', touching_table=False)
CYLINDER_NOT_TOUCHING = Descriptor(
    'the cylinder that is not touching the table', shape='cylinder', touching_table=False
)
CYLINDER_NOT_GREEN = Descriptor('the cylinder that is not green', shape='cylinder', not_colour='green')
CYLINDER_NOT_YELLOW = Descriptor('the cylinder that is not yellow', shape='cylinder', not_colour='yellow')


def _x(layout: Layout, descriptor: Descriptor) -> float:
    return layout.placement(_one(layout, descriptor)).xy[0]


def _one(layout: Layout, descriptor: Descriptor) -> str:
    name = resolve(descriptor, layout, TRAITS)
    if name is None:
        raise ValueError(f'{descriptor.text!r} does not name exactly one item in {layout.name}')
    return name


def _support(layout: Layout, descriptor: Descriptor) -> str | None:
    name = resolve(descriptor, layout, TRAITS)
    return None if name is None else layout.placement(name).on


def _on_top_of(layout: Layout, base: str | None) -> list[str]:
    return [p.name for p in layout.placements if base is not None and p.on == base]


@dataclass(frozen=True)
class Predicate:
    """A condition of an if/else instruction: its wording and how to evaluate it on a layout."""

    key: str
    text: str
    evaluate: Callable[[Layout], bool]


PREDICATES: dict[str, Predicate] = {
    p.key: p
    for p in (
        Predicate(
            'bowl_nonempty',
            'there is an object in the bowl',
            lambda layout: any(p.inside == 'bowl' for p in layout.placements),
        ),
        Predicate(
            'blue_right_of_red',
            'the blue sphere is to the right of the red sphere',
            lambda layout: _x(layout, BLUE_SPHERE) > _x(layout, RED_SPHERE),
        ),
        Predicate(
            'red_right_of_blue',
            'the red sphere is to the right of the blue sphere',
            lambda layout: _x(layout, RED_SPHERE) > _x(layout, BLUE_SPHERE),
        ),
        Predicate(
            'object_on_right_cube',
            'there is an object on the right cube',
            lambda layout: bool(_on_top_of(layout, resolve(RIGHT_CUBE, layout, TRAITS))),
        ),
        Predicate(
            'yellow_right_of_green',
            'the yellow cylinder is to the right of the green cylinder',
            lambda layout: _x(layout, YELLOW_CYLINDER) > _x(layout, GREEN_CYLINDER),
        ),
        Predicate(
            'yellow_left_of_bowl',
            'the yellow cylinder is to the left of the bowl',
            lambda layout: _x(layout, YELLOW_CYLINDER) < layout.placement('bowl').xy[0],
        ),
        Predicate(
            'right_cube_under_green',
            'the right cube is under the green cylinder',
            lambda layout: _support(layout, GREEN_CYLINDER) == resolve(RIGHT_CUBE, layout, TRAITS),
        ),
        Predicate(
            'no_cube_on_yellow',
            'there is no cube on the yellow cylinder',
            lambda layout: (
                not any(TRAITS[name].shape == 'cube' for name in _on_top_of(layout, _one(layout, YELLOW_CYLINDER)))
            ),
        ),
        Predicate(
            'yellow_below_blue_cube',
            'the yellow cylinder is below the blue cube',
            lambda layout: _support(layout, BLUE_CUBE) == _one(layout, YELLOW_CYLINDER),
        ),
    )
}


@dataclass(frozen=True)
class Step:
    """One arm doing one thing: ``pickup``, ``unstack_to_slot`` or ``stack_on_target``."""

    action: str
    arm: Arm
    source: Descriptor
    target: Descriptor | None = None
    slot: int | None = None


@dataclass(frozen=True)
class Sequence:
    """Two pickups, one per arm, in this order."""

    first: Step
    then: Step


@dataclass(frozen=True)
class IfElse:
    """Do ``then`` if the predicate holds in the layout, else ``otherwise``."""

    predicate: str
    then: Step
    otherwise: Step


Spec = Step | Sequence | IfElse


def pick(arm: Arm, source: Descriptor) -> Step:
    """A pickup step."""
    return Step('pickup', arm, source)


def stack(arm: Arm, source: Descriptor, target: Descriptor) -> Step:
    """A stack-on-target step."""
    return Step('stack_on_target', arm, source, target=target)


def unstack(arm: Arm, source: Descriptor, slot: int) -> Step:
    """An unstack-to-slot step."""
    return Step('unstack_to_slot', arm, source, slot=slot)


def slot_phrase(layout: Layout, slot: int) -> str:
    """Describe the empty ``slot`` by its left neighbour in the same row, e.g. "to the right of the red sphere"."""
    y = SLOTS[slot][1]
    left_x = SLOTS[slot - 1][0] if slot - 1 in SLOTS and SLOTS[slot - 1][1] == y else None
    neighbours = [
        p
        for p in layout.placements
        if left_x is not None and p.on is None and p.inside is None and abs(p.xy[0] - left_x) < 1e-9 and p.xy[1] == y
    ]
    if len(neighbours) != 1:
        raise ValueError(f'slot {slot} of {layout.name} has no single left neighbour to describe it by')
    trait = TRAITS[neighbours[0].name]
    return f'the empty spot to the right of the {trait.colour} {trait.shape}'


def _step_truth(step: Step, layout: Layout) -> GroundTruth:
    source = resolve_or_fallback(step.source, layout, TRAITS)
    target = None if step.target is None else resolve_or_fallback(step.target, layout, TRAITS)
    return GroundTruth(SCENE, step.action, step.arm, source, target=target, slot=step.slot)


def truth_of(spec: Spec, layout: Layout) -> tuple[GroundTruth, Conditional | None]:
    """Ground truth of ``spec`` in ``layout`` and, for an if/else, the conditional with both branches."""
    if isinstance(spec, Step):
        return _step_truth(spec, layout), None
    if isinstance(spec, Sequence):
        first, then = _step_truth(spec.first, layout), _step_truth(spec.then, layout)
        truth = GroundTruth(
            SCENE,
            'sequence_pickups',
            first.arm,
            first.source,
            then_arm=then.arm,
            then_source=then.source,
        )
        return truth, None
    conditional = Conditional(
        predicate=spec.predicate,
        holds=PREDICATES[spec.predicate].evaluate(layout),
        then_truth=_step_truth(spec.then, layout),
        else_truth=_step_truth(spec.otherwise, layout),
    )
    return conditional.resolved, conditional


def reference_of(spec: Spec, layout: Layout) -> str:
    """The referring expression of the source the correct behaviour starts with."""
    if isinstance(spec, Step):
        return spec.source.text
    if isinstance(spec, Sequence):
        return spec.first.source.text
    holds = PREDICATES[spec.predicate].evaluate(layout)
    return (spec.then if holds else spec.otherwise).source.text


def _clause(step: Step, layout: Layout, form: int) -> str:
    source = step.source.text
    if step.action == 'pickup':
        return (f'pick up {source}', f'grasp {source}')[form]
    if step.action == 'stack_on_target' and step.target is not None:
        return (f'place {source} on {step.target.text}', f'put {source} on top of {step.target.text}')[form]
    if step.slot is None:
        raise ValueError(f'step {step} has neither target nor slot')
    spot = slot_phrase(layout, step.slot)
    return (f'move {source} to {spot}', f'take {source} off and set it down on {spot}')[form]


def _capitalised(text: str) -> str:
    return text[0].upper() + text[1:]


def wordings(spec: Spec, layout: Layout) -> tuple[str, str, str]:
    """Three phrasings of ``spec``: canonical "Use your X arm to ...", a synonym variant, a fronted form."""
    if isinstance(spec, Step):
        return (
            f'Use your {spec.arm} arm to {_clause(spec, layout, 0)}.',
            f'Using your {spec.arm} arm, {_clause(spec, layout, 1)}.',
            f'{_capitalised(_clause(spec, layout, 0))} with your {spec.arm} arm.',
        )
    if isinstance(spec, Sequence):
        a, b = spec.first, spec.then
        return (
            f'First use your {a.arm} arm to {_clause(a, layout, 0)}, then use your {b.arm} arm to '
            f'{_clause(b, layout, 0)}.',
            f'Using your {a.arm} arm first, {_clause(a, layout, 1)}; after that, use your {b.arm} arm to '
            f'{_clause(b, layout, 1)}.',
            f'{_capitalised(_clause(a, layout, 0))} with your {a.arm} arm first, then {_clause(b, layout, 0)} with '
            f'your {b.arm} arm.',
        )
    condition = PREDICATES[spec.predicate].text
    yes, no = spec.then, spec.otherwise
    return (
        f'If {condition}, use your {yes.arm} arm to {_clause(yes, layout, 0)}; otherwise use your {no.arm} arm to '
        f'{_clause(no, layout, 0)}.',
        f'In case {condition}, use your {yes.arm} arm to {_clause(yes, layout, 1)}; if not, use your {no.arm} arm '
        f'to {_clause(no, layout, 1)}.',
        f'Check whether {condition}: if so, {_clause(yes, layout, 0)} with your {yes.arm} arm; if not, '
        f'{_clause(no, layout, 0)} with your {no.arm} arm.',
    )
