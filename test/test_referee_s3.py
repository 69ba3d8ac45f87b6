"""Golden tests, Scene 3: route over the middle column (via / around) and orientation on the label.
Expected scores are worked out by hand from protocol §4."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from golden.episodes import HOME, score, stage_scores, standing, still
from golden.scenes import S3, task

from robofollow_ros.benchmark.registry import get_task, layout_of
from robofollow_ros.benchmark.types import Arm, GroundTruth
from robofollow_ros.errors import TrajectoryError
from robofollow_ros.referee.score import score_episode
from robofollow_ros.referee.synthetic import Motion

pytestmark = pytest.mark.usefixtures('scoring_variant')

OBJECTS = standing(
    S3,
    dict.fromkeys(('red_bar_2', 'green_bar_3', 'yellow_bar_4', 'blue_bar_5'), 0.754)
    | {
        'green_label_1': 0.741,
        'blue_label_6': 0.741,
    },
)
LIFTED = 0.754 + 0.10

VIA = task(
    'L0_r_pick2_via4_to6_short_front',
    GroundTruth(
        3,
        'place_on_label_route',
        'right',
        'red_bar_2',
        target='blue_label_6',
        route='via',
        route_object='yellow_bar_4',
        route_partner='blue_bar_5',
        place_mode='short_front',
    ),
    S3,
)
AROUND = task(
    'L0_l_pick5_around2_to1_short_right',
    GroundTruth(
        3,
        'place_on_label_route',
        'left',
        'blue_bar_5',
        target='green_label_1',
        route='around',
        route_object='red_bar_2',
        route_partner='green_bar_3',
        place_mode='short_right',
    ),
    S3,
)


def carry(
    *,
    arm: Arm = 'right',
    name: str = 'red_bar_2',
    waypoints: list[tuple[float, float]],
    label: str = 'blue_label_6',
    yaw_deg: float = 0.0,
    place_offset: tuple[float, float] = (0.0, 0.0),
    height: float = LIFTED,
    objects: dict | None = None,
) -> Motion:
    """Grasp (close 2.0-2.3 s), lift by 0.10 (2.5-3.5 s), visit ``waypoints`` at ``height`` 1 s apart, go
    above the label, lower onto it, open and go home. The yaw turns to ``yaw_deg`` on the way to the label."""
    objects = objects or OBJECTS
    start = objects[name]
    spot = (objects[label][0] + place_offset[0], objects[label][1] + place_offset[1], 0.754)
    keys = [(0.0, start), (2.5, start), (3.5, (start[0], start[1], LIFTED))]
    t = 3.5
    for x, y in waypoints:
        t += 1.0
        keys.append((t, (x, y, height)))
    keys += [(t + 1.0, (spot[0], spot[1], LIFTED)), (t + 1.5, spot)]
    motion = still(Motion(duration=t + 5.0), objects)
    motion.obj(name, *keys)
    motion.obj_yaw(name, (t, 0.0), (t + 1.5, math.radians(yaw_deg)))
    for other in objects:
        if other != name:
            motion.obj_yaw(other, (0.0, 0.0))
    ee_keys = [(0.0, HOME[arm])] + [(k_t, (p[0], p[1], p[2] + 0.04)) for k_t, p in keys[1:]]
    motion.ee(arm, *ee_keys, (t + 3.0, HOME[arm]))
    motion.grip(arm, (2.0, 1.0), (2.3, 0.0), (t + 1.7, 0.0), (t + 2.0, 1.0))
    return motion


def straight() -> Motion:
    return carry(waypoints=[(0.01, -0.17)])  # over the yellow slab, then to the blue label


def test_clean_route_and_orientation():
    record = score(VIA, straight(), S3)
    # 0.3 + 0.3 + 0.4 = 1.0 each; no finish stage in Scene 3
    assert stage_scores(record) == [
        ('stage1_source_select', 0.3, 0.3),
        ('stage2_route', 0.3, 0.3),
        ('stage3_orientation', 0.4, 0.4),
    ]
    assert record['completion_ok'] is True
    assert record['completion_signal'] == 'stage3_orientation.exec'


@pytest.mark.parametrize(('dy', 'crosses'), [(0.039, True), (0.041, False)])
def test_crossing_must_stay_clear_of_the_wrong_slab(dy, crosses):
    # Cross the middle column at y = -0.17 + dy (towards the blue slab at y = -0.09): |y - y_wrong| = 0.08 - dy
    # must exceed 0.04. Failing the route gates the orientation: 0.3 + 0 + 0 = 0.3 each, incomplete.
    y = -0.17 + dy
    record = score(VIA, carry(waypoints=[(-0.09, y), (0.11, y)]), S3)
    assert record['intent_score'] == (1.0 if crosses else 0.3)
    assert record['exec_score'] == (1.0 if crosses else 0.3)
    assert record['completion_ok'] is crosses


@pytest.mark.parametrize(('dy', 'crosses'), [(0.059, True), (0.061, False)])
def test_crossing_must_be_near_the_correct_slab(dy, crosses):
    y = -0.17 - dy  # the far side, away from the wrong slab
    record = score(VIA, carry(waypoints=[(-0.09, y), (0.11, y)]), S3)
    assert record['stages'][1]['intent'] == (0.3 if crosses else 0.0)


@pytest.mark.parametrize(('dx', 'crosses'), [(0.009, True), (0.011, False)])
def test_crossing_x_band(dx, crosses):
    x = 0.01 + dx  # pass the column along y at this x
    record = score(VIA, carry(waypoints=[(-0.09, -0.30), (x, -0.30), (x, -0.13)]), S3)
    assert record['stages'][1]['intent'] == (0.3 if crosses else 0.0)


def test_route_counts_only_after_a_lift():
    # Slide across the column 5 mm above the table (rise 0.005 < 0.01), lift only afterwards
    motion = carry(waypoints=[(-0.09, -0.17), (0.01, -0.17), (0.11, -0.17)], height=0.754 + 0.005)
    motion.obj(
        'red_bar_2',
        (0.0, OBJECTS['red_bar_2']),
        (4.5, (-0.09, -0.17, 0.759)),
        (5.5, (0.01, -0.17, 0.759)),
        (6.5, (0.11, -0.17, 0.759)),
        (7.5, (0.11, -0.13, LIFTED)),
        (8.0, (0.11, -0.13, 0.754)),
    )
    record = score(VIA, motion, S3)
    # stage 1 full (it rose 0.10 at 7.5 s), route 0, orientation gated → 0.3 each
    assert stage_scores(record) == [
        ('stage1_source_select', 0.3, 0.3),
        ('stage2_route', 0.0, 0.0),
        ('stage3_orientation', 0.0, 0.0),
    ]


@pytest.mark.parametrize(('over', 'crosses'), [((-0.09, -0.09), True), ((-0.09, -0.17), False)])
def test_around_means_over_the_partner(over, crosses):
    # around red_bar_2 → cross over its partner green_bar_3 (y -0.09), never over red_bar_2 (y -0.17)
    motion = carry(arm='left', name='blue_bar_5', waypoints=[(0.01, over[1]), over], label='green_label_1', yaw_deg=90)
    record = score(AROUND, motion, S3)
    assert record['stages'][1]['intent'] == (0.3 if crosses else 0.0)


@pytest.mark.parametrize(
    ('yaw_deg', 'intent', 'execution'),
    [(19.0, 0.4, 0.4), (21.0, 0.4, 0.0), (39.0, 0.4, 0.0), (41.0, 0.0, 0.0), (175.0, 0.4, 0.4), (-161.0, 0.4, 0.4)],
)
def test_orientation_tolerances_modulo_half_turn(yaw_deg, intent, execution):
    # short_front → target yaw 0; error is taken modulo 180°: 175° → 5°, -161° → 19°
    record = score(VIA, carry(waypoints=[(0.01, -0.17)], yaw_deg=yaw_deg), S3)
    assert (record['stages'][2]['intent'], record['stages'][2]['exec']) == (intent, execution)
    assert record['completion_ok'] is (execution > 0)


def test_yaw_30_degrees_is_intent_but_not_execution():
    record = score(VIA, carry(waypoints=[(0.01, -0.17)], yaw_deg=30.0), S3)
    # Intent 0.3 + 0.3 + 0.4 = 1.0; Execution 0.3 + 0.3 + 0 = 0.6; Completion needs orientation Execution → no
    assert (record['intent_score'], record['exec_score']) == (1.0, 0.6)
    assert record['completion_ok'] is False


def test_long_front_wants_a_quarter_turn():
    long_front = task('L0_r_pick2_via4_to6_long_front', replace(VIA.truth, place_mode='long_front'), S3)
    assert score(long_front, carry(waypoints=[(0.01, -0.17)], yaw_deg=90.0), S3)['stages'][2]['exec'] == 0.4
    assert score(long_front, carry(waypoints=[(0.01, -0.17)], yaw_deg=0.0), S3)['stages'][2]['intent'] == 0.0


@pytest.mark.parametrize(('offset', 'on_label'), [(0.069, True), (0.070, False)])
def test_label_edge(offset, on_label):
    # on the label iff xy distance to its centre < 0.0695 (the label edge length)
    record = score(VIA, carry(waypoints=[(0.01, -0.17)], place_offset=(0.0, offset)), S3)
    assert record['stages'][2]['intent'] == (0.4 if on_label else 0.0)


def test_wrong_arm_penalty_in_scene3():
    motion = straight()
    motion.grip('left', (9.0, 1.0), (9.3, 0.0))
    record = score(VIA, motion, S3)
    # orientation (the last stage) full: 1.0 - 0.2 = 0.8 each; completion follows the orientation stage
    assert (record['intent_score'], record['exec_score']) == (0.8, 0.8)
    assert record['completion_ok'] is True


def test_source_orientation_is_required():
    trajectory = straight().sample(1 / 0.06)
    bare = type(trajectory)(t=trajectory.t, ee=trajectory.ee, grip=trajectory.grip, obj_pos=trajectory.obj_pos)
    with pytest.raises(TrajectoryError, match='red_bar_2'):
        score_episode(VIA, bare, layout=S3)


@pytest.mark.variant('corrected')
def test_around_in_a_swapped_layout_means_over_the_partner_standing_in_that_column(scoring_variant):
    """Corrected: layout 3.3 swaps red and yellow, so "around green" must pass over yellow (green's column
    partner there), not over red, which now stands in the source's own column (registry.route_references)."""
    task_33 = get_task('L1_scene3_3__l_pick5_around3_to1_short_right', variant=scoring_variant)
    layout = layout_of(task_33)
    objects = standing(layout, dict.fromkeys(('red_bar_2', 'green_bar_3', 'yellow_bar_4', 'blue_bar_5'), 0.754))
    objects |= {'green_label_1': (-0.19, -0.13, 0.741), 'blue_label_6': (0.11, -0.13, 0.741)}
    assert objects['yellow_bar_4'][:2] == (-0.09, -0.17) and objects['red_bar_2'][:2] == (0.01, -0.17)

    def route(waypoints: list[tuple[float, float]]) -> tuple[float, float]:
        motion = carry(
            arm='left', name='blue_bar_5', label='green_label_1', yaw_deg=90.0, waypoints=waypoints, objects=objects
        )
        [stage] = [s for s in score(task_33, motion, layout)['stages'] if s['name'] == 'stage2_route']
        return stage['intent'], stage['exec']

    # leave the source column diagonally, then over yellow at (-0.09, -0.17): |dx| 0 < 0.01, |dy| 0 < 0.06 to
    # yellow, 0.08 > 0.04 from green -> 0.3 / 0.3. (Within 0.01 of red's x the slab is still at y >= -0.106,
    # 0.064 from red: the name-pair reading "over red" would have scored 0 here.)
    assert route([(-0.04, -0.17), (-0.09, -0.17)]) == (0.3, 0.3)
    # straight over green, the slab to go around: wherever |dx| < 0.01 to yellow, |dy| to green < 0.04 -> 0 / 0
    assert route([(-0.09, -0.09)]) == (0.0, 0.0)
