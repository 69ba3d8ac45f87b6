"""Scene 1 (spatial relations, relative placement): objects, layouts, labels and evaluation tasks.

The three yellow blocks are identical; an instruction can only single one out by a relation to an
anchor (red ball, green ball, red cylinder). ``resolve_block`` grounds such a reference in a layout:
the block one grid step from the anchor in the named direction. Evaluation tasks are generated from the
protocol's naming rules (protocol §2.1):

* L1: a trained reference that names a *different* block in a moved layout, kept when the training
  label's arm is one that block is handled with in training and a place anchor did not move.
* L2: the default layout with the alternative reference of each block.
* L3: in each moved layout every training (block, arm, action, anchor) tuple, with the anchor replaced
  by the anchor that now stands where the original stood, crossed with every untrained reference that
  names the block there (listed in the fixed relation order ``REFERENCE_ORDER``, which reproduces the
  published listing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from robofollow_ros.benchmark.types import (
    Arm,
    GroundTruth,
    Layout,
    ObjectSpec,
    Perturbation,
    Placement,
    Task,
)

SCENE = 1
CONFIG = 'scene1'

RED = (1.0, 0.0, 0.0, 1.0)
GREEN = (0.0, 1.0, 0.0, 1.0)
YELLOW = (1.0, 1.0, 0.0, 1.0)

_BACK = Perturbation(rx=0.015, ry=0.015, mode='down')
_FRONT = Perturbation(rx=0.015, ry=0.015, mode='up')

OBJECTS: dict[str, ObjectSpec] = {
    spec.name: spec
    for spec in (
        ObjectSpec('red_sphere', 'sphere', (0.02,), RED, mass=0.05, friction=2.0, perturb=_BACK),
        ObjectSpec('yellow_block_1', 'box', (0.02, 0.02, 0.02), YELLOW, mass=0.2, friction=0.1, perturb=_BACK),
        ObjectSpec('red_cylinder', 'cylinder', (0.025, 0.025), RED, mass=0.2, friction=0.1, perturb=_BACK),
        ObjectSpec('yellow_block_2', 'box', (0.02, 0.02, 0.02), YELLOW, mass=0.2, friction=0.1, perturb=_FRONT),
        ObjectSpec('green_sphere', 'sphere', (0.02,), GREEN, mass=0.05, friction=2.0, perturb=_FRONT),
        ObjectSpec('yellow_block_3', 'box', (0.02, 0.02, 0.02), YELLOW, mass=0.2, friction=0.1, perturb=_FRONT),
    )
}

COLUMNS_X = (-0.14, -0.02, 0.10)
BACK_ROW_Y = -0.04
FRONT_ROW_Y = -0.18

_Row = tuple[str, str, str]
_GRIDS: dict[str, tuple[_Row, _Row]] = {
    'default': (
        ('red_sphere', 'yellow_block_1', 'red_cylinder'),
        ('yellow_block_2', 'green_sphere', 'yellow_block_3'),
    ),
    'scene1_1': (
        ('red_cylinder', 'yellow_block_1', 'green_sphere'),
        ('yellow_block_2', 'red_sphere', 'yellow_block_3'),
    ),
    'scene1_2': (
        ('green_sphere', 'yellow_block_1', 'red_cylinder'),
        ('yellow_block_2', 'red_sphere', 'yellow_block_3'),
    ),
    'scene1_3': (
        ('red_sphere', 'yellow_block_1', 'green_sphere'),
        ('yellow_block_2', 'red_cylinder', 'yellow_block_3'),
    ),
}

BLOCKS = ('yellow_block_1', 'yellow_block_2', 'yellow_block_3')
ANCHORS = ('red_sphere', 'green_sphere', 'red_cylinder')
ANCHOR_WORDS = {'red_sphere': 'red ball', 'green_sphere': 'green ball', 'red_cylinder': 'red cylinder'}
_ANCHOR_SHORT = {'red_sphere': 'red', 'green_sphere': 'green', 'red_cylinder': 'red_cylinder'}

RELATIONS: dict[str, tuple[float, float]] = {
    'behind': (0.0, 1.0),
    'in_front': (0.0, -1.0),
    'left_of': (-1.0, 0.0),
    'right_of': (1.0, 0.0),
}
RELATION_WORDS = {
    'behind': 'behind',
    'in_front': 'in front of',
    'left_of': 'to the left of',
    'right_of': 'to the right of',
}
_LABEL_SLUG = {'behind': 'behind', 'in_front': 'in_front_of', 'left_of': 'left_of', 'right_of': 'beside'}
_PLAIN_SLUG = {'behind': 'behind', 'in_front': 'in_front_of', 'left_of': 'left_of', 'right_of': 'right_of'}
_L3_ACTION_SLUG = {'behind': 'behind', 'in_front': 'in_front', 'left_of': 'left_of', 'right_of': 'beside'}

REFERENCE_ORDER = ('in_front', 'right_of', 'behind', 'left_of')
GRID_REACH = 0.15
"""A reference reaches one grid step (0.12 m across, 0.14 m deep), never the diagonal (0.18 m)."""
_CONE_COS = math.cos(math.radians(45.0))


def _grid_layout(name: str, rows: tuple[_Row, _Row]) -> Layout:
    placements = []
    for row, y in zip(rows, (BACK_ROW_Y, FRONT_ROW_Y), strict=True):
        placements += [Placement(OBJECTS[item], (x, y)) for item, x in zip(row, COLUMNS_X, strict=True)]
    description = f'back row {", ".join(rows[0])}; front row {", ".join(rows[1])} (left to right)'
    return Layout(name, SCENE, tuple(placements), description)


LAYOUTS: tuple[Layout, ...] = tuple(_grid_layout(name, rows) for name, rows in _GRIDS.items())
_LAYOUTS = {layout.name: layout for layout in LAYOUTS}
MOVED_LAYOUTS = ('scene1_1', 'scene1_2', 'scene1_3')


@dataclass(frozen=True)
class SpatialRef:
    """A reference of the form "the block {relation} the {anchor}"."""

    relation: str
    anchor: str

    @property
    def text(self) -> str:
        """E.g. ``to the right of the red ball``."""
        return f'{RELATION_WORDS[self.relation]} the {ANCHOR_WORDS[self.anchor]}'

    @property
    def slug(self) -> str:
        """E.g. ``right_of_red_sphere``."""
        return f'{_PLAIN_SLUG[self.relation]}_{self.anchor}'


TRAINING_REFERENCES = {
    'yellow_block_1': SpatialRef('right_of', 'red_sphere'),
    'yellow_block_2': SpatialRef('left_of', 'green_sphere'),
    'yellow_block_3': SpatialRef('in_front', 'red_cylinder'),
}
L2_REFERENCES = {
    'yellow_block_1': SpatialRef('left_of', 'red_cylinder'),
    'yellow_block_2': SpatialRef('in_front', 'red_sphere'),
    'yellow_block_3': SpatialRef('right_of', 'green_sphere'),
}


@dataclass(frozen=True)
class _Tuple:
    block: str
    arm: Arm
    relation: str | None = None
    anchor: str | None = None


_TRAINING: tuple[_Tuple, ...] = (
    _Tuple('yellow_block_1', 'left'),
    _Tuple('yellow_block_1', 'right'),
    _Tuple('yellow_block_2', 'left'),
    _Tuple('yellow_block_3', 'right'),
    _Tuple('yellow_block_1', 'right', 'behind', 'red_cylinder'),
    _Tuple('yellow_block_1', 'right', 'right_of', 'red_cylinder'),
    _Tuple('yellow_block_1', 'left', 'behind', 'red_sphere'),
    _Tuple('yellow_block_1', 'left', 'left_of', 'red_sphere'),
    _Tuple('yellow_block_2', 'left', 'behind', 'green_sphere'),
    _Tuple('yellow_block_2', 'left', 'in_front', 'green_sphere'),
    _Tuple('yellow_block_2', 'left', 'behind', 'red_sphere'),
    _Tuple('yellow_block_2', 'left', 'left_of', 'red_sphere'),
    _Tuple('yellow_block_3', 'right', 'behind', 'red_cylinder'),
    _Tuple('yellow_block_3', 'right', 'right_of', 'red_cylinder'),
    _Tuple('yellow_block_3', 'right', 'behind', 'green_sphere'),
    _Tuple('yellow_block_3', 'right', 'in_front', 'green_sphere'),
)


def _arms_of(block: str) -> set[str]:
    return {item.arm for item in _TRAINING if item.block == block}


def _label_id(item: _Tuple) -> str:
    if item.relation is None:
        suffix = f'_{item.arm}' if len(_arms_of(item.block)) > 1 else ''
        return f'pickup_{item.block}{suffix}'
    return f'place_{item.block}_{_LABEL_SLUG[item.relation]}_{item.anchor}'


def resolve_block(layout: Layout, ref: SpatialRef) -> str | None:
    """The block that ``ref`` names in ``layout``, or ``None`` if none or several qualify.

    A block qualifies if it lies within ``GRID_REACH`` of the anchor and within 45° of the relation's
    direction (the cone of the protocol's relation test, protocol §4.5).
    """
    ax, ay = layout.placement(ref.anchor).xy
    dx, dy = RELATIONS[ref.relation]
    found = []
    for block in BLOCKS:
        bx, by = layout.placement(block).xy
        vx, vy = bx - ax, by - ay
        norm = math.hypot(vx, vy)
        if 1e-9 < norm <= GRID_REACH and (vx * dx + vy * dy) / norm >= _CONE_COS:
            found.append(block)
    return found[0] if len(found) == 1 else None


def _where(relation: str | None, anchor: str | None) -> str | None:
    """``left of the red ball``, or None for a task that only picks up."""
    if relation is None or anchor is None:
        return None
    return f'{RELATION_WORDS[relation]} the {ANCHOR_WORDS[anchor]}'


def _instruction(arm: Arm, ref: SpatialRef, relation: str | None, anchor: str | None) -> str:
    text = f'Use your {arm} arm to pick up the block {ref.text}'
    where = _where(relation, anchor)
    if where is not None:
        text += f' and place it {where}'
    return text + '.'


def _paraphrases(arm: Arm, ref: SpatialRef, relation: str | None, anchor: str | None) -> tuple[str, ...]:
    where = _where(relation, anchor)
    synonym = f'Using your {arm} arm, grasp the block {ref.text}' + (f' and put it {where}' if where else '') + '.'
    fronted = f'Pick up the block {ref.text}' + (f' and set it down {where}' if where else '')
    fronted += f' with your {arm} arm.'
    return (_instruction(arm, ref, relation, anchor), synonym, fronted)


def _truth(item: _Tuple, block: str | None = None, anchor: str | None = None) -> GroundTruth:
    source = block or item.block
    if item.relation is None:
        return GroundTruth(SCENE, 'pickup', item.arm, source)
    return GroundTruth(SCENE, 'place_relative', item.arm, source, target=anchor or item.anchor, relation=item.relation)


def _task(task_id: str, level: int | None, layout: str, item: _Tuple, ref: SpatialRef, **changes: str) -> Task:
    block = changes.get('block', item.block)
    anchor = changes.get('anchor', item.anchor)
    instruction = _instruction(item.arm, ref, item.relation, anchor)
    return Task(
        task_id=task_id,
        scene=SCENE,
        level=level,
        layout=layout,
        config=CONFIG,
        instruction=instruction,
        truth=_truth(item, block, anchor),
        paraphrases=_paraphrases(item.arm, ref, item.relation, anchor) if level is None else (instruction,),
        reference=f'the block {ref.text}',
        label=_label_id(item),
    )


def training_labels() -> tuple[Task, ...]:
    """The 16 Scene 1 training labels in protocol order."""
    return tuple(_task(_label_id(item), None, 'default', item, TRAINING_REFERENCES[item.block]) for item in _TRAINING)


def _level0() -> list[Task]:
    return [_task(f'L0_{_label_id(item)}', 0, 'default', item, TRAINING_REFERENCES[item.block]) for item in _TRAINING]


def _anchor_unmoved(layout: Layout, anchor: str | None) -> bool:
    return anchor is None or layout.placement(anchor).xy == _LAYOUTS['default'].placement(anchor).xy


def _level1() -> list[Task]:
    tasks = []
    for number, name in enumerate(MOVED_LAYOUTS, start=1):
        layout = _LAYOUTS[name]
        found = []
        for index, item in enumerate(_TRAINING):
            ref = TRAINING_REFERENCES[item.block]
            block = resolve_block(layout, ref)
            if block is None or block == item.block or item.arm not in _arms_of(block):
                continue
            if not _anchor_unmoved(layout, item.anchor):
                continue
            short = f'{_PLAIN_SLUG[ref.relation]}_{_ANCHOR_SHORT[ref.anchor]}'
            if item.relation is None:
                task_id = f'L1_s1{number}_pick_{short}'
            else:
                task_id = f'L1_s1{number}_place_{short}_{_PLAIN_SLUG[item.relation]}_{item.anchor}'
            found.append(((short, index), _task(task_id, 1, name, item, ref, block=block)))
        tasks += [task for _, task in sorted(found, key=lambda pair: pair[0])]
    return tasks


def _level2() -> list[Task]:
    tasks = []
    for item in _TRAINING:
        ref = L2_REFERENCES[item.block]
        if item.relation is None:
            task_id = f'L2_pick_block_{ref.slug}_{item.arm}'
        else:
            task_id = f'L2_place_block_{ref.slug}_{_PLAIN_SLUG[item.relation]}_{item.anchor}'
        tasks.append(_task(task_id, 2, 'default', item, ref))
    return tasks


def _anchor_in_cell_of(layout: Layout, anchor: str) -> str:
    cell = _LAYOUTS['default'].placement(anchor).xy
    return next(name for name in ANCHORS if layout.placement(name).xy == cell)


def valid_references(layout: Layout, block: str) -> list[SpatialRef]:
    """Every reference that names ``block`` in ``layout``, in ``REFERENCE_ORDER``."""
    refs = [SpatialRef(relation, anchor) for relation in REFERENCE_ORDER for anchor in ANCHORS]
    return [ref for ref in refs if resolve_block(layout, ref) == block]


def _level3() -> list[Task]:
    trained = set(TRAINING_REFERENCES.values())
    tasks = []
    for number, name in enumerate(MOVED_LAYOUTS, start=1):
        layout = _LAYOUTS[name]
        index = 0
        for item in _TRAINING:
            refs = [ref for ref in valid_references(layout, item.block) if ref not in trained]
            if not refs:
                continue
            index += 1
            anchor = None if item.anchor is None else _anchor_in_cell_of(layout, item.anchor)
            action = 'pickup' if item.relation is None else f'place_{_L3_ACTION_SLUG[item.relation]}_{anchor}'
            for ref in refs:
                task_id = f'L3_s1{number}_i{index:02d}_{action}_{item.arm}__src_{ref.slug}'
                changes = {} if anchor is None else {'anchor': anchor}
                tasks.append(_task(task_id, 3, name, item, ref, **changes))
    return tasks


def evaluation_tasks() -> tuple[Task, ...]:
    """The 116 Scene 1 evaluation tasks (L0-L3) in Appendix A order."""
    return tuple(_level0() + _level1() + _level2() + _level3())
