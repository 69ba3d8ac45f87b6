"""A chunk's fate does not depend on where its trial runs: in-process the chunk limits of the graph's policy bridge
apply as well (a learned policy scored IS 1.00 in-process and was refused ``invalid_chunk`` over the graph for a
gripper at 1.12), and gripper targets past fully open or closed are clamped in both, arm targets refused in both."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from graph_helpers import read_records, run_launch

from robofollow_ros.bags import load_episode
from robofollow_ros.cli import main
from robofollow_ros.errors import PolicyError
from robofollow_ros.robot.description import home_state
from robofollow_ros.safety.chunk_limits import DEFAULT_MAX_ROW_STEP, ChunkLimits

TASK = 'L0_pickup_yellow_block_1_left'
CASES = [
    ('graph_policies:nan_policy', 0, 'non-finite value at row 2, column 3'),
    ('graph_policies:hold_then_out_of_limits', 10, 'outside its limits'),
    ('graph_policies:hold_then_too_fast', 10, 'right_shoulder by 1.0000 in one row'),
    ('graph_policies:grippers_overshooting', 100, None),
]


def in_process(policy: str, out: Path) -> dict:
    assert main(['eval', '--in-process', '--policy', policy, '--tasks', TASK, '--out', str(out), '--quiet']) == 0
    (record,) = read_records(out / 'results.jsonl')
    return record


@pytest.mark.parametrize(('policy', 'executed', 'reason'), CASES)
def test_in_process_a_chunk_is_checked_as_the_graph_checks_it(policy, executed, reason, tmp_path):
    record = in_process(policy, tmp_path)
    assert record['executed_rows'] == executed
    if reason is None:
        assert record['policy_error'] is None and record['queries'] == 10
    else:
        assert record['error_kind'] == 'invalid_chunk' and reason in record['policy_error']


def test_gripper_targets_are_clamped_and_arm_targets_refused():
    limits = ChunkLimits.for_robot('aloha', max_row_step=DEFAULT_MAX_ROW_STEP)
    home = home_state('aloha')
    chunk = np.tile(home, (3, 1)).astype(np.float32)
    chunk[:, 6], chunk[:, 13] = 1.12, -0.05
    limits.check(chunk, home)
    shaped = limits.shape(chunk, home)
    assert shaped.dtype == np.float32 and (shaped[:, 6] == 1.0).all() and (shaped[:, 13] == 0.0).all()
    np.testing.assert_array_equal(np.delete(shaped, [6, 13], axis=1), np.delete(chunk, [6, 13], axis=1))
    chunk[1, 0] = 9.0
    with pytest.raises(PolicyError, match=r'row 1 puts .*waist at 9\.0000, outside its limits'):
        limits.check(chunk, home)


@pytest.mark.ros
def test_over_the_graph_overshooting_grippers_are_clamped_as_in_process(tmp_path):
    result = run_launch(
        38, policy='graph_policies:grippers_overshooting', task_ids=TASK, record='bag', out=str(tmp_path)
    )
    assert result.returncode == 0, result.stdout[-4000:]
    (record,) = read_records(tmp_path / 'results.jsonl')
    local = in_process('graph_policies:grippers_overshooting', tmp_path / 'in_process')
    for field in ('policy_error', 'queries', 'executed_rows', 'intent_score', 'exec_score', 'completion_ok', 'frames'):
        assert record.get(field) == local.get(field), field
    grips = load_episode(tmp_path / record['episode_file']).joint_positions[:, [6, 13]]
    assert grips.min() >= -1e-6 and grips.max() <= 1.0 + 1e-6
