"""``ChunkLimits`` (``safety/chunk_limits.py``), the simulation's check of a chunk in the graph's bridge and in-process:
arm targets inside the URDF limits, rows at most ``max_row_step`` apart (the first from the state), grippers clamped
into 0..1 before both checks; and in real mode nothing but the grippers' reach."""

from __future__ import annotations

import numpy as np
import pytest

from robofollow_ros.errors import PolicyError
from robofollow_ros.robot.description import home_state, load_robot
from robofollow_ros.safety.chunk_limits import DEFAULT_MAX_ROW_STEP, LIMIT_TOLERANCE, ChunkLimits, GripperReach
from robofollow_ros.state_layout import GRIP_COLUMNS

LIMITS = ChunkLimits.for_robot('aloha', max_row_step=DEFAULT_MAX_ROW_STEP)
"""For reading; every test that checks ``for_robot`` itself builds its own (mutation testing imports this once)."""
HOME = home_state('aloha')


def steady(rows: int = 4) -> np.ndarray:
    return np.tile(HOME, (rows, 1))


def test_the_limits_are_the_urdfs_with_one_step_per_joint_and_a_full_gripper_stroke():
    description = load_robot('aloha')
    limits = ChunkLimits.for_robot('aloha', max_row_step=0.25, max_gripper_step=0.75)
    np.testing.assert_array_equal(limits.lower, description.state_lower())
    np.testing.assert_array_equal(limits.upper, description.state_upper())
    assert (np.delete(limits.max_row_step, GRIP_COLUMNS) == 0.25).all()
    assert (limits.max_row_step[GRIP_COLUMNS] == 0.75).all() and limits.clamp_grippers
    assert limits.names == description.joint_layout.names and tuple(GRIP_COLUMNS) == (6, 13)
    assert (ChunkLimits.for_robot('aloha', max_row_step=0.5).max_row_step[GRIP_COLUMNS] == 1.0).all()
    assert limits.gripper_reach is None


def test_targets_exactly_at_the_tolerances_pass():
    chunk = steady(2)
    chunk[:, 1] = LIMITS.lower[1] - LIMIT_TOLERANCE
    chunk[:, 2] = LIMITS.upper[2] + LIMIT_TOLERANCE
    LIMITS.check(chunk, chunk[0].copy())
    state = HOME.copy()
    state[0] = 0.0
    step = steady(1)
    step[0, 0] = DEFAULT_MAX_ROW_STEP + LIMIT_TOLERANCE
    LIMITS.check(step, state)


def test_an_arm_target_at_its_limit_passes_and_past_the_tolerance_is_refused_by_name():
    chunk = steady()
    chunk[:, 1] = LIMITS.lower[1]
    start = chunk[0]
    LIMITS.check(chunk, start)
    chunk[2, 1] = LIMITS.lower[1] - 2 * LIMIT_TOLERANCE
    with pytest.raises(PolicyError, match=r'^action chunk row 2 puts left_shoulder at -1\.85\d+, outside its limits'):
        LIMITS.check(chunk, start)
    high = steady()
    high[0, 9] = LIMITS.upper[9] + 0.1
    with pytest.raises(
        PolicyError, match=rf'row 0 puts right_elbow .* \[{LIMITS.lower[9]:.4f}, {LIMITS.upper[9]:.4f}\]'
    ):
        LIMITS.check(high, HOME)


def test_a_step_of_max_row_step_passes_and_more_is_refused_from_the_state_on():
    chunk = steady()
    chunk[:, 0] += DEFAULT_MAX_ROW_STEP * np.array([0.0, 1.0, 2.0, 2.0])
    LIMITS.check(chunk, HOME)
    chunk[2:, 0] += 0.01
    with pytest.raises(PolicyError, match=r'row 2 moves left_waist by 0\.5100 in one row \(at most 0\.5000\)'):
        LIMITS.check(chunk, HOME)
    away = HOME.copy()
    away[7] -= 0.6
    with pytest.raises(PolicyError, match=r'row 0 moves right_waist by 0\.6000'):
        LIMITS.check(steady(), away)


def test_grippers_past_open_or_closed_are_clamped_before_both_checks():
    chunk = steady(3).astype(np.float32)
    chunk[:, 6], chunk[:, 13] = 1.12, -0.3
    state = HOME.copy()
    state[[6, 13]] = 0.0, 0.8
    LIMITS.check(chunk, state)  # 0 -> 1.12 is a step of 1.0 once clamped, 0.8 -> -0.3 one of 0.8
    shaped = LIMITS.shape(chunk, state)
    assert shaped.dtype == np.float32 and shaped is not chunk
    np.testing.assert_array_equal(shaped[:, [6, 13]], np.tile([1.0, 0.0], (3, 1)))
    np.testing.assert_array_equal(np.delete(shaped, [6, 13], axis=1), np.delete(chunk, [6, 13], axis=1))
    assert chunk[0, 6] == np.float32(1.12)  # the policy's chunk is left as it was


def test_without_clamping_a_gripper_past_its_range_is_refused():
    strict = ChunkLimits(lower=LIMITS.lower, upper=LIMITS.upper, max_row_step=LIMITS.max_row_step, names=LIMITS.names)
    chunk = steady()
    chunk[1, 13] = 1.05
    with pytest.raises(PolicyError, match=r'row 1 puts right_left_finger at 1\.0500'):
        strict.check(chunk, HOME)
    assert strict.shape(chunk, HOME) is chunk


def test_the_real_cells_limits_refuse_nothing_and_move_the_grippers_at_their_speed():
    reach = GripperReach(columns=(6, 13), step=np.array([0.1, 0.1]), lower=np.zeros(2), upper=np.ones(2), refuse=False)
    real = ChunkLimits.for_real_cell(LIMITS.names, gripper_reach=reach)
    chunk = steady()
    chunk[:, 0] = 50.0
    chunk[:, 6] = 0.0
    real.check(chunk, HOME)
    state = HOME.copy()
    state[6] = 1.0
    shaped = real.shape(chunk, state)
    np.testing.assert_allclose(shaped[:, 6], [0.9, 0.8, 0.7, 0.6])
    assert (shaped[:, 0] == 50.0).all()
    assert ChunkLimits.for_real_cell(LIMITS.names, gripper_reach=None).shape(chunk, state) is chunk


def reach(*, refuse: bool) -> GripperReach:
    return GripperReach(columns=(6, 13), step=np.array([0.1, 0.1]), lower=np.zeros(2), upper=np.ones(2), refuse=refuse)


def test_a_gripper_goes_up_and_down_one_step_a_row_and_an_integer_chunk_is_moved_as_floats():
    state = HOME.copy()
    state[[6, 13]] = 0.0, 1.0
    chunk = np.tile(HOME, (3, 1)).astype(np.int64)
    chunk[:, 6], chunk[:, 13] = 1, 0
    shaped = reach(refuse=False).apply(chunk, state)
    np.testing.assert_allclose(shaped[:, 6], [0.1, 0.2, 0.3])
    np.testing.assert_allclose(shaped[:, 13], [0.9, 0.8, 0.7])


def test_a_gripper_target_outside_its_range_is_approached_from_within_the_range_or_left_to_refuse():
    state = HOME.copy()
    state[[6, 13]] = 1.0, 0.0
    chunk = np.tile(HOME, (3, 1))
    chunk[:, 6], chunk[:, 13] = 1.3, -0.3
    approached = reach(refuse=False).apply(chunk, state)
    np.testing.assert_allclose(approached[:, 6], [1.1, 1.1, 1.1])  # from where the filter's clamp leaves it
    np.testing.assert_allclose(approached[:, 13], [-0.1, -0.1, -0.1])
    refused = reach(refuse=True).apply(chunk, state)
    np.testing.assert_allclose(refused[:, [6, 13]], chunk[:, [6, 13]])
    edge = chunk.copy()
    edge[:, 6], edge[:, 13] = 1.0 + LIMIT_TOLERANCE, 0.0 - LIMIT_TOLERANCE
    state[[6, 13]] = 0.5, 0.5
    np.testing.assert_allclose(reach(refuse=True).apply(edge, state)[:, 6], [0.6, 0.7, 0.8])  # inside: reached
    np.testing.assert_allclose(reach(refuse=True).apply(edge, state)[:, 13], [0.4, 0.3, 0.2])
