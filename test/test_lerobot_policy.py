"""``--policy lerobot`` (issue 31): a LeRobot checkpoint evaluated in its own process under the interpreter that has
LeRobot. Feature fitting and the other-interpreter host run everywhere; the end-to-end tests (a checkpoint trained
here by ``lerobot-train`` on our own export, evaluated by ``robofollow eval``) run where ``.venv-lerobot`` exists
(``scripts/setup_lerobot.sh``) or ``ROBOFOLLOW_LEROBOT_PYTHON`` names a Python with LeRobot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from lerobot_checkpoint import lerobot_interpreter

from robofollow_ros.cli import main
from robofollow_ros.errors import PolicyError
from robofollow_ros.evaluation.guard import GuardedPolicy
from robofollow_ros.policy.factory import PolicyFactory, resolve_policy
from robofollow_ros.policy.interpreters import LEROBOT_PYTHON_ENV, environment_folder, package_root
from robofollow_ros.policy.isolation.sandbox import sandbox_problem
from robofollow_ros.policy.lerobot_policy import check_features
from robofollow_ros.policy.observation import Observation
from robofollow_ros.state_layout import CAMERAS


def feature(kind: str, *shape: int) -> SimpleNamespace:
    return SimpleNamespace(type=kind, shape=shape)


def config(**changes: object) -> SimpleNamespace:
    """A LeRobot policy config's features as our LeRobot export makes them, changed by ``changes``."""
    inputs = {f'observation.images.{camera}': feature('VISUAL', 3, 240, 320) for camera in CAMERAS}
    inputs['observation.state'] = feature('STATE', 14)
    features = {'input_features': inputs, 'output_features': {'action': feature('ACTION', 14)}}
    for name, value in changes.items():
        group, _, key = name.partition(':')
        if value is None:
            del features[group][key]
        else:
            features[group][key] = value
    return SimpleNamespace(**features)


def test_a_checkpoint_of_our_export_maps_every_camera_by_name():
    assert check_features(config(), cameras=None) == {f'observation.images.{c}': c for c in CAMERAS}


@pytest.mark.parametrize(
    ('changes', 'cameras', 'message'),
    [
        ({'input_features:observation.images.top': feature('VISUAL', 3, 480, 640)}, None, "'observation.images.top'"),
        ({}, {'cam_high': 'cam_top'}, "'observation.images.cam_high' has no camera here"),
        ({'input_features:observation.state': feature('STATE', 7)}, None, "'observation.state' has shape (7,)"),
        ({'output_features:action': feature('ACTION', 7)}, None, "'action' has shape (7,)"),
        ({'output_features:action': None}, None, "'action' has shape None"),
        (
            {'input_features:observation.environment_state': feature('ENV', 6)},
            None,
            "'observation.environment_state' (ENV) is not something robofollow observes",
        ),
    ],
)
def test_a_checkpoint_whose_features_do_not_fit_is_refused_naming_the_feature(changes, cameras, message):
    with pytest.raises(PolicyError, match='LeRobot checkpoint') as raised:
        check_features(config(**changes), cameras=cameras)
    assert message in str(raised.value) and '\n' not in str(raised.value)


def test_other_camera_names_map_to_ours():
    renamed = config(
        **{
            'input_features:observation.images.cam_high': None,
            'input_features:observation.images.top': feature('VISUAL', 3, 240, 320),
        }
    )
    mapping = check_features(renamed, cameras={'top': 'cam_high'})
    assert mapping['observation.images.top'] == 'cam_high'


def test_the_backend_needs_a_checkpoint_and_an_interpreter_with_lerobot(monkeypatch, tmp_path):
    if sandbox_problem() is not None:
        pytest.skip(f'no sandbox here: {sandbox_problem()}')
    with pytest.raises(PolicyError, match=r'needs its checkpoint: --policy-kwargs'):
        resolve_policy('lerobot', kwargs={})
    monkeypatch.setenv(LEROBOT_PYTHON_ENV, str(tmp_path / 'python'))
    with pytest.raises(PolicyError, match=f'{LEROBOT_PYTHON_ENV}=.* is not a Python interpreter'):
        resolve_policy('lerobot', kwargs={'path': str(tmp_path)})
    monkeypatch.setenv(LEROBOT_PYTHON_ENV, sys.executable)
    factory = resolve_policy('lerobot', kwargs={'path': str(tmp_path)})
    assert (factory.isolation, factory.interpreter, factory.factory) == ('sandbox', sys.executable, None)
    # shown to the sandbox: the interpreter's environment and the checkpoint
    assert factory.readable == (str(environment_folder(sys.executable)), str(tmp_path))
    assert resolve_policy('lerobot').interpreter == sys.executable  # looked up only (the graph's evaluator)
    other = tmp_path / 'venv' / 'bin' / 'python'
    other.parent.mkdir(parents=True)
    other.symlink_to(sys.executable)
    chosen = resolve_policy('lerobot', kwargs={'path': str(tmp_path)}, python=str(other))  # --policy-python wins
    assert chosen.interpreter == str(other) and chosen.readable == (str(tmp_path / 'venv'), str(tmp_path))
    in_process = resolve_policy('lerobot', kwargs={'path': str(tmp_path)}, trusted=True)
    assert in_process.isolation == 'trusted' and in_process.interpreter is None


@pytest.mark.parametrize('isolation', ['process', 'sandbox'])
def test_a_policy_host_started_under_a_named_interpreter_answers(isolation):
    if isolation == 'sandbox' and sandbox_problem() is not None:
        pytest.skip(f'no sandbox here: {sandbox_problem()}')
    # Started as another interpreter is (``host_command``: this package's folder put on its own path), not told
    # the evaluator's path.
    guarded = GuardedPolicy(
        PolicyFactory(name='hold', privileged=False, factory=None, isolation=isolation, interpreter=sys.executable)
    )
    try:
        guarded.reset()
        guarded.set_instruction('hold still')
        state = np.linspace(-0.5, 0.5, 14, dtype=np.float32)
        chunk = guarded.predict(Observation(images={}, state=state), max_rows=50)
        np.testing.assert_array_equal(chunk[0], state)
        assert guarded.pid is not None and guarded.pid != os.getpid()
    finally:
        guarded.close()


def test_the_host_command_puts_the_package_folder_first_on_another_interpreters_path():
    from robofollow_ros.policy.isolation.client import HOST_MODULE, host_command

    assert host_command(None) == [sys.executable, '-m', HOST_MODULE]
    python, flag, bootstrap = host_command('/opt/other/bin/python')
    assert (python, flag) == ('/opt/other/bin/python', '-c')
    assert f'sys.path.insert(0, {str(package_root())!r})' in bootstrap and HOST_MODULE in bootstrap


# --- with LeRobot ---------------------------------------------------------------------------------------------


def test_the_adapter_returns_the_policys_own_chunk_unnormalised(checkpoint):
    python = lerobot_interpreter()
    script = f"""
import json, sys
import numpy as np, torch
sys.path.insert(0, {str(package_root())!r})
from robofollow_ros.policy.lerobot_policy import LeRobotPolicy
from robofollow_ros.policy.observation import Observation
rng = np.random.default_rng(0)
cameras = ('cam_high', 'cam_left_wrist', 'cam_right_wrist')
images = {{c: rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for c in cameras}}
observation = Observation(images=images, state=rng.uniform(-1, 1, 14).astype(np.float32))
policy = LeRobotPolicy({str(checkpoint)!r})
policy.reset(); policy.set_instruction('pick up the block')
chunk = policy.predict(observation)
policy.reset()
batch = policy.preprocess(policy.inputs(observation))
with torch.inference_mode():
    own = policy.policy.predict_action_chunk(batch)[0]
    own = torch.stack([policy.postprocess(row[None]).reshape(-1) for row in own]).numpy()
print(json.dumps({{'shape': list(chunk.shape), 'difference': float(np.abs(chunk - own[: len(chunk)]).max()),
                  'spread': float(chunk.std(axis=0).max())}}))
"""
    done = subprocess.run([python, '-c', script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result['shape'] == [20, 14]  # n_action_steps rows, 14 values
    assert result['difference'] < 1e-5 and result['spread'] > 0.0


def test_a_batch_of_episodes_gets_what_each_query_alone_gets(checkpoint):
    """``predict_batch`` (``serve-policy --batch``): one forward pass for four episodes' observations, each with its
    own instruction, equal to the chunks ``predict`` gives each alone (to float32 rounding: the batched matrix
    products sum in another order)."""
    python = lerobot_interpreter()
    script = f"""
import json, sys
import numpy as np
sys.path.insert(0, {str(package_root())!r})
from robofollow_ros.policy.lerobot_policy import LeRobotPolicy
from robofollow_ros.policy.observation import Observation
rng = np.random.default_rng(1)
cameras = ('cam_high', 'cam_left_wrist', 'cam_right_wrist')
observations = [
    Observation(images={{c: rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for c in cameras}},
                state=rng.uniform(-1, 1, 14).astype(np.float32))
    for _ in range(4)
]
instructions = ['pick up the block', 'pick up the block', 'put it left', 'put it right']
policy = LeRobotPolicy({str(checkpoint)!r})
alone = []
for observation, instruction in zip(observations, instructions):
    policy.reset(); policy.set_instruction(instruction)
    alone.append(policy.predict(observation))
batched = policy.predict_batch(observations, instructions)
print(json.dumps({{'batchable': policy.batchable, 'shapes': [list(c.shape) for c in batched],
                  'difference': max(float(np.abs(a - b).max()) for a, b in zip(alone, batched)),
                  'between': float(np.abs(alone[0] - alone[2]).max())}}))
"""
    done = subprocess.run([python, '-c', script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result['batchable'] and result['shapes'] == [[20, 14]] * 4
    assert result['difference'] < 1e-5 and result['between'] > 1e-4, result


def test_robofollow_eval_runs_the_checkpoint_in_the_sandbox(checkpoint, tmp_path):
    if sandbox_problem() is not None:
        pytest.skip(f'no sandbox here: {sandbox_problem()}')
    out = tmp_path / 'run'
    command = [sys.executable, '-m', 'robofollow_ros', 'eval', '--in-process', '--policy', 'lerobot']
    command += ['--policy-kwargs', json.dumps({'path': str(checkpoint)}), '--level', 'L0']
    command += ['--tasks', 'pickup_yellow_block_1_left', '--out', str(out)]
    env = {**os.environ, 'MUJOCO_GL': os.environ.get('MUJOCO_GL', 'egl'), LEROBOT_PYTHON_ENV: lerobot_interpreter()}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = [json.loads(line) for line in (out / 'results.jsonl').read_text().splitlines()]
    assert record['policy'] == 'lerobot' and record['isolation'] == 'sandbox'
    assert record['policy_error'] is None and record['queries'] == 10
    assert record['executed_rows'] == 10 * 20  # the checkpoint's 20 actions per query, images scaled to 64x48
    assert main(['report', str(out / 'results.jsonl'), '--out', str(tmp_path / 'report')]) == 0
    assert (tmp_path / 'report' / 'summary.md').is_file()


@pytest.mark.ros
def test_the_checkpoint_gives_the_same_record_in_process_and_over_the_graph(checkpoint, tmp_path, monkeypatch):
    """``robofollow eval --policy lerobot`` in-process and the graph's bridge (``policy:=lerobot``) run the same
    checkpoint in the same sandbox and score the same episode alike."""
    if sandbox_problem() is not None:
        pytest.skip(f'no sandbox here: {sandbox_problem()}')
    from graph_helpers import read_records, run_launch

    monkeypatch.setenv(LEROBOT_PYTHON_ENV, lerobot_interpreter())
    kwargs = json.dumps({'path': str(checkpoint)})
    task = 'L0_pickup_yellow_block_1_left'
    local = tmp_path / 'in_process'
    command = ['eval', '--in-process', '--policy', 'lerobot', '--policy-kwargs', kwargs, '--tasks', task]
    assert main([*command, '--out', str(local), '--quiet']) == 0
    graph = tmp_path / 'graph'
    result = run_launch(18, timeout=600.0, policy='lerobot', policy_kwargs=kwargs, task_ids=task, out=str(graph))
    assert result.returncode == 0, result.stdout[-4000:]
    ((mine,), (theirs,)) = (read_records(folder / 'results.jsonl') for folder in (local, graph))
    assert mine['policy_error'] is None and theirs['isolation'] == mine['isolation'] == 'sandbox'
    for field in ('policy_error', 'queries', 'executed_rows', 'intent_score', 'exec_score', 'completion_ok', 'frames'):
        assert theirs.get(field) == mine.get(field), field
