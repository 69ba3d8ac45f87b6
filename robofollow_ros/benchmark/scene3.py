"""Scene 3 (route and orientation constraints): objects, layouts, labels and evaluation tasks.

Four slabs stand in two columns (left: red 2 / green 3, right: yellow 4 / blue 5); a slab is carried
from one column across the other to a square label ("via X": over X; "around X": over X's *partner*).
The partner depends on the variant: ``published`` pairs slabs by name (red-green, yellow-blue) in every
layout, as the published scorer does; ``corrected`` takes the other slab standing in X's column in the
task's layout, so that the complementary wording of L2/L3 stays literally true in swapped layouts. The
two differ only in layouts 3.3 and 3.4. The partner is stored in the truth (``route_partner``) and names
the slab of the L2/L3 rewrites, so instructions, referee and expert read one definition; the scored
behaviour (route mode, route object, label, place mode) is that of the training label.

L1 keeps a training label in a swapped layout when it is still feasible there: the source stands in
the far column and the route object in the column between source and label. This reproduces the
protocol's selection (all 16 labels in 3.1 / 3.2, four each in 3.3 / 3.4).
"""

from __future__ import annotations

from dataclasses import dataclass

from robofollow_ros.benchmark.constants import DEFAULT_VARIANT, FLAG_COMPLEMENTARY_ROUTE
from robofollow_ros.benchmark.types import (
    Arm,
    GroundTruth,
    Layout,
    ObjectSpec,
    Perturbation,
    Placement,
    Task,
    Variant,
)
from robofollow_ros.errors import RegistryError

SCENE = 3
CONFIG = 'scene3'

_SLAB_SIZE = (0.018, 0.028, 0.013)
_LABEL_SIZE = (0.03475, 0.03475, 0.001)
_JITTER = Perturbation(rx=0.01, ry=0.01, mode='both')

COLOURS: dict[str, tuple[float, float, float, float]] = {
    'red_bar_2': (0.95, 0.25, 0.25, 1.0),
    'green_bar_3': (0.10, 0.80, 0.20, 1.0),
    'yellow_bar_4': (1.0, 0.85, 0.10, 1.0),
    'blue_bar_5': (0.10, 0.30, 0.95, 1.0),
    'green_label_1': (0.0, 0.8, 0.0, 1.0),
    'blue_label_6': (0.10, 0.30, 0.95, 1.0),
}

OBJECTS: dict[str, ObjectSpec] = {
    name: ObjectSpec(name, 'box', _SLAB_SIZE, COLOURS[name], mass=0.18, friction=0.8, perturb=_JITTER)
    for name in ('red_bar_2', 'green_bar_3', 'yellow_bar_4', 'blue_bar_5')
}
OBJECTS.update(
    {
        name: ObjectSpec(name, 'label', _LABEL_SIZE, COLOURS[name], static=True, perturb=_JITTER)
        for name in ('green_label_1', 'blue_label_6')
    }
)

NAME_PAIRS: dict[str, str] = {
    'red_bar_2': 'green_bar_3',
    'green_bar_3': 'red_bar_2',
    'yellow_bar_4': 'blue_bar_5',
    'blue_bar_5': 'yellow_bar_4',
}
"""The published partners: the column pairs of the default layout, by name, whatever the layout."""

NUMBERED = {1: 'green_label_1', 2: 'red_bar_2', 3: 'green_bar_3', 4: 'yellow_bar_4', 5: 'blue_bar_5', 6: 'blue_label_6'}
WORDS = {name: name.split('_')[0] for name in OBJECTS}

NOMINAL: dict[str, tuple[float, float]] = {
    'red_bar_2': (-0.09, -0.17),
    'green_bar_3': (-0.09, -0.09),
    'yellow_bar_4': (0.01, -0.17),
    'blue_bar_5': (0.01, -0.09),
    'green_label_1': (-0.19, -0.13),
    'blue_label_6': (0.11, -0.13),
}

SWAPS: dict[str, tuple[str, str] | None] = {
    'default': None,
    'scene3.1': ('red_bar_2', 'green_bar_3'),
    'scene3.2': ('blue_bar_5', 'yellow_bar_4'),
    'scene3.3': ('red_bar_2', 'yellow_bar_4'),
    'scene3.4': ('green_bar_3', 'blue_bar_5'),
}
L3_LAYOUTS = ('scene3.1', 'scene3.3', 'scene3.4')

PLACE_MODES = ('short_front', 'long_front', 'short_right', 'long_right')
EQUIVALENT_MODE = {
    'short_front': 'long_right',
    'long_right': 'short_front',
    'long_front': 'short_right',
    'short_right': 'long_front',
}
"""Place modes with the same target yaw (compared modulo π), protocol §2.3."""


def _layout(name: str, swap: tuple[str, str] | None) -> Layout:
    xy = dict(NOMINAL)
    description = 'training layout'
    if swap is not None:
        xy[swap[0]], xy[swap[1]] = xy[swap[1]], xy[swap[0]]
        description = f'{swap[0]} <-> {swap[1]}'
    return Layout(name, SCENE, tuple(Placement(OBJECTS[item], xy[item]) for item in NOMINAL), description)


LAYOUTS: tuple[Layout, ...] = tuple(_layout(name, swap) for name, swap in SWAPS.items())
_LAYOUTS = {layout.name: layout for layout in LAYOUTS}


@dataclass(frozen=True)
class _Label:
    arm: Arm
    source: str
    route: str
    route_object: str
    target: str
    place_mode: str

    @property
    def label_id(self) -> str:
        number = {name: key for key, name in NUMBERED.items()}
        prefix = 'r' if self.arm == 'right' else 'l'
        return (
            f'{prefix}_pick{number[self.source]}_{self.route}{number[self.route_object]}'
            f'_to{number[self.target]}_{self.place_mode}'
        )

    def truth(self, layout: Layout, variant: Variant) -> GroundTruth:
        return GroundTruth(
            SCENE,
            'place_on_label_route',
            self.arm,
            self.source,
            target=self.target,
            route=self.route,
            route_object=self.route_object,
            place_mode=self.place_mode,
            route_partner=partner(layout, self.route_object, variant=variant),
        )


def _labels() -> tuple[_Label, ...]:
    labels = [
        _Label('right', NUMBERED[source], 'via', NUMBERED[via], 'blue_label_6', f'{side}_front')
        for source in (2, 3)
        for via in (4, 5)
        for side in ('short', 'long')
    ]
    labels += [
        _Label('left', NUMBERED[source], 'around', NUMBERED[avoided], 'green_label_1', f'{side}_right')
        for source in (5, 4)
        for avoided in (2, 3)
        for side in ('short', 'long')
    ]
    return tuple(labels)


_LABELS = _labels()


def partner(layout: Layout, slab: str, *, variant: Variant = DEFAULT_VARIANT) -> str:
    """The slab paired with ``slab``: by name (``published``) or the other slab in its column in ``layout``."""
    if variant == 'published':
        return NAME_PAIRS[slab]
    x = layout.placement(slab).xy[0]
    others = [p.name for p in layout.placements if p.spec.shape == 'box' and p.name != slab and abs(p.xy[0] - x) < 1e-6]
    if len(others) != 1:
        raise RegistryError(f'{slab} has no unique column partner in layout {layout.name!r}')
    return others[0]


def route_references(truth: GroundTruth) -> tuple[str, str]:
    """(correct, wrong) slab for the route stage: the one to pass over and the one to avoid (protocol §4.5)."""
    if truth.route_object is None or truth.route_partner is None:
        raise RegistryError('ground truth has no route object and partner')
    other = truth.route_partner
    return (truth.route_object, other) if truth.route == 'via' else (other, truth.route_object)


def feasible(layout: Layout, label: _Label) -> bool:
    """True if the source stands in the far column and the route object between it and the label."""
    source_x = layout.placement(label.source).xy[0]
    route_x = layout.placement(label.route_object).xy[0]
    label_x = layout.placement(label.target).xy[0]
    return min(source_x, label_x) < route_x < max(source_x, label_x)


def _orientation(mode: str, style: int) -> str:
    side, facing = mode.split('_')
    if style == 0:
        return f'{side} side facing {facing}'
    return f'{side} face pointing to the {facing}'


def _canonical(label: _Label) -> tuple[str, ...]:
    source, route, target = WORDS[label.source], WORDS[label.route_object], WORDS[label.target]
    side, facing = label.place_mode.split('_')
    if label.route == 'via':
        return (
            f'Use your {label.arm} arm to pick up the {source} slab, pass over the {route} slab, and place it on '
            f'the {target} square label with the {side} side facing {facing}.',
            f'Using your {label.arm} arm, move the {source} slab across the {route} slab and set it on the '
            f'{target} square label with its {side} side facing {facing}.',
            f'Pick up the {source} slab with your {label.arm} arm, carry it over the {route} slab, and put it on '
            f'the {target} square label, {side} side facing {facing}.',
        )
    return (
        f'Use your {label.arm} arm to pick up the {source} slab, avoid passing over the {route} slab, and place '
        f'it on the {target} square label with the {side} side facing {facing}.',
        f'Using your {label.arm} arm, move the {source} slab without crossing the {route} slab and set it on the '
        f'{target} square label with its {side} side facing {facing}.',
        f'Pick up the {source} slab with your {label.arm} arm, keep it off the {route} slab, and put it on '
        f'the {target} square label, {side} side facing {facing}.',
    )


def _rewrite(label: _Label, truth: GroundTruth, route_style: int, orientation_style: int) -> str:
    """The L2 wording: the complementary route constraint (naming the truth's partner), the equivalent orientation."""
    other = WORDS[truth.route_partner or '']
    if label.route == 'via':
        clause = (
            f'avoid passing over the {other} slab by detouring around it'
            if route_style == 0
            else f'go around the {other} slab instead of passing over it'
        )
    else:
        clause = f'pass over the {other} slab' if route_style == 0 else f'move above the {other} slab on the way'
    orientation = _orientation(EQUIVALENT_MODE[label.place_mode], orientation_style)
    return (
        f'Use your {label.arm} arm to pick up the {WORDS[label.source]} slab, {clause}, and place it on the '
        f'{WORDS[label.target]} square label with the {orientation}.'
    )


def _task(
    task_id: str,
    level: int | None,
    layout_name: str,
    label: _Label,
    rewrite: tuple[int, int] | None,
    variant: Variant = DEFAULT_VARIANT,
) -> Task:
    truth = label.truth(_LAYOUTS[layout_name], variant)
    paraphrases = _canonical(label)
    instruction = paraphrases[0] if rewrite is None else _rewrite(label, truth, *rewrite)
    return Task(
        task_id=task_id,
        scene=SCENE,
        level=level,
        layout=layout_name,
        config=CONFIG,
        instruction=instruction,
        truth=truth,
        paraphrases=paraphrases if level is None else (instruction,),
        reference=f'the {WORDS[label.source]} slab',
        label=label.label_id,
        flags=() if rewrite is None else (FLAG_COMPLEMENTARY_ROUTE,),
    )


_REWRITES = ((0, 0), (0, 1), (1, 0), (1, 1))


def training_labels() -> tuple[Task, ...]:
    """The 16 Scene 3 training labels in protocol order."""
    return tuple(_task(label.label_id, None, 'default', label, None) for label in _LABELS)


def _l1_pairs(layouts: tuple[str, ...]) -> list[tuple[str, _Label]]:
    return [(name, label) for name in layouts for label in _LABELS if feasible(_LAYOUTS[name], label)]


def evaluation_tasks(*, variant: Variant = DEFAULT_VARIANT) -> tuple[Task, ...]:
    """The 216 Scene 3 evaluation tasks (L0-L3) in Appendix A order, with the route partners of ``variant``."""
    tasks = [_task(f'L0_{label.label_id}', 0, 'default', label, None, variant) for label in _LABELS]
    swapped = tuple(name for name in SWAPS if name != 'default')
    for name, label in _l1_pairs(swapped):
        tasks.append(_task(f'L1_{name.replace(".", "_")}__{label.label_id}', 1, name, label, None, variant))
    for label in _LABELS:
        for route_style, orientation_style in _REWRITES:
            suffix = f'__rw_route{route_style}_ori{orientation_style}'
            rewrite = (route_style, orientation_style)
            tasks.append(_task(f'L2_{label.label_id}{suffix}', 2, 'default', label, rewrite, variant))
    for name, label in _l1_pairs(L3_LAYOUTS):
        for route_style, orientation_style in _REWRITES:
            suffix = f'__rw_route{route_style}_ori{orientation_style}'
            task_id = f'L3_{name.replace(".", "_")}__{label.label_id}{suffix}'
            tasks.append(_task(task_id, 3, name, label, (route_style, orientation_style), variant))
    return tuple(tasks)
