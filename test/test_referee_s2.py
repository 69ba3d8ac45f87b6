"""Golden tests, Scene 2: pickup lift, stack, place in bowl, push setup and push, retry bonus, wrong-arm
penalty and completion. Expected scores are worked out by hand from protocol §4."""

from __future__ import annotations

import pytest
from golden.episodes import HOME, pick, score, stage_scores, standing, still
from golden.scenes import S2, task

from robofollow_ros.benchmark.types import GroundTruth
from robofollow_ros.referee.synthetic import Motion

pytestmark = pytest.mark.usefixtures('scoring_variant')

OBJECTS = standing(
    S2, {'large_red_cylinder': 0.775, 'large_blue_cube': 0.77, 'small_red_cube': 0.76, 'small_blue_cylinder': 0.765}
)
CUBE = OBJECTS['large_blue_cube']  # (-0.14, -0.13, 0.77)
BLUE_CYL = OBJECTS['small_blue_cylinder']  # (-0.03, -0.13, 0.765)
RED_CUBE = OBJECTS['small_red_cube']  # (-0.03, -0.04, 0.76)
GREEN_BOWL = OBJECTS['green_bowl']  # (0.07, -0.10, 0.76)

PICKUP = task('L0_pickup_left_cube', GroundTruth(2, 'pickup', 'left', 'large_blue_cube'), S2)
STACK = task(
    'L0_stack_left_cube_on_blue_cylinder',
    GroundTruth(2, 'stack', 'left', 'large_blue_cube', target='small_blue_cylinder'),
    S2,
)
BOWL = task(
    'L0_place_right_cube_in_green_bowl',
    GroundTruth(2, 'place_bowl', 'right', 'small_red_cube', target='green_bowl'),
    S2,
)
PUSH = task(
    'L0_push_left_cube_to_red_cylinder',
    GroundTruth(2, 'push', 'left', 'large_blue_cube', target='large_red_cylinder'),
    S2,
)
STACK_Z = BLUE_CYL[2] + 0.025 + 0.03  # on the cylinder: 0.765 + 0.025 + 0.03 = 0.82


def motion_with(**knobs) -> Motion:
    return pick(still(Motion(duration=10.0), OBJECTS), **knobs)


@pytest.mark.parametrize(('lift', 'exec_score'), [(0.031, 1.0), (0.029, 0.0)])
def test_pickup_needs_three_centimetres(lift, exec_score):
    record = score(PICKUP, motion_with(arm='left', name='large_blue_cube', start=CUBE, lift=lift), S2)
    # Intent 0.8 + 0.2 = 1.0; Execution 0.8 + 0.2 with a rise >= 0.03, else 0 + gated 0
    assert (record['intent_score'], record['exec_score']) == (1.0, exec_score)
    assert record['retry_bonus']['final_target_ok'] is False  # a pickup never gets the retry bonus
    assert record['completion_ok'] is (exec_score == 1.0)


def stack_motion(dx: float = 0.0, **knobs) -> Motion:
    place = (BLUE_CYL[0] + dx, BLUE_CYL[1], STACK_Z)
    return motion_with(arm='left', name='large_blue_cube', start=CUBE, place=place, **knobs)


def test_clean_stack():
    record = score(STACK, stack_motion(), S2)
    assert stage_scores(record) == [
        ('stage1_source_select', 0.4, 0.4),
        ('stage2_stack', 0.4, 0.4),
        ('stage3_finish', 0.2, 0.2),
    ]
    assert record['retry_bonus'] == {
        'final_target_ok': True,
        'reason': 'large_blue_cube is on small_blue_cylinder at the end',
        'intent_bonus': 0.0,
        'exec_bonus': 0.0,
    }
    assert record['completion_ok'] is True and record['completion_signal'] == 'retry_final_target_ok'


@pytest.mark.parametrize(('dx', 'stacked'), [(0.029, True), (0.031, False)])
def test_stack_placement_radius(dx, stacked):
    record = score(STACK, stack_motion(dx), S2)
    # stacked: 1.0 / 1.0. Off by 0.031: Intent 0.4 + 0.4 + 0.2 = 1.0; Execution 0.4 + 0 + gated 0 = 0.4,
    # and the retry check (final xy <= 0.03) fails too, so no bonus and no completion
    assert record['intent_score'] == 1.0
    assert record['exec_score'] == (1.0 if stacked else 0.4)
    assert record['completion_ok'] is stacked


@pytest.mark.parametrize(('dip', 'dropped'), [(0.0015, True), (0.003, False)])
def test_stack_drop_after_release(dip, dropped):
    motion = stack_motion()
    on_top = (BLUE_CYL[0], BLUE_CYL[1], STACK_Z)
    low = (BLUE_CYL[0], BLUE_CYL[1], BLUE_CYL[2] + dip)
    motion.obj(
        'large_blue_cube',
        (0.0, CUBE),
        (2.5, CUBE),
        (3.5, (CUBE[0], CUBE[1], CUBE[2] + 0.10)),
        (5.0, (on_top[0], on_top[1], STACK_Z + 0.10)),
        (5.5, on_top),
        (8.0, on_top),
        (8.1, low),
        (8.3, low),
        (8.4, on_top),
    )
    record = score(STACK, motion, S2)
    # a dip to <= target z + 0.002 after the release is a drop: Execution 0.4 + 0 + 0 = 0.4; the cube ends
    # stacked, so the retry bonus adds 0.3 to that total below 0.5 → 0.7
    assert record['exec_score'] == (0.7 if dropped else 1.0)
    assert ('dropped' in record['stages'][1]['exec_reason']) is dropped


def test_retry_bonus_when_stacked_without_a_scored_grasp():
    record = score(STACK, stack_motion(offset=(0.0, 0.08)), S2)
    # grasp 0.08 m off: stage 1 fails and gates everything: 0 + 0.3 = 0.3 each; retry ok → complete
    assert (record['intent_score'], record['exec_score']) == (0.3, 0.3)
    assert record['retry_bonus']['intent_bonus'] == 0.3
    assert record['completion_ok'] is True


def bowl_motion(dx: float = 0.0, *, height: float = 0.02, bowl=GREEN_BOWL, **knobs) -> Motion:
    place = (bowl[0] + dx, bowl[1], bowl[2] + height)
    return motion_with(arm='right', name='small_red_cube', start=RED_CUBE, place=place, **knobs)


def test_clean_bowl_placement():
    record = score(BOWL, bowl_motion(), S2)
    assert (record['intent_score'], record['exec_score']) == (1.0, 1.0)
    assert record['completion_ok'] is True


@pytest.mark.parametrize(('dx', 'inside'), [(0.039, True), (0.041, False)])
def test_bowl_radius(dx, inside):
    record = score(BOWL, bowl_motion(dx), S2)
    # outside: stage 1 0.4, bowl 0, finish gated 0 → 0.4 each; retry fails (final xy > 0.04) → incomplete
    assert record['intent_score'] == (1.0 if inside else 0.4)
    assert record['exec_score'] == (1.0 if inside else 0.4)
    assert record['completion_ok'] is inside


@pytest.mark.parametrize(('height', 'inside'), [(0.059, True), (0.061, False)])
def test_bowl_height_cap(height, inside):
    # the cube must be at most 0.06 above the bowl origin (= its start height here) to count as in the bowl
    record = score(BOWL, bowl_motion(height=height), S2)
    assert record['stages'][1]['intent'] == (0.4 if inside else 0.0)
    assert record['retry_bonus']['final_target_ok'] is inside


def test_wrong_bowl_fails_intent():
    record = score(BOWL, bowl_motion(bowl=OBJECTS['yellow_bowl']), S2)
    assert record['stages'][1]['intent'] == 0.0
    assert record['completion_ok'] is False


def push_motion(
    *,
    name: str = 'large_blue_cube',
    direction: float = 1.0,
    push: float = 0.05,
    ee_z: float = 0.88,
    side: float = -0.045,
    close_to: float = 0.0,
) -> Motion:
    """Close first (1.0-1.3 s), go to ``side`` of the object along y (negative: behind it for a push
    along ``direction`` · +y) and move it along y by ``direction`` · ``push`` over 3-4 s; back off, home."""
    start = OBJECTS[name]
    motion = still(Motion(duration=10.0), OBJECTS)
    at = (start[0], start[1] + direction * side, ee_z)
    moved = (at[0], at[1] + direction * push, ee_z)
    back = (moved[0], moved[1] - direction * 0.03, ee_z)
    motion.grip('left', (1.0, 1.0), (1.3, close_to))
    motion.ee(
        'left',
        (0.0, HOME['left']),
        (2.5, at),
        (3.0, at),
        (4.0, moved),
        (4.5, back),
        (5.0, (back[0], back[1], ee_z + 0.10)),
        (6.5, HOME['left']),
    )
    motion.obj(name, (3.0, start), (4.0, (start[0], start[1] + direction * push, start[2])))
    return motion


def test_clean_push():
    record = score(PUSH, push_motion(), S2)
    # close threshold 0.25: ramp 1 → 0 over 1.0-1.3 s reaches 0.25 at 1.225 s → first sample 1.26 s
    assert record['events']['close'] == pytest.approx(1.26)
    assert stage_scores(record) == [
        ('stage1_push_setup', 0.4, 0.4),
        ('stage2_push', 0.4, 0.4),
        ('stage3_finish', 0.2, 0.2),
    ]
    assert record['completion_ok'] is True


@pytest.mark.parametrize(('push', 'intent', 'execution'), [(0.009, 0.0, 0.0), (0.011, 0.4, 0.0), (0.021, 0.4, 0.4)])
def test_push_distance_thresholds(push, intent, execution):
    record = score(PUSH, push_motion(push=push), S2)
    assert (record['stages'][1]['intent'], record['stages'][1]['exec']) == (intent, execution)


def test_short_push_gets_the_retry_bonus_on_execution():
    record = score(PUSH, push_motion(push=0.015), S2)
    # Intent 0.4 + 0.4 + 0.2 = 1.0 (no bonus: not < 0.5). Execution 0.4 + 0 + gated 0 = 0.4 < 0.5 and the
    # cube moved 0.015 >= 0.005 towards the cylinder → +0.3 = 0.7. Completion: retry flag → complete.
    assert (record['intent_score'], record['exec_score']) == (1.0, 0.7)
    assert record['retry_bonus']['exec_bonus'] == 0.3
    assert record['completion_ok'] is True


@pytest.mark.parametrize(('ee_z', 'ok'), [(0.77 + 0.12 + 0.119, True), (0.77 + 0.12 + 0.121, False)])
def test_push_contact_height(ee_z, ok):
    # |ee_z - 0.12 - cube z0| must be <= 0.12 at the first pushing sample
    record = score(PUSH, push_motion(ee_z=ee_z), S2)
    assert record['stages'][0]['intent'] == 0.4
    assert record['stages'][0]['exec'] == (0.4 if ok else 0.0)


PUSH_CYLINDER = task(
    'L0_push_red_cylinder_to_left_cube',
    GroundTruth(2, 'push', 'left', 'large_red_cylinder', target='large_blue_cube'),
    S2,
)


@pytest.mark.parametrize(('side', 'pushed'), [(-0.045, True), (0.045, False)])
def test_ee_must_be_behind_the_source(side, pushed):
    # The cylinder moves towards the cube (-y). Pushing: EE on its +y side. Pulling: EE on its -y side the
    # whole time (home at y = -0.30 is on that side too), so no sample counts and the push stage is 0.
    record = score(PUSH_CYLINDER, push_motion(name='large_red_cylinder', direction=-1.0, side=side), S2)
    assert record['stages'][1]['intent'] == (0.4 if pushed else 0.0)


def test_push_needs_the_gripper_fully_closed():
    record = score(PUSH, push_motion(close_to=0.30), S2)
    # 0.30 <= 0.35 but > 0.25: no push close → every stage 0; the cube still moved → retry +0.3 each
    assert [s['intent'] for s in record['stages']] == [0.0, 0.0, 0.0]
    assert (record['intent_score'], record['exec_score']) == (0.3, 0.3)


def test_wrong_arm_penalty_in_scene2():
    motion = stack_motion()
    motion.grip('right', (0.5, 1.0), (0.8, 0.0), (1.0, 0.0), (1.3, 1.0))  # right arm closes first
    record = score(STACK, motion, S2)
    assert record['wrong_arm_intervened'] is True
    assert record['events']['first_close_arm'] == 'right'
    assert (record['intent_score'], record['exec_score']) == (0.8, 0.8)


@pytest.mark.parametrize(('above', 'stacked'), [(0.006, True), (0.004, False)])
def test_stack_needs_the_source_above_the_target(above, stacked):
    # released with the cube centre ``above`` over the cylinder centre: Execution needs > 0.005 at the opening
    # and at the end; at 0.004 → 0.4 + 0 + 0 = 0.4, and the retry check fails too (same rule at the end)
    motion = motion_with(
        arm='left', name='large_blue_cube', start=CUBE, place=(BLUE_CYL[0], BLUE_CYL[1], BLUE_CYL[2] + above)
    )
    record = score(STACK, motion, S2)
    assert record['exec_score'] == (1.0 if stacked else 0.4)


@pytest.mark.parametrize(('push', 'bonus'), [(0.006, True), (0.004, False)])
def test_push_retry_threshold(push, bonus):
    # 0.006: the setup sees the cube move >= 0.005 (0.4), the push stage needs 0.01 (0), finish gated (0) → 0.4,
    # and the retry bonus (>= 0.005 towards the target) adds 0.3 → 0.7. 0.004: the cube never moves 0.005, so
    # even the setup fails → 0, and no retry bonus → 0.
    record = score(PUSH, push_motion(push=push), S2)
    assert record['intent_score'] == (0.7 if bonus else 0.0)
    assert record['retry_bonus']['final_target_ok'] is bonus


@pytest.mark.parametrize(('side', 'setup'), [(-0.069, True), (-0.071, False)])
def test_push_setup_radius(side, setup):
    # EE 0.069 m behind the cube while it moves: push setup Intent; at 0.071 m the setup fails and gates the rest
    # (IS = 0 + 0 + 0), and the retry bonus (cube moved 0.05 m) lifts both totals to 0.3
    record = score(PUSH, push_motion(side=side), S2)
    assert record['intent_score'] == (1.0 if setup else 0.3)
