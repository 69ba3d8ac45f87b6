"""Golden tests, Scene 4: support-aware source selection, wrong-arm zeroing, support-lift penalty, stack on
target, unstack to slot, sequences and conditionals. Expected scores are worked out by hand from protocol §4."""

from __future__ import annotations

import pytest
from golden.episodes import pick, score, stage_scores, standing, still
from golden.scenes import S4_1, task

from robofollow_ros.benchmark.types import Conditional, GroundTruth
from robofollow_ros.referee.synthetic import Motion

pytestmark = pytest.mark.usefixtures('scoring_variant')

HEIGHTS = {
    'bowl': 0.76,
    'red_cube_in_bowl': 0.79,
    'yellow_cylinder': 0.765,
    'blue_cube_right': 0.764,
    'green_cylinder_top': 0.815,
    'blue_sphere': 0.764,
    'red_sphere': 0.764,
}
OBJECTS = standing(S4_1, HEIGHTS) | {'green_cylinder_top': (0.105, -0.06, 0.815)}  # 5 mm off the cube's centre
GREEN = OBJECTS['green_cylinder_top']
YELLOW = OBJECTS['yellow_cylinder']
SLOT_6 = (0.10, -0.18)
GRASP_GREEN = (-0.004, 0.0)  # EE at x 0.101: 0.001 from the cube under it, 0.004 from the cylinder

PICK_BLUE = task('L0_s41_l_pick_blue_sphere', GroundTruth(4, 'pickup', 'left', 'blue_sphere'), S4_1)
PICK_GREEN = task('L0_s41_r_pick_green_cylinder_top', GroundTruth(4, 'pickup', 'right', 'green_cylinder_top'), S4_1)
STACK_TRUTH = GroundTruth(4, 'stack_on_target', 'right', 'green_cylinder_top', target='yellow_cylinder')
STACK = task('L0_s41_r_stack_green_cylinder_on_yellow', STACK_TRUTH, S4_1)
UNSTACK = task(
    'L0_s41_r_unstack_green_cylinder_to_slot6',
    GroundTruth(4, 'unstack_to_slot', 'right', 'green_cylinder_top', slot=6),
    S4_1,
)
SEQUENCE = task(
    'L0_s41_seq_l_bowl_then_r_green_cylinder',
    GroundTruth(4, 'sequence_pickups', 'left', 'red_cube_in_bowl', then_arm='right', then_source='green_cylinder_top'),
    S4_1,
)
CONDITIONAL = task(
    'L0_s41_if_blue_right_of_red_then_l_pick_else_r_stack',
    STACK_TRUTH,
    S4_1,
    instruction='If the blue sphere is to the right of the red sphere, ...',
    conditional=Conditional('blue_right_of_red', False, GroundTruth(4, 'pickup', 'left', 'blue_sphere'), STACK_TRUTH),
)
STACK_Z = YELLOW[2] + 0.025 + 0.025 + 0.002  # 0.765 + 0.025 + 0.025 + 0.002 = 0.817
UNSTACK_Z = 0.74 + 0.025 + 0.001  # 0.766


def scene(duration: float = 10.0, **overrides) -> Motion:
    return still(Motion(duration=duration), OBJECTS | overrides)


def pick_green(motion: Motion, **knobs) -> Motion:
    return pick(motion, arm='right', name='green_cylinder_top', start=GREEN, offset=GRASP_GREEN, **knobs)


def test_pickup_of_a_free_object():
    motion = pick(scene(), arm='left', name='blue_sphere', start=OBJECTS['blue_sphere'])
    record = score(PICK_BLUE, motion, S4_1)
    assert stage_scores(record) == [('stage1_source_select', 0.8, 0.8), ('stage3_finish', 0.2, 0.2)]
    assert record['completion_ok'] is True


def test_support_under_the_source_is_not_a_candidate():
    # The cube under the cylinder is nearest to the EE (0.001 vs 0.004 m) but it is the cylinder's support
    # (within 0.02 m in xy, centre 0.051 m lower), so it is removed and the cylinder is selected: 0.8 + 0.2
    record = score(PICK_GREEN, pick_green(scene()), S4_1)
    assert record['support'] == 'blue_cube_right'
    assert (record['intent_score'], record['exec_score']) == (1.0, 1.0)


@pytest.mark.parametrize(('support_dx', 'selected'), [(0.019, True), (0.021, False)])
def test_support_radius(support_dx, selected):
    # cube centre support_dx to the left of the cylinder; EE at x 0.093, nearer the cube than the cylinder
    cube = (GREEN[0] - support_dx, GREEN[1], 0.764)
    motion = pick(scene(blue_cube_right=cube), arm='right', name='green_cylinder_top', start=GREEN, offset=(-0.012, 0))
    record = score(PICK_GREEN, motion, S4_1)
    assert record['stages'][0]['intent'] == (0.8 if selected else 0.0)


@pytest.mark.parametrize(('rise', 'penalised'), [(0.011, True), (0.009, False)])
def test_support_lift_penalty(rise, penalised):
    motion = pick_green(scene())
    cube = OBJECTS['blue_cube_right']
    motion.obj('blue_cube_right', (3.0, cube), (3.5, (cube[0], cube[1], cube[2] + rise)), (4.0, cube))
    record = score(PICK_GREEN, motion, S4_1)
    # stages stay 0.8 + 0.2; the penalty takes 0.3 off stage-1 Execution after gating: ES 1.0 - 0.3 = 0.7 < 0.8
    assert stage_scores(record) == [('stage1_source_select', 0.8, 0.8), ('stage3_finish', 0.2, 0.2)]
    assert record['exec_score'] == (0.7 if penalised else 1.0)
    assert record['intent_score'] == 1.0
    assert record['completion_ok'] is not penalised
    if penalised:
        assert record['adjustments'][0]['name'] == 'support_lift_penalty'
        assert record['adjustments'][0]['amount'] == -0.3


@pytest.mark.parametrize(('other_close', 'zeroed'), [((1.0, 1.3), True), ((2.0, 2.3), True), ((8.0, 8.3), False)])
def test_scene4_pickup_other_arm_first_zeroes_stage1(other_close, zeroed):
    # other arm's first close before or at the same sample as the designated arm's (2.22 s) → stage 1 0/0,
    # finish gated → 0; a later close is allowed (no penalty in Scene 4)
    motion = pick(scene(), arm='left', name='blue_sphere', start=OBJECTS['blue_sphere'])
    motion.grip('right', (other_close[0], 1.0), (other_close[1], 0.0))
    record = score(PICK_BLUE, motion, S4_1)
    assert record['intent_score'] == (0.0 if zeroed else 1.0)
    assert record.get('wrong_arm_zeroed', False) is zeroed
    assert 'wrong_arm_intervened' not in record


def test_scene4_lift_counts_only_from_the_close():
    # The sphere is bumped 0.02 up before the close (1.0-1.4 s) and never lifted after it
    motion = pick(scene(), arm='left', name='blue_sphere', start=OBJECTS['blue_sphere'], lift=0.0)
    sphere = OBJECTS['blue_sphere']
    motion.obj('blue_sphere', (1.0, sphere), (1.2, (sphere[0], sphere[1], sphere[2] + 0.02)), (1.4, sphere))
    record = score(PICK_BLUE, motion, S4_1)
    assert (record['intent_score'], record['exec_score']) == (1.0, 0.0)


def stack_motion(dx: float = 0.0, dz: float = 0.0) -> Motion:
    return pick_green(scene(), place=(YELLOW[0] + dx, YELLOW[1], STACK_Z + dz))


def test_clean_stack_on_target():
    record = score(STACK, stack_motion(), S4_1)
    assert stage_scores(record) == [
        ('stage1_source_select', 0.4, 0.4),
        ('stage2_stack', 0.4, 0.4),
        ('stage3_finish', 0.2, 0.2),
    ]
    assert record['completion_ok'] is True and record['completion_signal'] == 'stage2_stack.exec'


@pytest.mark.parametrize(
    ('dx', 'dz', 'intent', 'execution'),
    [
        (0.049, 0.0, 1.0, 1.0),
        (0.051, 0.0, 1.0, 0.4),
        (0.0, 0.049, 1.0, 1.0),
        (0.0, 0.051, 1.0, 0.4),
        (0.071, 0, 0.4, 0.4),
    ],
)
def test_stack_on_target_tolerances(dx, dz, intent, execution):
    # Execution: xy <= 0.05 and |z - 0.817| <= 0.05 at release and end; else 0.4 + 0 + gated finish 0 = 0.4.
    # Intent: xy <= 0.07 and |z - 0.817| <= 0.06 after the close; else 0.4 + 0 + 0.
    record = score(STACK, stack_motion(dx, dz), S4_1)
    assert (record['intent_score'], record['exec_score']) == (intent, execution)
    assert record['completion_ok'] is (execution == 1.0)


def test_stack_other_arm_closing_anytime_zeroes_stages_1_and_2():
    motion = stack_motion()
    motion.grip('left', (9.0, 1.0), (9.3, 0.0))
    record = score(STACK, motion, S4_1)
    # stages 1 and 2 zeroed, finish gated by them → 0 / 0, incomplete
    assert (record['intent_score'], record['exec_score']) == (0.0, 0.0)
    assert record['completion_ok'] is False


def unstack_motion(dx: float = 0.0, dz: float = 0.0, *, slide: float = 0.0) -> Motion:
    spot = (SLOT_6[0] + dx, SLOT_6[1], UNSTACK_Z + dz)
    motion = pick_green(scene(), place=spot)
    if slide:
        lift = (GREEN[0], GREEN[1], GREEN[2] + 0.10)
        motion.obj(
            'green_cylinder_top',
            (0.0, GREEN),
            (2.5, GREEN),
            (3.5, lift),
            (5.0, (spot[0], spot[1], spot[2] + 0.10)),
            (5.5, spot),
            (8.5, spot),
            (8.6, (spot[0] + slide, spot[1], spot[2])),
        )
    return motion


@pytest.mark.parametrize(('dx', 'intent', 'execution'), [(0.049, 1.0, 1.0), (0.069, 1.0, 0.4), (0.071, 0.4, 0.4)])
def test_unstack_slot_tolerances(dx, intent, execution):
    # slot 6 nominal centre (0.10, -0.18); expected z = 0.74 + 0.025 + 0.001 = 0.766
    record = score(UNSTACK, unstack_motion(dx), S4_1)
    assert (record['intent_score'], record['exec_score']) == (intent, execution)


@pytest.mark.parametrize(('slide', 'placed'), [(0.049, True), (0.051, False)])
def test_unstack_checked_again_at_the_end(slide, placed):
    record = score(UNSTACK, unstack_motion(slide=slide), S4_1)
    assert record['stages'][1]['exec'] == (0.4 if placed else 0.0)
    assert record['completion_ok'] is placed


def sequence_motion(*, a_t0: float = 0.0, b_t0: float = 5.0, a_lift: float = 0.10) -> Motion:
    motion = scene(duration=14.0)
    pick(motion, arm='left', name='red_cube_in_bowl', start=OBJECTS['red_cube_in_bowl'], t0=a_t0, lift=a_lift)
    return pick_green(motion, t0=b_t0)


def test_clean_sequence():
    record = score(SEQUENCE, sequence_motion(), S4_1)
    assert stage_scores(record) == [
        ('stage1_action_a', 0.4, 0.4),
        ('stage2_action_b', 0.4, 0.4),
        ('stage3_finish', 0.2, 0.2),
    ]
    assert record['completion_ok'] is True


def test_sequence_in_reverse_order_scores_nothing():
    record = score(SEQUENCE, sequence_motion(a_t0=5.0, b_t0=0.0), S4_1)
    assert [s['intent'] for s in record['stages']] == [0.0, 0.0, 0.0]
    assert 'reverse order' in record['stages'][0]['intent_reason']


def test_sequence_without_a_never_starts():
    motion = pick_green(scene(duration=14.0), t0=5.0)
    record = score(SEQUENCE, motion, S4_1)
    assert (record['intent_score'], record['exec_score']) == (0.0, 0.0)


def test_sequence_b_is_not_gated_by_a_execution(scoring_variant):
    record = score(SEQUENCE, sequence_motion(a_lift=0.0), S4_1)
    # A: Intent 0.4, Execution 0 (never lifted); B: 0.4 / 0.4 regardless; finish 0.2 / 0.2 raw. Corrected gates
    # the finish Execution by A's → IS 1.0, ES 0.4 (incomplete); published sums the raw stages → ES 0.6 (< 0.8)
    finish_exec = {'published': 0.2, 'corrected': 0.0}[scoring_variant]
    assert stage_scores(record) == [
        ('stage1_action_a', 0.4, 0.0),
        ('stage2_action_b', 0.4, 0.4),
        ('stage3_finish', 0.2, finish_exec),
    ]
    assert record['completion_ok'] is False


def test_sequence_finish_checks_both_arms():
    motion = sequence_motion()
    motion.tracks['ee.right'].values[-1] = (0.10, -0.06, 0.95)  # B ends above the cube, 0.31 m from home
    record = score(SEQUENCE, motion, S4_1)
    # finish fails: 0.4 + 0.4 + 0 = 0.8 each; pickup-like CR: 0.8 >= 0.8 → complete
    assert (record['intent_score'], record['exec_score']) == (0.8, 0.8)
    assert 'right arm' in record['stages'][2]['intent_reason']
    assert record['completion_ok'] is True


def test_sequence_b_close_before_a_completes_is_ignored(scoring_variant):
    motion = sequence_motion(a_lift=0.0, b_t0=1.0)  # B closes at 3.22 s, after A's start (2.22 s)
    cube = OBJECTS['red_cube_in_bowl']
    motion.obj('red_cube_in_bowl', (0.0, cube), (6.0, cube), (7.0, (cube[0], cube[1], cube[2] + 0.10)))
    record = score(SEQUENCE, motion, S4_1)
    # A completes (lift) only at ~6.1 s; B is searched from there and never closes again → B 0. The finish
    # (both arms home) passes raw: corrected gates it by B → 0.4 + 0 + 0 = 0.4; published sums 0.4 + 0 + 0.2
    total = {'published': 0.6, 'corrected': 0.4}[scoring_variant]
    assert (record['intent_score'], record['exec_score']) == (total, total)


@pytest.mark.parametrize(('dx', 'success'), [(0.0, True), (0.051, False)])
def test_conditional_full_success(dx, success):
    record = score(CONDITIONAL, stack_motion(dx), S4_1)
    assert record['conditional_full_success'] is success
    assert record['base_task_type'] == 'stack_on_target'


def test_unconditional_tasks_have_no_conditional_field():
    record = score(STACK, stack_motion(), S4_1)
    assert 'conditional_full_success' not in record
