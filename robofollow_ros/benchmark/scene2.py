"""Scene 2 (object attributes, action selection): objects, layouts, labels and evaluation tasks.

Colour, size, shape and left/right position are each shared by two objects, so no single cue names an
object. References are ``Descriptor``s grounded in the layout by ``references.resolve``.

Bowls: the RoboTwin ``002_bowl`` meshes cannot be used, so both bowls are our own substitutes,
``ObjectSpec(shape='bowl', size=(outer_radius, height))``, sized in the ratio of the protocol's scale
factors (green ×0.6, yellow ×0.8 → outer radii 0.042 / 0.046 m) but small enough that the two bowls, whose
nominal centres are only 0.09 m apart, do not touch; 0.035 / 0.038 m tall, so an object dropped in them ends
with its centre within the 0.04 m xy in-bowl test; their origin is the
bottom centre's xy at the nominal position. They are dynamic bodies, as in the protocol.

Scene 2 L3 (protocol §9.2): the published ground truth keeps the positional phrases of the default
layout after swaps. Variant ``published`` (default) reproduces Appendix A. Variant ``corrected`` grounds
every phrase in the layout shown, so in layouts 2.5 and 2.6 "the left bowl" is the bowl that now stands
on the left (8 of 24 L3 tasks differ from the published truth; flagged ``literal_differs_from_published``
in both variants). In 2.2 and 2.4 "right/left cylinder" picks between two cylinders in the same
x column; there the phrase has no literal answer, so both variants keep the published truth and flag
the task ``ambiguous_reference``.
"""

from __future__ import annotations

from dataclasses import dataclass

from robofollow_ros.benchmark.constants import DEFAULT_VARIANT, FLAG_AMBIGUOUS, FLAG_LITERAL_DIFFERS
from robofollow_ros.benchmark.references import Descriptor, Traits, resolve_all
from robofollow_ros.benchmark.types import Arm, GroundTruth, Layout, ObjectSpec, Perturbation, Placement, Task, Variant

SCENE = 2
CONFIG = 'scene2'

RED = (1.0, 0.0, 0.0, 1.0)
BLUE = (0.1, 0.1, 1.0, 1.0)
GREEN = (0.0, 0.8, 0.0, 1.0)
YELLOW = (1.0, 0.85, 0.1, 1.0)

_DOWN = Perturbation(rx=0.01, ry=0.01, mode='down')
_UP = Perturbation(rx=0.01, ry=0.01, mode='up')

BOWL_MASS = 0.25

OBJECTS: dict[str, ObjectSpec] = {
    spec.name: spec
    for spec in (
        ObjectSpec('large_red_cylinder', 'cylinder', (0.03, 0.035), RED, mass=0.2, friction=0.12, perturb=_DOWN),
        ObjectSpec('large_blue_cube', 'box', (0.03, 0.03, 0.03), BLUE, mass=0.2, friction=0.1, perturb=_UP),
        ObjectSpec('small_red_cube', 'box', (0.02, 0.02, 0.02), RED, mass=0.2, friction=0.1, perturb=_DOWN),
        ObjectSpec('small_blue_cylinder', 'cylinder', (0.02, 0.025), BLUE, mass=0.2, friction=0.12, perturb=_UP),
        ObjectSpec('green_bowl', 'bowl', (0.042, 0.035), GREEN, mass=BOWL_MASS),
        ObjectSpec('yellow_bowl', 'bowl', (0.046, 0.038), YELLOW, mass=BOWL_MASS),
    )
}

TRAITS: dict[str, Traits] = {
    'large_red_cylinder': Traits('red', 'cylinder', 'large'),
    'large_blue_cube': Traits('blue', 'cube', 'large'),
    'small_red_cube': Traits('red', 'cube', 'small'),
    'small_blue_cylinder': Traits('blue', 'cylinder', 'small'),
    'green_bowl': Traits('green', 'bowl'),
    'yellow_bowl': Traits('yellow', 'bowl'),
}

NOMINAL: dict[str, tuple[float, float]] = {
    'large_red_cylinder': (-0.14, -0.04),
    'large_blue_cube': (-0.14, -0.13),
    'small_red_cube': (-0.03, -0.04),
    'small_blue_cylinder': (-0.03, -0.13),
    'green_bowl': (0.07, -0.10),
    'yellow_bowl': (0.16, -0.10),
}

SWAPS: dict[str, tuple[tuple[str, str], ...]] = {
    'default': (),
    'scene2.1': (('large_red_cylinder', 'large_blue_cube'),),
    'scene2.2': (('large_blue_cube', 'small_blue_cylinder'),),
    'scene2.3': (('small_red_cube', 'small_blue_cylinder'),),
    'scene2.4': (('large_red_cylinder', 'small_red_cube'),),
    'scene2.5': (('green_bowl', 'yellow_bowl'),),
    'scene2.6': (('small_red_cube', 'small_blue_cylinder'), ('green_bowl', 'yellow_bowl')),
}


def _swapped_layout(name: str, swaps: tuple[tuple[str, str], ...]) -> Layout:
    xy = dict(NOMINAL)
    for first, second in swaps:
        xy[first], xy[second] = xy[second], xy[first]
    description = '; '.join(f'{a} <-> {b}' for a, b in swaps) or 'training layout'
    return Layout(name, SCENE, tuple(Placement(OBJECTS[item], xy[item]) for item in NOMINAL), description)


LAYOUTS: tuple[Layout, ...] = tuple(_swapped_layout(name, swaps) for name, swaps in SWAPS.items())
_LAYOUTS = {layout.name: layout for layout in LAYOUTS}


PHRASES: dict[str, Descriptor] = {
    descriptor.slug.replace('_', ' '): descriptor
    for descriptor in (
        Descriptor('the larger red object', colour='red', size='larger'),
        Descriptor('the red cylinder', colour='red', shape='cylinder'),
        Descriptor('the leftmost cube', shape='cube', side='left'),
        Descriptor('the rightmost cube', shape='cube', side='right'),
        Descriptor('the smaller blue object', colour='blue', size='smaller'),
        Descriptor('the blue cylinder', colour='blue', shape='cylinder'),
        Descriptor('the left cylinder', shape='cylinder', side='left'),
        Descriptor('the larger cylinder', shape='cylinder', size='larger'),
        Descriptor('the larger blue object', colour='blue', size='larger'),
        Descriptor('the blue cube', colour='blue', shape='cube'),
        Descriptor('the larger cube', shape='cube', size='larger'),
        Descriptor('the smaller red object', colour='red', size='smaller'),
        Descriptor('the red cube', colour='red', shape='cube'),
        Descriptor('the smaller cube', shape='cube', size='smaller'),
        Descriptor('the right cylinder', shape='cylinder', side='right'),
        Descriptor('the smaller cylinder', shape='cylinder', size='smaller'),
        Descriptor('the green bowl', shape='bowl', colour='green'),
        Descriptor('the yellow bowl', shape='bowl', colour='yellow'),
        Descriptor('the left bowl', shape='bowl', side='left'),
        Descriptor('the right bowl', shape='bowl', side='right'),
    )
}

ALTERNATIVES: dict[str, tuple[str, ...]] = {
    'large_red_cylinder': ('left cylinder', 'larger cylinder'),
    'large_blue_cube': ('larger blue object', 'blue cube', 'larger cube'),
    'small_red_cube': ('smaller red object', 'red cube', 'smaller cube'),
    'small_blue_cylinder': ('right cylinder', 'smaller cylinder'),
    'green_bowl': ('left bowl',),
    'yellow_bowl': ('right bowl',),
}
"""L2 references never used in training (protocol §2.2), in protocol order."""

_ROLE = {
    'large_red_cylinder': 'red_cylinder',
    'large_blue_cube': 'left_cube',
    'small_red_cube': 'right_cube',
    'small_blue_cylinder': 'blue_cylinder',
    'green_bowl': 'green_bowl',
    'yellow_bowl': 'yellow_bowl',
}


@dataclass(frozen=True)
class _Label:
    action: str
    arm: Arm
    source: str
    source_phrases: tuple[str, ...]
    target: str | None = None
    target_phrase: str | None = None

    @property
    def label_id(self) -> str:
        source = _ROLE[self.source]
        if self.action == 'pickup':
            return f'pickup_{source}'
        target = _ROLE[self.target or '']
        joiner = {'stack': 'on', 'push': 'to', 'place_bowl': 'in'}[self.action]
        verb = 'place' if self.action == 'place_bowl' else self.action
        return f'{verb}_{source}_{joiner}_{target}'


_LABELS: tuple[_Label, ...] = (
    _Label('pickup', 'left', 'large_red_cylinder', ('larger red object', 'red cylinder')),
    _Label('pickup', 'left', 'large_blue_cube', ('leftmost cube',)),
    _Label('pickup', 'left', 'small_red_cube', ('rightmost cube',)),
    _Label('pickup', 'left', 'small_blue_cylinder', ('smaller blue object', 'blue cylinder')),
    _Label('stack', 'left', 'large_blue_cube', ('leftmost cube',), 'large_red_cylinder', 'larger red object'),
    _Label('stack', 'left', 'large_blue_cube', ('leftmost cube',), 'small_blue_cylinder', 'smaller blue object'),
    _Label('stack', 'left', 'small_blue_cylinder', ('smaller blue object',), 'large_blue_cube', 'leftmost cube'),
    _Label('stack', 'left', 'small_blue_cylinder', ('smaller blue object',), 'small_red_cube', 'rightmost cube'),
    _Label('push', 'left', 'large_blue_cube', ('leftmost cube',), 'large_red_cylinder', 'larger red object'),
    _Label('push', 'left', 'large_blue_cube', ('leftmost cube',), 'small_blue_cylinder', 'smaller blue object'),
    _Label('push', 'left', 'large_red_cylinder', ('red cylinder',), 'large_blue_cube', 'leftmost cube'),
    _Label('push', 'left', 'large_red_cylinder', ('red cylinder',), 'small_red_cube', 'rightmost cube'),
    _Label('place_bowl', 'right', 'small_red_cube', ('rightmost cube',), 'green_bowl', 'green bowl'),
    _Label('place_bowl', 'right', 'small_red_cube', ('rightmost cube',), 'yellow_bowl', 'yellow bowl'),
    _Label('place_bowl', 'right', 'small_blue_cylinder', ('smaller blue object',), 'green_bowl', 'green bowl'),
    _Label('place_bowl', 'right', 'small_blue_cylinder', ('smaller blue object',), 'yellow_bowl', 'yellow bowl'),
)
_BY_ID = {label.label_id: label for label in _LABELS}

L1_SELECTION: dict[str, tuple[tuple[str, int], ...]] = {
    'scene2.1': (
        ('pickup_red_cylinder', 0),
        ('pickup_red_cylinder', 1),
        ('pickup_left_cube', 0),
        ('push_left_cube_to_red_cylinder', 0),
        ('push_red_cylinder_to_left_cube', 0),
    ),
    'scene2.2': (('pickup_blue_cylinder', 0), ('pickup_blue_cylinder', 1)),
    'scene2.3': (
        ('pickup_right_cube', 0),
        ('pickup_blue_cylinder', 0),
        ('pickup_blue_cylinder', 1),
        ('place_right_cube_in_green_bowl', 0),
        ('place_right_cube_in_yellow_bowl', 0),
        ('place_blue_cylinder_in_green_bowl', 0),
        ('place_blue_cylinder_in_yellow_bowl', 0),
    ),
    'scene2.4': (('pickup_red_cylinder', 0), ('pickup_red_cylinder', 1)),
    'scene2.5': (
        ('place_right_cube_in_green_bowl', 0),
        ('place_right_cube_in_yellow_bowl', 0),
        ('place_blue_cylinder_in_green_bowl', 0),
        ('place_blue_cylinder_in_yellow_bowl', 0),
    ),
    'scene2.6': (
        ('place_right_cube_in_green_bowl', 0),
        ('place_right_cube_in_yellow_bowl', 0),
        ('place_blue_cylinder_in_green_bowl', 0),
        ('place_blue_cylinder_in_yellow_bowl', 0),
    ),
}
"""Per swapped layout, the (training label, source phrasing) pairs evaluated at L1 (protocol §2.2)."""

_BOWL_PICKS = (('red cube', 'left bowl'), ('smaller red object', 'right bowl'), ('smaller cylinder', 'left bowl'))
L3_PICKS: dict[str, tuple[tuple[str, ...], ...]] = {
    'scene2.1': (
        ('left cylinder',),
        ('larger cylinder',),
        ('blue cube',),
        ('blue cube', 'left cylinder'),
        ('left cylinder', 'blue cube'),
    ),
    'scene2.2': (('right cylinder',), ('right cylinder',)),
    'scene2.3': (
        ('smaller cube',),
        ('right cylinder',),
        ('right cylinder',),
        *_BOWL_PICKS,
        ('right cylinder', 'right bowl'),
    ),
    'scene2.4': (('left cylinder',), ('left cylinder',)),
    'scene2.5': (*_BOWL_PICKS, ('right cylinder', 'right bowl')),
    'scene2.6': (
        ('smaller cube', 'left bowl'),
        ('smaller red object', 'right bowl'),
        ('smaller cylinder', 'left bowl'),
        ('right cylinder', 'right bowl'),
    ),
}
"""The L2 alternative chosen for each reference of each L1 task (protocol §2.2, upstream MD5 picks)."""

_TEMPLATES = {
    'pickup': (
        'Use your {arm} arm to pick up {src}.',
        'Using your {arm} arm, grasp {src}.',
        'Pick up {src} with your {arm} arm.',
    ),
    'stack': (
        'Use your {arm} arm to stack {src} onto {tgt}.',
        'Using your {arm} arm, put {src} on top of {tgt}.',
        'Stack {src} onto {tgt} with your {arm} arm.',
    ),
    'push': (
        'Use your {arm} arm to push {src} towards {tgt}.',
        'Using your {arm} arm, slide {src} towards {tgt}.',
        'Push {src} towards {tgt} with your {arm} arm.',
    ),
    'place_bowl': (
        'Use your {arm} arm to pick up {src} and place it in {tgt}.',
        'Using your {arm} arm, put {src} into {tgt}.',
        'Place {src} in {tgt} with your {arm} arm.',
    ),
}


def _say(label: _Label, source_phrase: str, target_phrase: str | None, form: int = 0) -> str:
    target = PHRASES[target_phrase].text if target_phrase else ''
    return _TEMPLATES[label.action][form].format(arm=label.arm, src=PHRASES[source_phrase].text, tgt=target)


def _published_truth(label: _Label) -> GroundTruth:
    return GroundTruth(SCENE, label.action, label.arm, label.source, target=label.target)


def _grounded(
    label: _Label, layout: Layout, source_phrase: str, target_phrase: str | None, variant: Variant
) -> tuple[GroundTruth, tuple[str, ...], str]:
    """Ground truth of ``label`` as worded, in ``layout``, with flags and a note for the quirks."""
    published = _published_truth(label)
    phrases = [(source_phrase, label.source)] + ([(target_phrase, label.target)] if target_phrase else [])
    literal: list[str] = []
    ambiguous = []
    for phrase, meant in phrases:
        names = resolve_all(PHRASES[phrase], layout, TRAITS)
        if len(names) == 1:
            literal.append(names[0])
        else:
            literal.append(meant or '')
            ambiguous.append(phrase)
    if ambiguous:
        note = (
            f'"{", ".join(ambiguous)}" cannot be resolved in {layout.name} (two candidates share a column); '
            'the published ground truth is kept in both variants'
        )
        return published, (FLAG_AMBIGUOUS,), note
    literal_truth = GroundTruth(
        SCENE, label.action, label.arm, literal[0], target=literal[1] if len(literal) > 1 else None
    )
    if literal_truth == published:
        return published, (), ''
    note = (
        f'read literally in {layout.name} the instruction means {literal_truth.source} -> {literal_truth.target}; '
        f'the published ground truth is {published.source} -> {published.target}'
    )
    return (literal_truth if variant == 'corrected' else published), (FLAG_LITERAL_DIFFERS,), note


def _task(
    task_id: str,
    level: int | None,
    layout_name: str,
    label: _Label,
    source_phrase: str,
    target_phrase: str | None,
    variant: Variant,
) -> Task:
    layout = _LAYOUTS[layout_name]
    truth, flags, note = _grounded(label, layout, source_phrase, target_phrase, variant)
    instruction = _say(label, source_phrase, target_phrase)
    if level is None:
        paraphrases = tuple(_say(label, source_phrase, target_phrase, form) for form in range(3))
        for extra in label.source_phrases[1:]:
            paraphrases += (_say(label, extra, target_phrase, 0), _say(label, extra, target_phrase, 2))
    else:
        paraphrases = (instruction,)
    return Task(
        task_id=task_id,
        scene=SCENE,
        level=level,
        layout=layout_name,
        config=CONFIG,
        instruction=instruction,
        truth=truth,
        paraphrases=paraphrases,
        reference=PHRASES[source_phrase].text,
        label=label.label_id,
        flags=flags,
        note=note,
    )


def training_labels() -> tuple[Task, ...]:
    """The 16 Scene 2 training labels in protocol order (52 paraphrases in all)."""
    return tuple(
        _task(label.label_id, None, 'default', label, label.source_phrases[0], label.target_phrase, 'published')
        for label in _LABELS
    )


def _slug(phrase: str) -> str:
    return phrase.replace(' ', '_')


def evaluation_tasks(*, variant: Variant = DEFAULT_VARIANT) -> tuple[Task, ...]:
    """The 132 Scene 2 evaluation tasks (L0-L3) in Appendix A order."""
    tasks = [
        _task(f'L0_{label.label_id}', 0, 'default', label, label.source_phrases[0], label.target_phrase, variant)
        for label in _LABELS
    ]
    level1: list[Task] = []
    level3: list[Task] = []
    for layout_name, selection in L1_SELECTION.items():
        layout_tag = layout_name.replace('.', '_')
        pairs = zip(selection, L3_PICKS[layout_name], strict=True)
        for number, ((label_id, phrasing), picks) in enumerate(pairs, start=1):
            label = _BY_ID[label_id]
            source_phrase = label.source_phrases[phrasing]
            words = _slug(source_phrase) + (f'_to_{_slug(label.target_phrase)}' if label.target_phrase else '')
            suffix = f'{layout_tag}_{number:02d}_{label_id}_{words}'
            level1.append(_task(f'L1_{suffix}', 1, layout_name, label, source_phrase, label.target_phrase, variant))
            target_pick = picks[1] if len(picks) > 1 else None
            level3.append(_task(f'L3_{suffix}', 3, layout_name, label, picks[0], target_pick, variant))
    level2 = []
    for label in _LABELS:
        targets: tuple[str | None, ...] = ALTERNATIVES[label.target] if label.target else (None,)
        for source_phrase in ALTERNATIVES[label.source]:
            for target_phrase in targets:
                task_id = f'L2_{label.label_id}__src_{_slug(source_phrase)}'
                if target_phrase is not None:
                    task_id += f'__tgt_{_slug(target_phrase)}'
                level2.append(_task(task_id, 2, 'default', label, source_phrase, target_phrase, variant))
    return tuple(tasks + level1 + level2 + level3)
