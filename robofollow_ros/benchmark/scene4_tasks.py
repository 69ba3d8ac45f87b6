"""Scene 4 training labels and evaluation tasks, as specs grounded in their layouts.

Each label or task is a name and a spec (``scene4_language``); instruction, paraphrases and ground
truth are derived from the spec in the task's layout. Task IDs follow the protocol's naming rules:
``L0_<label>`` for the training labels, ``L<n>_scene4_<k>_<nn>_l<n>_s4<k>_<name>`` for L1-L3, where
``nn`` counts the tasks of a level (L1 number 7 is retired upstream and skipped here as well).

Every evaluation layout (4.4-4.8) derives from the training configuration ``scene4_1``.
"""

from __future__ import annotations

from robofollow_ros.benchmark import scene4_language as lang
from robofollow_ros.benchmark.scene4 import SCENE, layout
from robofollow_ros.benchmark.scene4_language import IfElse, Sequence, Spec, pick, stack, unstack
from robofollow_ros.benchmark.types import Arm, Task

L: Arm = 'left'
R: Arm = 'right'

_R_STACK = stack(R, lang.CYLINDER_FROM_RIGHT_CUBE, lang.YELLOW_CYLINDER)
_L_PICK_BLUE = pick(L, lang.BLUE_SPHERE)
_R_PICK_RED = pick(R, lang.RED_SPHERE)
_R_PICK_GREEN = pick(R, lang.GREEN_CYLINDER)

TRAINING: dict[str, tuple[tuple[str, Spec], ...]] = {
    'scene4_1': (
        ('l_pick_cube_in_bowl', pick(L, lang.CUBE_IN_BOWL)),
        ('l_pick_yellow_cylinder', pick(L, lang.YELLOW_CYLINDER)),
        ('r_pick_green_cylinder_top', _R_PICK_GREEN),
        ('l_pick_blue_sphere', _L_PICK_BLUE),
        ('l_pick_red_sphere', pick(L, lang.RED_SPHERE)),
        ('r_unstack_green_cylinder_to_slot6', unstack(R, lang.GREEN_CYLINDER, 6)),
        ('r_stack_green_cylinder_on_yellow', stack(R, lang.GREEN_CYLINDER, lang.YELLOW_CYLINDER)),
        ('l_pick_blue_not_cube', pick(L, lang.BLUE_NOT_CUBE)),
        ('l_pick_red_not_in_bowl', pick(L, lang.RED_NOT_IN_BOWL)),
        ('l_pick_ball_not_leftmost', pick(L, lang.BALL_NOT_LEFTMOST)),
        ('if_bowl_nonempty_then_l_pick_blue_else_r_stack', IfElse('bowl_nonempty', _L_PICK_BLUE, _R_STACK)),
        ('if_blue_right_of_red_then_l_pick_else_r_stack', IfElse('blue_right_of_red', _L_PICK_BLUE, _R_STACK)),
        (
            'if_object_on_right_cube_then_r_stack_else_l_pick_blue',
            IfElse('object_on_right_cube', _R_STACK, _L_PICK_BLUE),
        ),
        (
            'if_yellow_right_of_green_then_r_stack_else_l_pick_blue',
            IfElse('yellow_right_of_green', _R_STACK, _L_PICK_BLUE),
        ),
        ('seq_l_bowl_then_r_green_cylinder', Sequence(pick(L, lang.CUBE_IN_BOWL), _R_PICK_GREEN)),
        ('seq_r_green_cylinder_then_l_bowl', Sequence(_R_PICK_GREEN, pick(L, lang.CUBE_IN_BOWL))),
    ),
    'scene4_2': (
        ('l_pick_yellow_cylinder', pick(L, lang.YELLOW_CYLINDER)),
        ('r_unstack_green_cylinder_to_slot6', unstack(R, lang.GREEN_CYLINDER, 6)),
        ('r_stack_green_cylinder_on_yellow', stack(R, lang.GREEN_CYLINDER, lang.YELLOW_CYLINDER)),
        ('if_bowl_nonempty_then_l_pick_blue_else_r_stack', IfElse('bowl_nonempty', _L_PICK_BLUE, _R_STACK)),
        ('if_blue_right_of_red_then_l_pick_blue_else_r_stack', IfElse('blue_right_of_red', _L_PICK_BLUE, _R_STACK)),
        ('seq_l_red_ball_then_r_green_cylinder', Sequence(pick(L, lang.RED_BALL), _R_PICK_GREEN)),
        ('seq_r_green_cylinder_then_l_red_ball', Sequence(_R_PICK_GREEN, pick(L, lang.RED_BALL))),
    ),
    'scene4_3': (
        ('r_unstack_blue_cube_from_yellow_to_slot5', unstack(R, lang.BLUE_CUBE, 5)),
        ('r_stack_blue_cube_on_right_cylinder', stack(R, lang.BLUE_CUBE, lang.RIGHT_CYLINDER)),
        ('if_bowl_nonempty_then_l_pick_blue_else_r_pick_red', IfElse('bowl_nonempty', _L_PICK_BLUE, _R_PICK_RED)),
        ('r_pick_object_not_touching_table', pick(R, lang.NOT_TOUCHING)),
    ),
}
"""The 27 training labels per configuration (label ID = ``s4<k>_<name>``), protocol §2.4."""

_S41 = dict(TRAINING['scene4_1'])
_S42 = dict(TRAINING['scene4_2'])
_S43 = dict(TRAINING['scene4_3'])

LEVEL1: tuple[tuple[str, str, Spec], ...] = (
    (
        'scene4.4',
        'if_bowl_nonempty_then_l_pick_blue_else_r_stack',
        _S41['if_bowl_nonempty_then_l_pick_blue_else_r_stack'],
    ),
    ('scene4.4', 'if_bowl_nonempty_then_r_stack_else_l_pick_blue', IfElse('bowl_nonempty', _R_STACK, _L_PICK_BLUE)),
    ('scene4.4', 'r_pick_object_not_touching_table', _S43['r_pick_object_not_touching_table']),
    (
        'scene4.5',
        'if_blue_right_of_red_then_l_pick_blue_else_r_stack',
        _S42['if_blue_right_of_red_then_l_pick_blue_else_r_stack'],
    ),
    (
        'scene4.5',
        'if_blue_right_of_red_then_r_stack_else_l_pick_blue',
        IfElse('blue_right_of_red', _R_STACK, _L_PICK_BLUE),
    ),
    (
        'scene4.6',
        'if_object_on_right_cube_then_r_stack_else_l_pick_blue',
        _S41['if_object_on_right_cube_then_r_stack_else_l_pick_blue'],
    ),
    ('scene4.6', 'seq_l_bowl_then_r_green', _S41['seq_l_bowl_then_r_green_cylinder']),
    ('scene4.6', 'seq_r_green_then_l_bowl', _S41['seq_r_green_cylinder_then_l_bowl']),
    ('scene4.6', 'seq_l_red_then_r_green', _S42['seq_l_red_ball_then_r_green_cylinder']),
    ('scene4.6', 'seq_r_green_then_l_red', _S42['seq_r_green_cylinder_then_l_red_ball']),
    (
        'scene4.7',
        'if_yellow_right_of_green_then_r_stack_else_l_pick_blue',
        _S41['if_yellow_right_of_green_then_r_stack_else_l_pick_blue'],
    ),
    (
        'scene4.7',
        'if_yellow_right_of_green_then_l_pick_blue_else_r_stack',
        IfElse('yellow_right_of_green', _L_PICK_BLUE, _R_STACK),
    ),
    (
        'scene4.8',
        'if_bowl_nonempty_then_l_pick_blue_else_r_pick_red',
        _S43['if_bowl_nonempty_then_l_pick_blue_else_r_pick_red'],
    ),
    (
        'scene4.8',
        'if_bowl_nonempty_then_r_pick_red_else_l_pick_blue',
        IfElse('bowl_nonempty', _R_PICK_RED, _L_PICK_BLUE),
    ),
)
"""Trained phrasings and compositions in evaluation layouts (protocol §2.4 L1)."""

RETIRED_L1_NUMBERS = (7,)

_NEGATIONS: tuple[tuple[str, Spec], ...] = (
    ('l_pick_ball_not_red', pick(L, lang.BALL_NOT_RED)),
    ('l_pick_ball_not_rightmost', pick(L, lang.BALL_NOT_RIGHTMOST)),
)
_BLUE_GREEN_SEQUENCES: tuple[tuple[str, Spec], ...] = (
    ('seq_l_blue_then_r_green', Sequence(_L_PICK_BLUE, _R_PICK_GREEN)),
    ('seq_r_green_then_l_blue', Sequence(_R_PICK_GREEN, _L_PICK_BLUE)),
)
_GREEN_OR_BLUE: tuple[tuple[str, Spec], ...] = (
    (
        'if_red_right_of_blue_then_r_pick_green_else_l_pick_blue',
        IfElse('red_right_of_blue', _R_PICK_GREEN, _L_PICK_BLUE),
    ),
    (
        'if_yellow_left_of_bowl_then_r_pick_green_else_l_pick_blue',
        IfElse('yellow_left_of_bowl', _R_PICK_GREEN, _L_PICK_BLUE),
    ),
    (
        'if_right_cube_under_green_then_r_pick_green_else_l_pick_blue',
        IfElse('right_cube_under_green', _R_PICK_GREEN, _L_PICK_BLUE),
    ),
)
_NOT_BLUE = ('l_pick_ball_not_blue', pick(L, lang.BALL_NOT_BLUE))
_CYLINDER_NOT_GREEN = ('l_pick_cylinder_not_green', pick(L, lang.CYLINDER_NOT_GREEN))
_R_PICK_NOT_TOUCHING = pick(R, lang.NOT_TOUCHING)

LEVEL2: tuple[tuple[str, str, Spec], ...] = (
    *(
        ('scene4_1', name, spec)
        for name, spec in (
            *_NEGATIONS,
            ('l_pick_cube_not_touching_table', pick(L, lang.CUBE_NOT_TOUCHING)),
            _NOT_BLUE,
            _CYLINDER_NOT_GREEN,
            *_BLUE_GREEN_SEQUENCES,
            *_GREEN_OR_BLUE,
        )
    ),
    *(
        ('scene4_2', name, spec)
        for name, spec in (
            *_NEGATIONS,
            ('l_pick_object_not_touching_table', pick(L, lang.NOT_TOUCHING)),
            _NOT_BLUE,
            _CYLINDER_NOT_GREEN,
            *_BLUE_GREEN_SEQUENCES,
            *_GREEN_OR_BLUE,
        )
    ),
    *(
        ('scene4_3', name, spec)
        for name, spec in (
            *_NEGATIONS,
            ('r_pick_cylinder_not_yellow', pick(R, lang.CYLINDER_NOT_YELLOW)),
            (
                'if_no_cube_on_yellow_then_r_pick_not_touch_else_l_pick_blue',
                IfElse('no_cube_on_yellow', _R_PICK_NOT_TOUCHING, _L_PICK_BLUE),
            ),
            (
                'if_yellow_below_blue_cube_then_l_pick_blue_else_r_pick_not_touch',
                IfElse('yellow_below_blue_cube', _L_PICK_BLUE, _R_PICK_NOT_TOUCHING),
            ),
        )
    ),
)
"""New wordings and compositions in the training configurations (protocol §2.4 L2)."""

_L_PICK_NOT_RED = pick(L, lang.BALL_NOT_RED)
_L_PICK_NOT_BLUE = pick(L, lang.BALL_NOT_BLUE)
_R_PICK_CYLINDER_NOT_TOUCHING = pick(R, lang.CYLINDER_NOT_TOUCHING)
_L_PICK_LEFT_BALL = pick(L, lang.LEFT_BALL)
_L_PICK_NOT_LEFT_BALL = pick(L, lang.BALL_NOT_ON_LEFT)

LEVEL3: tuple[tuple[str, str, Spec], ...] = (
    ('scene4.4', 'l_pick_ball_not_red', _L_PICK_NOT_RED),
    ('scene4.4', 'l_pick_ball_not_rightmost', pick(L, lang.BALL_NOT_RIGHTMOST)),
    ('scene4.4', *_NOT_BLUE),
    ('scene4.4', *_CYLINDER_NOT_GREEN),
    (
        'scene4.4',
        'if_bowl_nonempty_then_pick_not_red_else_pick_red',
        IfElse('bowl_nonempty', _L_PICK_NOT_RED, pick(L, lang.RED_BALL)),
    ),
    (
        'scene4.4',
        'if_bowl_nonempty_then_pick_red_else_pick_not_red',
        IfElse('bowl_nonempty', pick(L, lang.RED_BALL), _L_PICK_NOT_RED),
    ),
    ('scene4.5', 'l_pick_ball_not_red', _L_PICK_NOT_RED),
    ('scene4.5', 'l_pick_ball_not_rightmost', pick(L, lang.BALL_NOT_RIGHTMOST)),
    ('scene4.5', 'l_pick_cube_not_touching_table', pick(L, lang.CUBE_NOT_TOUCHING)),
    ('scene4.5', *_NOT_BLUE),
    ('scene4.5', *_CYLINDER_NOT_GREEN),
    (
        'scene4.5',
        'if_red_right_of_blue_then_l_pick_not_blue_else_r_pick_not_touch_cyl',
        IfElse('red_right_of_blue', _L_PICK_NOT_BLUE, _R_PICK_CYLINDER_NOT_TOUCHING),
    ),
    (
        'scene4.5',
        'if_red_right_of_blue_then_r_pick_not_touch_cyl_else_l_pick_not_blue',
        IfElse('red_right_of_blue', _R_PICK_CYLINDER_NOT_TOUCHING, _L_PICK_NOT_BLUE),
    ),
    ('scene4.5', 'seq_l_left_ball_then_r_right_ball', Sequence(pick(L, lang.LEFT_BALL), pick(R, lang.RIGHT_BALL))),
    ('scene4.5', 'seq_r_right_ball_then_l_left_ball', Sequence(pick(R, lang.RIGHT_BALL), pick(L, lang.LEFT_BALL))),
    ('scene4.6', 'l_pick_cylinder_not_yellow', pick(L, lang.CYLINDER_NOT_YELLOW)),
    (
        'scene4.6',
        'if_object_on_right_cube_then_l_pick_left_ball_else_pick_not_left_ball',
        IfElse('object_on_right_cube', _L_PICK_LEFT_BALL, _L_PICK_NOT_LEFT_BALL),
    ),
    (
        'scene4.6',
        'if_object_on_right_cube_then_pick_not_left_ball_else_l_pick_left_ball',
        IfElse('object_on_right_cube', _L_PICK_NOT_LEFT_BALL, _L_PICK_LEFT_BALL),
    ),
    (
        'scene4.6',
        'seq_r_pick_not_touch_cyl_then_l_pick_not_touch_cube',
        Sequence(_R_PICK_CYLINDER_NOT_TOUCHING, pick(L, lang.CUBE_NOT_TOUCHING)),
    ),
    (
        'scene4.6',
        'seq_l_pick_not_touch_cube_then_r_pick_not_touch_cyl',
        Sequence(pick(L, lang.CUBE_NOT_TOUCHING), _R_PICK_CYLINDER_NOT_TOUCHING),
    ),
    (
        'scene4.7',
        'if_yellow_right_of_green_then_l_pick_not_red_else_r_pick_not_green',
        IfElse('yellow_right_of_green', _L_PICK_NOT_RED, pick(R, lang.CYLINDER_NOT_GREEN)),
    ),
    (
        'scene4.7',
        'if_yellow_right_of_green_then_r_pick_not_blue_else_l_pick_not_red',
        IfElse('yellow_right_of_green', pick(R, lang.BALL_NOT_BLUE), _L_PICK_NOT_RED),
    ),
    ('scene4.7', 'seq_r_right_ball_then_l_left_ball', Sequence(pick(R, lang.RIGHT_BALL), pick(L, lang.LEFT_BALL))),
    ('scene4.7', 'seq_l_left_ball_then_r_right_ball', Sequence(pick(L, lang.LEFT_BALL), pick(R, lang.RIGHT_BALL))),
)
"""New wordings and compositions in evaluation layouts (protocol §2.4 L3)."""


def _config_of(layout_name: str) -> str:
    return layout_name if layout_name.startswith('scene4_') else 'scene4_1'


def _layout_number(layout_name: str) -> str:
    return layout_name.replace('.', '_').split('_')[1]


def _task(task_id: str, level: int | None, layout_name: str, spec: Spec, label: str | None) -> Task:
    where = layout(layout_name)
    truth, conditional = lang.truth_of(spec, where)
    paraphrases = lang.wordings(spec, where)
    return Task(
        task_id=task_id,
        scene=SCENE,
        level=level,
        layout=layout_name,
        config=_config_of(layout_name),
        instruction=paraphrases[0],
        truth=truth,
        paraphrases=paraphrases if level is None else paraphrases[:1],
        reference=lang.reference_of(spec, where),
        conditional=conditional,
        label=label,
    )


def _label_id(config: str, name: str) -> str:
    return f's4{_layout_number(config)}_{name}'


def training_labels() -> tuple[Task, ...]:
    """The 27 Scene 4 training labels in protocol order."""
    return tuple(
        _task(_label_id(config, name), None, config, spec, _label_id(config, name))
        for config, labels in TRAINING.items()
        for name, spec in labels
    )


def _spec_label(spec: Spec) -> str | None:
    for config, labels in TRAINING.items():
        for name, trained in labels:
            if trained == spec:
                return _label_id(config, name)
    return None


def _numbered(level: int, entries: tuple[tuple[str, str, Spec], ...], retired: tuple[int, ...] = ()) -> list[Task]:
    tasks = []
    number = 0
    for layout_name, name, spec in entries:
        number += 1
        while number in retired:
            number += 1
        k = _layout_number(layout_name)
        task_id = f'L{level}_scene4_{k}_{number:02d}_l{level}_s4{k}_{name}'
        tasks.append(_task(task_id, level, layout_name, spec, _spec_label(spec)))
    return tasks


def evaluation_tasks() -> tuple[Task, ...]:
    """The 90 Scene 4 evaluation tasks (L0-L3) in Appendix A order."""
    level0 = [
        _task(f'L0_{_label_id(config, name)}', 0, config, spec, _label_id(config, name))
        for config, labels in TRAINING.items()
        for name, spec in labels
    ]
    return tuple(level0 + _numbered(1, LEVEL1, RETIRED_L1_NUMBERS) + _numbered(2, LEVEL2) + _numbered(3, LEVEL3))
