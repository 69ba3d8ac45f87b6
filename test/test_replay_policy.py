"""``replay``: recorded joint positions (episode bag or trajectory JSON) played back as action chunks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robofollow_ros.bags.replay import ReplayPolicy
from robofollow_ros.bags.writer import write_episode_bag
from robofollow_ros.benchmark.types import ARMS
from robofollow_ros.cli import main
from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.factory import make_policy
from robofollow_ros.referee.trajectory import Trajectory

TASK = 'L0_pickup_yellow_block_2'
META = {
    'task_id': TASK,
    'level': 'L0',
    'layout': 'default',
    'seed': 1,
    'round': 1,
    'arm': 'left',
    'instruction': 'x',
    'variant': 'published',
}


def recorded_joints(frames):
    joints = np.zeros((frames, 14))
    joints[:, :6] = np.linspace(0.0, 0.3, frames)[:, None] * np.arange(1, 7)
    joints[:, 7:13] = -joints[:, :6]
    joints[:, 6] = joints[:, 13] = 1.0
    return joints


def trajectory(frames):
    return Trajectory(
        t=np.arange(frames) * 0.06,
        ee={arm: np.tile([0.0, -0.1, 0.9], (frames, 1)) for arm in ARMS},
        grip={arm: np.ones(frames) for arm in ARMS},
        obj_pos={'yellow_block_2': np.tile([0.0, -0.1, 0.76], (frames, 1))},
    )


def test_replay_of_an_episode_bag_returns_its_joint_rows_in_chunks(tmp_path):
    joints = recorded_joints(12)
    bag = write_episode_bag(tmp_path / 'episode', meta=META, trajectory=trajectory(12), joint_positions=joints)
    policy = make_policy('replay', kwargs={'path': str(bag), 'rows': 5})
    policy.reset()
    chunks = [policy.predict(None) for _ in range(4)]
    assert [chunk.shape[0] for chunk in chunks] == [5, 5, 2, 1]
    np.testing.assert_allclose(np.concatenate(chunks[:3]), joints, atol=1e-6)
    np.testing.assert_allclose(chunks[3][0], joints[-1], atol=1e-6)
    policy.reset()
    np.testing.assert_allclose(policy.predict(None), joints[:5], atol=1e-6)


def test_replay_stride_skips_recorded_rows(tmp_path):
    path = tmp_path / 'episode.json'
    joints = recorded_joints(9)
    path.write_text(json.dumps({'frames': [{'t': i, 'joints': row.tolist()} for i, row in enumerate(joints)]}))
    policy = ReplayPolicy(str(path), rows=50, stride=4)
    np.testing.assert_allclose(policy.predict(None), joints[::4], atol=1e-6)


def test_a_bag_without_arm_joints_cannot_be_replayed(tmp_path):
    bag = write_episode_bag(tmp_path / 'episode', meta=META, trajectory=trajectory(6))
    with pytest.raises(PolicyError, match='lacks arm joints'):
        ReplayPolicy(str(bag))


@pytest.mark.parametrize(
    ('document', 'message'),
    [
        ({'frames': [{'t': 0}]}, 'no "joints"'),
        ({'frames': []}, 'not a trajectory document'),
        ({'frames': [{'joints': [0.0] * 13}]}, 'expected 14 joint positions'),
        ({'frames': [{'joints': ['a'] * 14}]}, 'not numbers'),
    ],
)
def test_unusable_replay_files_are_one_clear_error(tmp_path, document, message):
    path = tmp_path / 'episode.json'
    path.write_text(json.dumps(document))
    with pytest.raises(PolicyError, match=message):
        ReplayPolicy(str(path))


@pytest.mark.parametrize('source', ['missing', 'in-process bag', 'no path'])
def test_an_unusable_replay_source_is_refused_before_the_run_starts(tmp_path, capsys, source):
    if source == 'in-process bag':  # gripper joints only, as eval --in-process --record bag writes them
        path = write_episode_bag(tmp_path / 'episode', meta=META, trajectory=trajectory(6))
        message = 'lacks arm joints; in-process bags hold only the grippers: record the episode over the ROS graph'
    else:
        path = tmp_path / 'nothing'
        message = f'replay source {path} does not exist'
    kwargs = json.dumps({'path': str(path)} if source != 'no path' else {'rows': 5})
    if source == 'no path':
        message = '--policy replay needs --policy-kwargs \'{"path": '
    args = ['eval', '--in-process', '--policy', 'replay', '--policy-kwargs', kwargs, '--tasks', TASK, '--quiet']
    assert main([*args, '--out', str(tmp_path / 'run')]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'robofollow eval: error: --policy replay' in err and message in err, err
    assert not (tmp_path / 'run').exists()  # refused before the run folder was made


@pytest.mark.sim
def test_replay_drives_an_in_process_episode_through_the_recorded_rows(tmp_path):
    from robofollow_ros.benchmark import registry
    from robofollow_ros.sim.env import CellEnv

    task = registry.get_task(TASK)
    with CellEnv(render=False) as env:
        start = env.reset(task, seed=1).state
    joints = np.tile(start, (12, 1))
    joints[:, 5] += np.linspace(0.0, 0.2, 12)
    path = tmp_path / 'episode.json'
    path.write_text(json.dumps({'frames': [{'joints': row.tolist()} for row in joints]}))
    kwargs = json.dumps({'path': str(path), 'rows': 5})
    args = ['eval', '--in-process', '--policy', 'replay', '--policy-kwargs', kwargs, '--tasks', TASK, '--quiet']
    assert main([*args, '--out', str(tmp_path / 'run')]) == 0
    [record] = [json.loads(line) for line in (tmp_path / 'run' / 'results.jsonl').read_text().splitlines()]
    assert record['policy_error'] is None and record['queries'] == 10
    assert record['executed_rows'] == 5 + 5 + 2 + 7
