"""The node graph over real DDS (rclpy, Fast DDS with the shipped shared-memory profile, private domains).

One task of each scene with the expert: the live record equals the in-process record of the same task and seed,
the recorded bag holds the same trajectory frames as the in-process episode and re-scores to the live record;
the language-blind policy scores lower than the expert on an L1 task.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from graph_helpers import comparable, read_records, run_launch

from robofollow_ros.bags import read_episode_bag
from robofollow_ros.cli.score import score_path
from robofollow_ros.evaluation.suite import SuiteOptions, run_suite
from robofollow_ros.referee.trajectory_json import load_trajectory

pytestmark = pytest.mark.ros

TASKS = (
    'L1_s11_pick_right_of_red',
    'L1_scene2_1_01_pickup_red_cylinder_larger_red_object',
    'L1_scene3_1__r_pick2_via4_to6_short_front',
    'L1_scene4_4_01_l1_s44_if_bowl_nonempty_then_l_pick_blue_else_r_stack',
)
BLIND_TASK = 'L1_s11_pick_right_of_red'


@pytest.fixture(scope='module')
def expert_runs(tmp_path_factory) -> tuple[Path, Path]:
    live = tmp_path_factory.mktemp('live')
    result = run_launch(21, policy='expert', task_ids=','.join(TASKS), record='bag', out=str(live))
    assert result.returncode == 0, result.stdout[-4000:]
    offline = tmp_path_factory.mktemp('in_process')
    run_suite(SuiteOptions(out=offline, policy='expert', task_ids=TASKS, record='json'), progress=False)
    return live, offline


def test_live_records_equal_in_process_records(expert_runs) -> None:
    live, offline = expert_runs
    live_records = {record['task_id']: record for record in read_records(live / 'results.jsonl')}
    offline_records = {record['task_id']: record for record in read_records(offline / 'results.jsonl')}
    assert set(live_records) == set(TASKS) == set(offline_records)
    for task_id in TASKS:
        assert comparable(live_records[task_id]) == comparable(offline_records[task_id]), task_id
        assert live_records[task_id]['sim_seconds'] == pytest.approx(offline_records[task_id]['sim_seconds'], abs=1e-6)
        assert live_records[task_id]['completion_ok'], task_id
    run = (live / 'run.json').read_text()
    assert '"ros-graph"' in run and '"status": "complete"' in run


def test_recorded_bags_hold_the_in_process_frames_and_rescore_to_the_live_record(expert_runs) -> None:
    live, offline = expert_runs
    live_records = {record['task_id']: record for record in read_records(live / 'results.jsonl')}
    for task_id in TASKS:
        bag = live / live_records[task_id]['episode_file']
        meta, recorded = read_episode_bag(bag)
        assert meta['task_id'] == task_id and meta['seed'] == live_records[task_id]['seed']
        reference = load_trajectory(offline / 'episodes' / f'{task_id}__r01.json').trajectory
        assert len(recorded) == len(reference), task_id
        np.testing.assert_allclose(recorded.t - recorded.t[0], reference.t - reference.t[0], atol=1e-6)
        for arm in ('left', 'right'):
            np.testing.assert_allclose(recorded.ee[arm], reference.ee[arm], atol=1e-9)
            np.testing.assert_allclose(recorded.grip[arm], reference.grip[arm], atol=1e-9)
        assert set(recorded.obj_pos) == set(reference.obj_pos)
        for name in reference.obj_pos:
            np.testing.assert_allclose(recorded.obj_pos[name], reference.obj_pos[name], atol=1e-9)
        rescored = score_path(bag)
        assert {k: rescored[k] for k in comparable(rescored) if k in live_records[task_id]} == {
            k: v for k, v in comparable(live_records[task_id]).items() if k in rescored
        }


def test_blind_policy_scores_lower_than_the_expert_on_an_l1_task(expert_runs, tmp_path) -> None:
    live, _ = expert_runs
    result = run_launch(22, policy='blind', task_ids=BLIND_TASK, out=str(tmp_path))
    assert result.returncode == 0, result.stdout[-4000:]
    (blind,) = read_records(tmp_path / 'results.jsonl')
    expert = next(r for r in read_records(live / 'results.jsonl') if r['task_id'] == BLIND_TASK)
    assert blind['policy'] == 'blind' and blind['policy_error'] is None
    assert blind['intent_score'] < expert['intent_score']
    assert not blind['completion_ok'] and expert['completion_ok']
