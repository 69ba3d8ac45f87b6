"""The language-blind baseline: one fixed behaviour per configuration, whatever the instruction says."""

from __future__ import annotations

import numpy as np
import pytest

from robofollow_ros.benchmark import registry
from robofollow_ros.evaluation.episode import run_episode
from robofollow_ros.evaluation.guard import GuardedPolicy
from robofollow_ros.policy.factory import make_policy
from robofollow_ros.referee.score import score_episode
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.expert import BlindPolicy
from robofollow_ros.sim.expert.blind import fixed_label


@pytest.fixture(scope='module')
def env():
    with CellEnv(render=False) as cell:
        yield cell


def score(env, policy, task_id):
    task = registry.get_task(task_id)
    layout = registry.layout_of(task)
    guarded = GuardedPolicy.wrap(policy, privileged=True)
    outcome = run_episode(env, guarded, task, seed=registry.trial_seed(task_id, 1), layout=layout)
    return outcome, score_episode(task, outcome.trajectory, layout=layout)


@pytest.mark.parametrize(
    ('task_id', 'label'),
    [
        ('L0_place_yellow_block_3_behind_red_cylinder', 'pickup_yellow_block_1_left'),
        ('L3_scene2_6_04_place_blue_cylinder_in_yellow_bowl_smaller_blue_object_to_yellow_bowl', 'pickup_red_cylinder'),
        ('L1_scene3_2__l_pick5_around3_to1_long_right', 'r_pick2_via4_to6_short_front'),
        ('L0_s41_r_stack_green_cylinder_on_yellow', 's41_l_pick_cube_in_bowl'),
        # Layout 4.4 has an empty bowl: the first scene4_1 label that can be grounded there.
        ('L1_scene4_4_03_l1_s44_r_pick_object_not_touching_table', 's41_l_pick_yellow_cylinder'),
        ('L2_scene4_3_23_l2_s43_r_pick_cylinder_not_yellow', 's43_r_unstack_blue_cube_from_yellow_to_slot5'),
    ],
)
def test_fixed_label_is_the_first_groundable_label_of_the_configuration(task_id, label):
    task = registry.get_task(task_id)
    assert fixed_label(task, registry.layout_of(task)).task_id == label


def test_blind_policy_is_a_builtin_without_images():
    policy = make_policy('blind')
    assert isinstance(policy, BlindPolicy)
    assert policy.needs_images is False


@pytest.mark.sim
def test_blind_does_its_fixed_label_and_fails_a_task_that_asks_for_something_else(env):
    _, own = score(env, BlindPolicy(), 'L0_pickup_yellow_block_1_left')
    assert own.intent_ok and own.exec_ok and own.completion_ok
    outcome, other = score(env, BlindPolicy(), 'L0_place_yellow_block_3_behind_red_cylinder')
    # It used the left arm on block 1; the task wants block 3 behind the red cylinder with the right arm.
    assert other.intent_score < 0.5 and other.exec_score < 0.5
    assert not other.completion_ok
    block_1 = outcome.trajectory.obj_pos['yellow_block_1'][:, 2]
    assert block_1.max() - block_1[0] > 0.05
    assert np.all(outcome.trajectory.grip['right'] == 1.0)


@pytest.mark.sim
def test_blind_ignores_the_instruction(env):
    task = registry.get_task('L0_pickup_red_cylinder')
    layout = registry.layout_of(task)
    chunks = []
    for text in (task.instruction, 'Use your right arm to push the small red cube towards the yellow bowl.'):
        policy = BlindPolicy()
        observation = env.reset(task, seed=3, layout=layout)
        policy.reset()
        policy.bind_task(task, layout)
        policy.set_instruction(text)
        chunks.append(policy.predict(observation))
    assert np.array_equal(chunks[0], chunks[1])
