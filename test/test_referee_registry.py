"""Every registered scorer runs (dm_control style), and every evaluation task of the registry has a scorer."""

from __future__ import annotations

import pytest
from golden.episodes import standing, still
from golden.scenes import S1, S2, S3, S4_1, task

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.constants import VARIANTS
from robofollow_ros.benchmark.types import GroundTruth, Layout
from robofollow_ros.referee.config import default_config
from robofollow_ros.referee.score import score_episode
from robofollow_ros.referee.scorers import SCORERS, scorer_for
from robofollow_ros.referee.synthetic import Motion

TRUTHS: dict[tuple[int, str], tuple[GroundTruth, Layout]] = {
    (1, 'pickup'): (GroundTruth(1, 'pickup', 'left', 'yellow_block_1'), S1),
    (1, 'place_relative'): (
        GroundTruth(1, 'place_relative', 'left', 'yellow_block_2', target='green_sphere', relation='in_front'),
        S1,
    ),
    (2, 'pickup'): (GroundTruth(2, 'pickup', 'left', 'small_red_cube'), S2),
    (2, 'stack'): (GroundTruth(2, 'stack', 'left', 'small_blue_cylinder', target='small_red_cube'), S2),
    (2, 'push'): (GroundTruth(2, 'push', 'left', 'large_red_cylinder', target='small_red_cube'), S2),
    (2, 'place_bowl'): (GroundTruth(2, 'place_bowl', 'right', 'small_blue_cylinder', target='yellow_bowl'), S2),
    (3, 'place_on_label_route'): (
        GroundTruth(
            3,
            'place_on_label_route',
            'right',
            'green_bar_3',
            target='blue_label_6',
            route='around',
            route_object='yellow_bar_4',
            route_partner='blue_bar_5',
            place_mode='long_right',
        ),
        S3,
    ),
    (4, 'pickup'): (GroundTruth(4, 'pickup', 'left', 'red_sphere'), S4_1),
    (4, 'stack_on_target'): (GroundTruth(4, 'stack_on_target', 'right', 'blue_sphere', target='yellow_cylinder'), S4_1),
    (4, 'unstack_to_slot'): (GroundTruth(4, 'unstack_to_slot', 'right', 'green_cylinder_top', slot=5), S4_1),
    (4, 'sequence_pickups'): (
        GroundTruth(4, 'sequence_pickups', 'right', 'blue_sphere', then_arm='left', then_source='red_sphere'),
        S4_1,
    ),
}


def test_every_registered_scorer_has_a_case():
    assert set(SCORERS) == set(TRUTHS)


@pytest.mark.parametrize('variant', VARIANTS)
@pytest.mark.parametrize('key', sorted(SCORERS))
def test_registered_scorer_scores_an_idle_episode(key, variant):
    truth, layout = TRUTHS[key]
    motion = still(Motion(duration=3.0), standing(layout))
    for name in standing(layout):
        motion.obj_yaw(name, (0.0, 0.0))
    idle = task(f'idle_{key[1]}', truth, layout)
    record = score_episode(idle, motion.sample(20.0), layout=layout, variant=variant).to_record()
    config = default_config()
    maxima = [s['max'] for s in record['stages']]
    expected = {1: None, 2: None, 3: config.stages.scene3, 4: None}[key[0]] or (
        config.stages.pickup if len(maxima) == 2 else config.stages.three_stage
    )
    assert tuple(maxima) == tuple(expected)
    assert sum(maxima) == pytest.approx(1.0)
    # nobody moves: every stage is 0 and no bonus applies (nothing is in its goal layout)
    assert [(s['intent'], s['exec']) for s in record['stages']] == [(0.0, 0.0)] * len(maxima)
    assert (record['intent_score'], record['exec_score'], record['completion_ok']) == (0.0, 0.0, False)
    assert record['base_task_type'] == key[1]


def test_every_evaluation_task_has_a_scorer_and_scores():
    for variant in VARIANTS:
        for evaluation_task in registry.eval_tasks(variant=variant):
            layout = registry.layout_of(evaluation_task)
            scorer_for(evaluation_task.truth.scene, evaluation_task.truth.action)
            motion = still(Motion(duration=0.3), standing(layout))
            for name in standing(layout):
                motion.obj_yaw(name, (0.0, 0.0))
            record = score_episode(evaluation_task, motion.sample(10.0), layout=layout, variant=variant).to_record()
            assert 0.0 <= record['intent_score'] <= 1.0
            assert record['variant'] == variant
