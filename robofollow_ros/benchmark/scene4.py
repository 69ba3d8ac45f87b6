"""Scene 4 (negation, sequencing, conditionals): slots, objects and layouts.

Six slots hold a bowl, single objects or two-object stacks. Every layout is given as slot contents from
bottom to top; an item above the bowl lies *inside* it, an item above another object is stacked *on*
it, and every item of a slot starts at the slot's nominal centre. Perturbation is per slot (±0.01 m in
x and y, the bowl included), so a stack or a bowl with its content moves together.

The bowl is our own static substitute for RoboTwin's ``002_bowl`` (×0.7): outer radius 0.06 m, height
0.04 m (centre at table + 0.02 as in the protocol), low enough that the in-bowl cube (half 0.024 m)
sticks out above the rim.

Layout names: the training configurations are ``scene4_1``-``scene4_3`` (Appendix A writes them
``scene4.1``-``scene4.3``; the registry accepts both), the evaluation layouts ``scene4.4``-``scene4.8``.
"""

from __future__ import annotations

from robofollow_ros.benchmark.references import Traits
from robofollow_ros.benchmark.types import Layout, ObjectSpec, Perturbation, Placement

SCENE = 4

SLOTS: dict[int, tuple[float, float]] = {
    1: (-0.14, -0.06),
    2: (-0.02, -0.06),
    3: (0.10, -0.06),
    4: (-0.14, -0.18),
    5: (-0.02, -0.18),
    6: (0.10, -0.18),
}

SLOT_PERTURBATION = Perturbation(rx=0.01, ry=0.01, mode='both')

RED = (0.95, 0.20, 0.20, 1.0)
YELLOW = (1.0, 0.85, 0.10, 1.0)
BLUE = (0.10, 0.30, 0.95, 1.0)
GREEN = (0.10, 0.80, 0.20, 1.0)

_CUBE = (0.024, 0.024, 0.024)
_SPHERE = (0.024,)
_CYLINDER = (0.024, 0.025)


def _cube(name: str, rgba: tuple[float, float, float, float]) -> ObjectSpec:
    return ObjectSpec(name, 'box', _CUBE, rgba, mass=0.2, friction=0.1, perturb=SLOT_PERTURBATION)


def _sphere(name: str, rgba: tuple[float, float, float, float]) -> ObjectSpec:
    return ObjectSpec(name, 'sphere', _SPHERE, rgba, mass=0.1, friction=1.0, perturb=SLOT_PERTURBATION)


def _cylinder(name: str, rgba: tuple[float, float, float, float]) -> ObjectSpec:
    return ObjectSpec(name, 'cylinder', _CYLINDER, rgba, mass=0.2, friction=0.1, perturb=SLOT_PERTURBATION)


OBJECTS: dict[str, ObjectSpec] = {
    spec.name: spec
    for spec in (
        ObjectSpec('bowl', 'bowl', (0.06, 0.04), GREEN, mass=0.3, static=True, perturb=SLOT_PERTURBATION),
        _cube('red_cube_in_bowl', RED),
        _cylinder('yellow_cylinder', YELLOW),
        _cube('blue_cube_right', BLUE),
        _cylinder('green_cylinder_top', GREEN),
        _sphere('blue_sphere', BLUE),
        _sphere('red_sphere', RED),
        _cube('blue_cube_on_yellow', BLUE),
        _cylinder('green_cylinder_right', GREEN),
    )
}

_SHAPE_WORDS = {'box': 'cube', 'sphere': 'sphere', 'cylinder': 'cylinder', 'bowl': 'bowl'}
TRAITS: dict[str, Traits] = {
    name: Traits('green' if name == 'bowl' else name.split('_')[0], _SHAPE_WORDS[spec.shape])
    for name, spec in OBJECTS.items()
}

_BOWL_WITH_CUBE = ('bowl', 'red_cube_in_bowl')
_CUBE_WITH_GREEN = ('blue_cube_right', 'green_cylinder_top')

SLOT_CONTENTS: dict[str, dict[int, tuple[str, ...]]] = {
    'scene4_1': {
        1: _BOWL_WITH_CUBE,
        2: ('yellow_cylinder',),
        3: _CUBE_WITH_GREEN,
        4: ('blue_sphere',),
        5: ('red_sphere',),
    },
    'scene4_2': {1: ('bowl',), 2: ('yellow_cylinder',), 3: _CUBE_WITH_GREEN, 4: ('red_sphere',), 5: ('blue_sphere',)},
    'scene4_3': {
        1: ('bowl',),
        2: ('yellow_cylinder', 'blue_cube_on_yellow'),
        3: ('green_cylinder_right',),
        4: ('blue_sphere',),
        6: ('red_sphere',),
    },
    'scene4.4': {1: ('bowl',), 2: ('yellow_cylinder',), 3: _CUBE_WITH_GREEN, 4: ('blue_sphere',), 5: ('red_sphere',)},
    'scene4.5': {
        1: _BOWL_WITH_CUBE,
        2: ('yellow_cylinder',),
        3: _CUBE_WITH_GREEN,
        4: ('red_sphere',),
        5: ('blue_sphere',),
    },
    'scene4.6': {
        1: _BOWL_WITH_CUBE,
        2: ('yellow_cylinder', 'green_cylinder_top'),
        3: ('blue_cube_right',),
        4: ('blue_sphere',),
        5: ('red_sphere',),
    },
    'scene4.7': {
        1: _BOWL_WITH_CUBE,
        2: _CUBE_WITH_GREEN,
        3: ('yellow_cylinder',),
        4: ('blue_sphere',),
        5: ('red_sphere',),
    },
    'scene4.8': {
        1: _BOWL_WITH_CUBE,
        2: ('yellow_cylinder',),
        3: _CUBE_WITH_GREEN,
        4: ('blue_sphere',),
        6: ('red_sphere',),
    },
}

TRAINING_LAYOUTS = ('scene4_1', 'scene4_2', 'scene4_3')
EVAL_LAYOUTS = ('scene4.4', 'scene4.5', 'scene4.6', 'scene4.7', 'scene4.8')


def _layout(name: str, contents: dict[int, tuple[str, ...]]) -> Layout:
    placements = []
    for slot, items in sorted(contents.items()):
        below: str | None = None
        for item in items:
            inside = below if below == 'bowl' else None
            on = below if below is not None and below != 'bowl' else None
            placements.append(Placement(OBJECTS[item], SLOTS[slot], on=on, inside=inside, slot=slot))
            below = item
    description = '; '.join(f'slot {slot}: {" < ".join(items)}' for slot, items in sorted(contents.items()))
    return Layout(name, SCENE, tuple(placements), description)


LAYOUTS: tuple[Layout, ...] = tuple(_layout(name, contents) for name, contents in SLOT_CONTENTS.items())
_LAYOUTS = {layout.name: layout for layout in LAYOUTS}


def layout(name: str) -> Layout:
    """The Scene 4 layout ``name`` (canonical spelling); raises ``KeyError`` if unknown."""
    return _LAYOUTS[name]
