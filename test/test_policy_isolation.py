"""User policies see only images, state and instruction; built-in reference policies are privileged and marked."""

from __future__ import annotations

import json
from dataclasses import fields
from types import SimpleNamespace

import numpy as np
import policy_doubles
import pytest

from robofollow_ros.benchmark import registry
from robofollow_ros.cli import main
from robofollow_ros.evaluation.environment import Environment, PrivilegedObservation
from robofollow_ros.policy.observation import CAMERAS, Observation
from robofollow_ros.sim.env import CellEnv

pytestmark = pytest.mark.sim

TASK = 'L0_pickup_yellow_block_2'


def eval_args(out, policy, *extra):
    return ['eval', '--in-process', '--policy', policy, '--tasks', TASK, '--out', str(out), '--quiet', *extra]


def records(out):
    return [json.loads(line) for line in (out / 'results.jsonl').read_text(encoding='utf-8').splitlines()]


def run_file(out):
    return json.loads((out / 'run.json').read_text(encoding='utf-8'))


def test_a_user_policy_sees_only_images_state_and_instruction(tmp_path):
    # --trusted-policy: the spy keeps what it saw in this process (test_policy_process covers its own process)
    policy_doubles.seen.clear()
    policy_doubles.bound.clear()
    policy_doubles.instructions.clear()
    out = tmp_path / 'run'
    assert main(eval_args(out, 'policy_doubles:SpyPolicy', '--max-queries', '2', '--trusted-policy')) == 0
    assert policy_doubles.bound == [], 'bind_task of a user policy must never be called'
    assert policy_doubles.instructions == [registry.get_task(TASK).instruction]
    assert len(policy_doubles.seen) == 2
    for observation in policy_doubles.seen:
        assert type(observation) is Observation
        assert [field.name for field in fields(observation)] == ['images', 'state']
        assert not hasattr(observation, 'object_pos') and not hasattr(observation, 'ee_pos')
        assert sorted(observation.images) == sorted(CAMERAS)
        for image in observation.images.values():
            assert image.shape == (240, 320, 3) and image.dtype == np.uint8
        assert observation.state.shape == (14,) and observation.state.dtype == np.float32
    [record] = records(out)
    assert record['privileged'] is False and record['policy_error'] is None
    run = run_file(out)
    assert run['privileged'] is False and run['identity']['privileged'] is False


def test_the_expert_class_named_as_a_user_policy_gets_no_privilege(tmp_path):
    out = tmp_path / 'run'
    assert main(eval_args(out, 'robofollow_ros.sim.expert:ExpertPolicy')) == 0
    [record] = records(out)
    assert record['privileged'] is False
    assert record['error_kind'] == 'predict' and 'bind_task' in record['policy_error']
    assert record['completion_ok'] is False and record['queries'] == 0


def test_builtin_reference_policies_are_privileged_and_marked_everywhere(tmp_path, capsys):
    out = tmp_path / 'run'
    assert main(eval_args(out, 'expert')) == 0
    [record] = records(out)
    assert record['privileged'] is True and record['completion_ok'] is True
    assert run_file(out)['privileged'] is True
    assert main(['report', str(out / 'results.jsonl'), '--out', str(out / 'report')]) == 0
    heading = (out / 'report' / 'summary.md').read_text(encoding='utf-8').splitlines()[0]
    assert heading == (
        f'Policy expert (privileged: ground-truth access; built-in, in-process) · run {record["run_id"]} · '
        'variant published'
    )
    assert json.loads((out / 'report' / 'summary.json').read_text())['run']['privileged'] is True


def test_observation_from_an_environment_keeps_only_copies_of_images_and_state():
    image = np.zeros((4, 5, 3), dtype=np.uint8)
    state = np.arange(14, dtype=np.float64)
    full = SimpleNamespace(images={'cam_high': image}, state=state, object_pos={'cube': np.zeros(3)}, time=1.0)
    observation = Observation.from_environment(full)
    assert not hasattr(observation, 'object_pos') and not hasattr(observation, 'time')
    assert observation.state.dtype == np.float32 and observation.state.tolist() == list(range(14))
    with pytest.raises(ValueError):
        observation.state[0] = 5.0
    with pytest.raises(TypeError):
        observation.images['cam_high'] = image  # type: ignore[index]
    image[0, 0, 0] = 9
    assert observation.images['cam_high'][0, 0, 0] == 0


def test_the_simulated_cell_implements_the_environment_protocol_and_the_privileged_channel():
    task = registry.get_task(TASK)
    with CellEnv(render=False) as env:
        assert isinstance(env, Environment)
        observation = env.reset(task, seed=1, layout=registry.layout_of(task), images=False)
        assert isinstance(observation, PrivilegedObservation)
        assert 'yellow_block_2' in observation.object_pos
