"""Golden tests, Scene 1: source selection with the fingertip proxy, relative placement, final-layout bonus,
wrong-arm penalty and completion. Expected scores are worked out by hand from protocol §4."""

from __future__ import annotations

import math

import numpy as np
import pytest
from golden.episodes import HOME, pick, score, stage_scores, standing, still
from golden.scenes import S1, task
from hypothesis import given, settings
from hypothesis import strategies as st
from transforms3d.quaternions import quat2mat

from robofollow_ros.benchmark.types import GroundTruth
from robofollow_ros.errors import TrajectoryError
from robofollow_ros.referee.score import score_episode
from robofollow_ros.referee.signals import fingertip_points
from robofollow_ros.referee.synthetic import Motion

pytestmark = pytest.mark.usefixtures('scoring_variant')

OBJECTS = standing(S1, {'red_cylinder': 0.765})
BLOCK_1 = OBJECTS['yellow_block_1']  # (-0.02, -0.04, 0.76)
CYLINDER = OBJECTS['red_cylinder']  # (0.10, -0.04, 0.765)

PICKUP = task('L0_pickup_yellow_block_1_left', GroundTruth(1, 'pickup', 'left', 'yellow_block_1'), S1)
BEHIND = task(
    'L0_place_yellow_block_1_behind_red_cylinder',
    GroundTruth(1, 'place_relative', 'right', 'yellow_block_1', target='red_cylinder', relation='behind'),
    S1,
)


def pickup_motion(**knobs) -> Motion:
    motion = still(Motion(duration=10.0), OBJECTS)
    return pick(motion, arm='left', name='yellow_block_1', start=BLOCK_1, **knobs)


def place_motion(offset_from_anchor=(0.0, 0.06), *, place_z=0.76, **knobs) -> Motion:
    place = (CYLINDER[0] + offset_from_anchor[0], CYLINDER[1] + offset_from_anchor[1], place_z)
    motion = still(Motion(duration=10.0), OBJECTS)
    return pick(motion, arm='right', name='yellow_block_1', start=BLOCK_1, place=place, **knobs)


def test_clean_pickup_scores_full():
    record = score(PICKUP, pickup_motion(), S1)
    # source select 0.8 + finish 0.2 = 1.0 for both Intent and Execution
    assert stage_scores(record) == [('stage1_source_select', 0.8, 0.8), ('stage3_finish', 0.2, 0.2)]
    assert (record['intent_score'], record['exec_score']) == (1.0, 1.0)
    assert record['intent_ok'] and record['exec_ok'] and record['completion_ok']
    assert record['completion_signal'] == 'totals'
    assert record['events']['close'] == pytest.approx(2.22)  # first sample <= 0.35 on the 2.0-2.3 s ramp


@pytest.mark.parametrize(('offset', 'expected'), [(0.069, 1.0), (0.071, 0.0)])
def test_source_radius_is_strictly_below_seven_centimetres(offset, expected):
    # EE 0.069 m behind the block: nearest and < 0.07 → 0.8 + 0.2; at 0.071 stage 1 fails and gates the finish → 0
    record = score(PICKUP, pickup_motion(offset=(0.0, offset)), S1)
    assert record['intent_score'] == expected
    assert record['exec_score'] == expected
    assert record['completion_ok'] is (expected == 1.0)


def test_grasp_nearest_to_another_object_fails_intent():
    motion = still(Motion(duration=10.0), OBJECTS)
    pick(motion, arm='left', name='yellow_block_1', start=BLOCK_1, offset=(-0.11, 0.0))  # EE over the red ball
    record = score(PICKUP, motion, S1)
    assert 'red_sphere' in record['stages'][0]['intent_reason']
    assert (record['intent_score'], record['exec_score']) == (0.0, 0.0)


@pytest.mark.parametrize(('lift', 'exec_score'), [(0.011, 1.0), (0.009, 0.0)])
def test_lift_threshold_one_centimetre(lift, exec_score):
    # Intent 0.8 + 0.2 either way; Execution needs a rise >= 0.01: 0.8 + 0.2 = 1.0, else 0 + gated finish 0 = 0
    record = score(PICKUP, pickup_motion(lift=lift), S1)
    assert record['intent_score'] == 1.0
    assert record['exec_score'] == exec_score
    assert record['completion_ok'] is (exec_score == 1.0)


def test_fingertip_proxy_is_tcp_plus_rotated_offset():
    # TCP yawed 90° (its +x along world +y): fingertip = TCP + (0, 0.04, 0). TCP 0.10 m in front of the block
    # → fingertip 0.06 m in front: the block is nearest (green ball is 0.08 away) and 0.06 < 0.07 → pass.
    # Scored at the TCP instead, the green ball (0.04 m) would be nearest.
    yaw90 = (math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4))
    motion = pickup_motion(offset=(0.0, -0.10))
    motion.ee_quat('left', (0.0, yaw90))
    record = score(PICKUP, motion, S1)
    assert record['stages'][0]['intent'] == 0.8
    assert '0.060 m' in record['stages'][0]['intent_reason']


def test_scene1_without_ee_quat_is_a_clear_error():
    trajectory = pickup_motion().sample(1 / 0.06)
    bare = type(trajectory)(t=trajectory.t, ee=trajectory.ee, grip=trajectory.grip, obj_pos=trajectory.obj_pos)
    with pytest.raises(TrajectoryError, match='ee_quat'):
        score_episode(PICKUP, bare, layout=S1)


def test_other_arm_closing_costs_point_two_of_each_full_total():
    motion = pickup_motion()
    motion.grip('right', (8.0, 1.0), (8.3, 0.0))  # right gripper closes at home, after everything
    record = score(PICKUP, motion, S1)
    # 1.0 - 0.2 = 0.8 on both totals (finish Intent and Execution full); pickup CR: 0.8 >= 0.8 → complete
    assert record['wrong_arm_intervened'] is True
    assert (record['intent_score'], record['exec_score']) == (0.8, 0.8)
    assert [(a['name'], a['score'], a['amount']) for a in record['adjustments']] == [
        ('wrong_arm_penalty', 'intent', -0.2),
        ('wrong_arm_penalty', 'exec', -0.2),
    ]
    assert record['completion_ok'] is True
    assert not record['intent_ok']


def test_wrong_arm_penalty_needs_a_full_last_stage():
    motion = pickup_motion(lift=0.009)
    motion.grip('right', (8.0, 1.0), (8.3, 0.0))
    record = score(PICKUP, motion, S1)
    # IS: 0.8 + finish 0.2 = 1.0 - 0.2 = 0.8; ES: 0 + finish gated 0 → no exec penalty (last stage not full) → 0
    assert (record['intent_score'], record['exec_score']) == (0.8, 0.0)


def test_clean_relative_placement_scores_full_and_completes():
    record = score(BEHIND, place_motion(), S1)
    # 0.4 + 0.4 + 0.2 = 1.0 each; the block stays 0.06 m behind the cylinder → final_target_ok
    assert stage_scores(record) == [
        ('stage1_source_select', 0.4, 0.4),
        ('stage2_relative_place', 0.4, 0.4),
        ('stage3_finish', 0.2, 0.2),
    ]
    assert record['final_target_ok'] is True
    assert (record['intent_bonus'], record['exec_bonus']) == (0.0, 0.0)  # totals >= 0.5: no bonus
    assert record['completion_ok'] is True and record['completion_signal'] == 'final_target_ok'
    assert record['events']['open'] == pytest.approx(5.82)


@pytest.mark.parametrize(('distance', 'holds'), [(0.119, True), (0.121, False)])
def test_relation_distance_limit(distance, holds):
    record = score(BEHIND, place_motion((0.0, distance)), S1)
    # holds: 1.0 / 1.0; broken: stage 1 0.4, relation 0, finish gated 0 → 0.4 / 0.4, no bonus, incomplete
    assert record['intent_score'] == (1.0 if holds else 0.4)
    assert record['exec_score'] == (1.0 if holds else 0.4)
    assert record['final_target_ok'] is holds
    assert record['completion_ok'] is holds


@pytest.mark.parametrize(('angle_deg', 'holds'), [(44.0, True), (46.0, False)])
def test_relation_direction_within_45_degrees(angle_deg, holds):
    # cos 44° = 0.719 >= 0.7071 holds; cos 46° = 0.695 does not
    angle = math.radians(angle_deg)
    record = score(BEHIND, place_motion((0.08 * math.sin(angle), 0.08 * math.cos(angle))), S1)
    assert record['stages'][1]['intent'] == (0.4 if holds else 0.0)


@pytest.mark.parametrize(('height', 'on_table'), [(0.019, True), (0.021, False)])
def test_on_table_tolerance(height, on_table):
    record = score(BEHIND, place_motion(place_z=0.76 + height), S1)
    assert record['stages'][1]['intent'] == (0.4 if on_table else 0.0)
    assert record['final_target_ok'] is on_table


def test_no_release_keeps_intent_but_not_execution():
    record = score(BEHIND, place_motion(release=False), S1)
    # Intent: 0.4 + 0.4 + finish 0.2 (completion = relation frame) = 1.0; Execution: 0.4 + 0 + gated 0 = 0.4.
    # The block leaves with the arm, so the final layout fails and the episode is incomplete.
    assert (record['intent_score'], record['exec_score']) == (1.0, 0.4)
    assert 'never opens' in record['stages'][1]['exec_reason']
    assert record['final_target_ok'] is False
    assert record['completion_ok'] is False


def test_layout_destroyed_after_release_fails_completion_despite_full_scores():
    motion = place_motion()
    released = (0.10, 0.02, 0.76)
    motion.obj(
        'yellow_block_1',
        (0.0, BLOCK_1),
        (2.5, BLOCK_1),
        (3.5, (-0.02, -0.04, 0.86)),
        (5.0, (0.10, 0.02, 0.86)),
        (5.5, released),
        (8.5, released),
        (8.6, (0.10, 0.09, 0.76)),  # knocked to 0.13 m behind the cylinder: out of range
    )
    record = score(BEHIND, motion, S1)
    assert (record['intent_score'], record['exec_score']) == (1.0, 1.0)
    assert record['final_target_ok'] is False
    assert record['completion_ok'] is False


def test_final_layout_bonus_when_the_scored_stages_fail():
    # The grasp is 0.075 m off (stage 1 fails, everything gated to 0) yet the block ends behind the cylinder:
    # IS = 0 + 0.3 = 0.3, ES = 0 + 0.3 = 0.3, and Completion follows final_target_ok → complete.
    record = score(BEHIND, place_motion(offset=(0.0, 0.075)), S1)
    assert [s['intent'] for s in record['stages']] == [0.0, 0.0, 0.0]
    assert (record['intent_score'], record['exec_score']) == (0.3, 0.3)
    assert (record['intent_bonus'], record['exec_bonus']) == (0.3, 0.3)
    assert record['completion_ok'] is True


@pytest.mark.parametrize(('knock_at', 'ok'), [(9.36, True), (9.42, False)])
def test_final_window_is_the_last_ten_frames(knock_at, ok):
    # 10 s at 1/0.06 Hz: last sample 9.96 s; the window holds samples after 9.96 - 0.6 = 9.36 s (9.42 ... 9.96)
    motion = place_motion()
    spot, away = (0.10, 0.02, 0.76), (0.10, 0.09, 0.76)
    motion.obj(
        'yellow_block_1',
        (0.0, BLOCK_1),
        (2.5, BLOCK_1),
        (3.5, (-0.02, -0.04, 0.86)),
        (5.0, (0.10, 0.02, 0.86)),
        (5.5, spot),
        (8.99, spot),
        (9.0, away),
        (knock_at, away),
        (knock_at + 0.01, spot),
    )
    record = score(BEHIND, motion, S1)
    assert record['final_target_ok'] is ok
    assert record['final_target_window'] == [pytest.approx(9.42), pytest.approx(9.96)]


@pytest.mark.parametrize(('duration', 'ok'), [(0.54, True), (0.48, False)])
def test_final_layout_needs_ten_frames(duration, ok):
    # The block already sits behind the cylinder and nobody moves: only the final-layout check can score.
    # 0.54 s = 10 frames → ok → IS = ES = 0 + 0.3; 0.48 s = 9 frames → not ok → 0.
    positions = dict(OBJECTS, yellow_block_1=(0.10, 0.02, 0.76))
    motion = still(Motion(duration=duration), positions)
    record = score(BEHIND, motion, S1)
    assert record['frames'] == round(duration / 0.06) + 1
    assert record['final_target_ok'] is ok
    assert record['intent_score'] == (0.3 if ok else 0.0)


def test_relation_with_wrong_arm_keeps_completion():
    motion = place_motion()
    motion.grip('left', (8.0, 1.0), (8.3, 0.0))
    record = score(BEHIND, motion, S1)
    # 1.0 - 0.2 = 0.8 each; Completion is the final layout, which the penalty does not touch
    assert (record['intent_score'], record['exec_score']) == (0.8, 0.8)
    assert record['completion_ok'] is True


def test_idle_arm_in_operation_area_fails_finish():
    motion = place_motion()
    motion.ee('left', (0.0, HOME['left']), (8.0, HOME['left']), (8.5, (-0.10, 0.0, 0.90)), (9.0, HOME['left']))
    record = score(BEHIND, motion, S1)
    # 0.4 + 0.4 + finish 0 = 0.8 each; the left arm did not close, so no penalty
    assert (record['intent_score'], record['exec_score']) == (0.8, 0.8)
    assert 'operation area' in record['stages'][2]['intent_reason']


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(lambda q: sum(v * v for v in q) > 0.01))
def test_fingertip_rotation_matches_transforms3d(quat):
    tcp = np.array([[0.1, -0.2, 0.9]])
    expected = tcp[0] + quat2mat(quat) @ np.array([0.04, 0.0, 0.0])
    np.testing.assert_allclose(fingertip_points(tcp, np.array([quat]), (0.04, 0.0, 0.0))[0], expected, atol=1e-12)


def test_scene1_lift_counts_over_the_whole_episode():
    # Bumped 0.02 up before the close and never lifted after it: Scenes 1-3 look at the whole episode → ES 0.8
    # (stage 1) + finish 0.2 = 1.0 (contrast: Scene 4 looks only from the close)
    motion = pickup_motion(lift=0.0)
    motion.obj('yellow_block_1', (1.0, BLOCK_1), (1.2, (BLOCK_1[0], BLOCK_1[1], 0.78)), (1.4, BLOCK_1))
    record = score(PICKUP, motion, S1)
    assert record['stages'][0]['exec'] == 0.8
