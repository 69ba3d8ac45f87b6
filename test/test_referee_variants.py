"""Golden tests of the rules that differ between the variants: for each, episodes on either side of the rule,
scored under ``published`` and ``corrected``, with the expected values worked out by hand (docs/scoring.md).

Where the two variants agree the episode is the control; where they differ it shows the rule.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from golden.episodes import HOME, TCP_ABOVE, add, pick, score, stage_scores, standing, still
from golden.scenes import S1, S2, S3, S4_1, task
from test_referee_s2 import BOWL, CUBE, GREEN_BOWL, PICKUP, PUSH, RED_CUBE, bowl_motion, push_motion
from test_referee_s3 import VIA, carry
from test_referee_s4 import OBJECTS as S4_OBJECTS
from test_referee_s4 import PICK_BLUE, SEQUENCE, pick_green, scene, sequence_motion

from robofollow_ros.benchmark.registry import get_task, layout_of
from robofollow_ros.benchmark.types import GroundTruth
from robofollow_ros.referee.synthetic import Motion
from robofollow_ros.referee.trajectory import Trajectory

S2_OBJECTS = standing(
    S2, {'large_red_cylinder': 0.775, 'large_blue_cube': 0.77, 'small_red_cube': 0.76, 'small_blue_cylinder': 0.765}
)


# Rule 1: S2 push setup. Published grants Execution without Intent (EE nearest to the source within 0.08 m,
# contact height right) and never gates it; corrected needs Intent (EE within 0.07 m).
@pytest.mark.parametrize(
    ('side', 'variant', 'setup', 'totals'),
    [
        # 0.069 m behind the cube: Intent and Execution in both → 1.0 / 1.0
        (-0.069, 'published', (0.4, 0.4), (1.0, 1.0)),
        (-0.069, 'corrected', (0.4, 0.4), (1.0, 1.0)),
        # 0.075 m: no Intent. Published: setup 0 / 0.4, push and finish gated by I1 → IS 0, ES 0.4; the cube moved
        # 0.05 m towards the target, so the retry bonus adds 0.3 to both totals below 0.5 → 0.3 / 0.7.
        # Corrected: setup 0 / 0 → 0 + 0.3 = 0.3 / 0.3.
        (-0.075, 'published', (0.0, 0.4), (0.3, 0.7)),
        (-0.075, 'corrected', (0.0, 0.0), (0.3, 0.3)),
        # 0.081 m: beyond the Execution radius too → 0.3 / 0.3 in both
        (-0.081, 'published', (0.0, 0.0), (0.3, 0.3)),
        (-0.081, 'corrected', (0.0, 0.0), (0.3, 0.3)),
    ],
)
def test_rule1_push_setup_execution_without_intent(side, variant, setup, totals):
    record = score(PUSH, push_motion(side=side), S2, variant=variant)
    assert (record['stages'][0]['intent'], record['stages'][0]['exec']) == setup
    assert (record['intent_score'], record['exec_score']) == totals
    assert record['completion_ok'] is True  # retry flag: the cube moved >= 0.005 m towards the target


# Rule 2: S2 bowl Execution. Published applies the height cap (z <= bowl z + 0.06) at the opening and at the
# end; corrected tests the xy radius only there (the retry check keeps the full test in both).
def bowl_end_height(height: float) -> Motion:
    motion = bowl_motion()  # released at 0.02 over the bowl origin at 5.82 s
    place = (GREEN_BOWL[0], GREEN_BOWL[1], GREEN_BOWL[2] + 0.02)
    motion.obj(
        'small_red_cube',
        (0.0, RED_CUBE),
        (2.5, RED_CUBE),
        (3.5, add(RED_CUBE, (0, 0, 0.10))),
        (5.0, add(place, (0, 0, 0.10))),
        (5.5, place),
        (8.0, place),
        (8.5, (place[0], place[1], GREEN_BOWL[2] + height)),
    )
    return motion


@pytest.mark.parametrize(
    ('height', 'variant', 'bowl', 'totals', 'complete'),
    [
        # ends 0.059 over the bowl origin: in the bowl for both → 1.0 / 1.0, complete
        (0.059, 'published', (0.4, 0.4), (1.0, 1.0), True),
        (0.059, 'corrected', (0.4, 0.4), (1.0, 1.0), True),
        # ends 0.065 over it (xy still centred). Published: not in the bowl at the end → bowl Execution 0, finish
        # Execution gated → ES 0.4 + 0 + 0 = 0.4. Corrected: xy only → 1.0. The retry flag (full test) is false in
        # both, so neither completes.
        (0.065, 'published', (0.4, 0.0), (1.0, 0.4), False),
        (0.065, 'corrected', (0.4, 0.4), (1.0, 1.0), False),
    ],
)
def test_rule2_bowl_execution_height_cap(height, variant, bowl, totals, complete):
    record = score(BOWL, bowl_end_height(height), S2, variant=variant)
    assert (record['stages'][1]['intent'], record['stages'][1]['exec']) == bowl
    assert (record['intent_score'], record['exec_score']) == totals
    assert record['completion_ok'] is complete


# Rule 3: S3 route. Published scans only the samples after the designated arm's close; corrected every sample
# (after a latched lift). A slab carried over the yellow slab before a late close passes only corrected.
def late_close() -> Motion:
    motion = carry(waypoints=[(0.01, -0.17)])  # over yellow at 4.5 s, above the label at 5.5 s, down at 6.0 s
    motion.grip('right', (5.6, 1.0), (5.9, 0.0), (6.2, 0.0), (6.5, 1.0))  # closes at 5.82 s, on the label
    return motion


@pytest.mark.parametrize(
    ('motion', 'variant', 'route', 'totals'),
    [
        # closes (2.22 s) before crossing: route 0.3 in both → 0.3 + 0.3 + 0.4 = 1.0
        (lambda: carry(waypoints=[(0.01, -0.17)]), 'published', 0.3, 1.0),
        (lambda: carry(waypoints=[(0.01, -0.17)]), 'corrected', 0.3, 1.0),
        # closes after crossing (5.82 s). Published: no crossing after the close → route 0, orientation gated →
        # 0.3 each. Corrected: the crossing at 4.5 s counts → 1.0.
        (late_close, 'published', 0.0, 0.3),
        (late_close, 'corrected', 0.3, 1.0),
    ],
)
def test_rule3_route_scans_after_the_close(motion, variant, route, totals):
    record = score(VIA, motion(), S3, variant=variant)
    assert record['stages'][0]['intent'] == 0.3
    assert record['stages'][1]['intent'] == record['stages'][1]['exec'] == route
    assert (record['intent_score'], record['exec_score']) == (totals, totals)
    assert record['completion_ok'] is (totals == 1.0)


# Rule 4: S4 pickup whose source never lifts. Published anchors the finish at the close, corrected at the last
# frame. The arm closes on the sphere (2.22 s), is home by 5.0 s, leaves 0.15 m (> 0.14) at 7.5 s and is back
# by 8.0 s.
def pickup_and_wander(lift: float) -> Motion:
    sphere = S4_OBJECTS['blue_sphere']
    motion = pick(scene(), arm='left', name='blue_sphere', start=sphere, lift=lift)
    grasp = add(sphere, (0, 0, TCP_ABOVE))
    home = HOME['left']
    away = add(home, (0.15, 0.0, 0.0))
    keys = [(0.0, home), (1.5, grasp), (2.5, grasp), (3.5, add(grasp, (0, 0, lift))), (5.0, home)]
    motion.ee('left', *keys, (7.0, home), (7.5, away), (8.0, home))
    return motion


@pytest.mark.parametrize(
    ('lift', 'variant', 'stages', 'totals'),
    [
        # lifted 0.10: both anchor at the first lift; the arm leaves home again → finish 0 → 0.8 / 0.8
        (0.10, 'published', [(0.8, 0.8), (0.0, 0.0)], (0.8, 0.8)),
        (0.10, 'corrected', [(0.8, 0.8), (0.0, 0.0)], (0.8, 0.8)),
        # never lifted. Published: anchor 2.22 s, home at ~4.6 s, leaves at 7.5 s → finish 0 → 0.8 / 0.
        # Corrected: anchor at the last frame, home there → finish Intent 0.2 (Execution gated by stage-1
        # Execution) → 1.0 / 0.
        (0.0, 'published', [(0.8, 0.0), (0.0, 0.0)], (0.8, 0.0)),
        (0.0, 'corrected', [(0.8, 0.0), (0.2, 0.0)], (1.0, 0.0)),
    ],
)
def test_rule4_s4_pickup_without_lift_finishes_at_the_close(lift, variant, stages, totals):
    record = score(PICK_BLUE, pickup_and_wander(lift), S4_1, variant=variant)
    assert [(s['intent'], s['exec']) for s in record['stages']] == stages
    assert (record['intent_score'], record['exec_score']) == totals
    assert record['completion_ok'] is (totals == (0.8, 0.8))


# Rule 5: S4 sequence. Published sums the three raw phases (no gating); corrected gates like a chain.
@pytest.mark.parametrize(
    ('b_picks', 'variant', 'finish', 'total'),
    [
        # A (left, cube in the bowl) then B (right, green cylinder): 1.0 in both
        (True, 'published', (0.2, 0.2), 1.0),
        (True, 'corrected', (0.2, 0.2), 1.0),
        # B never starts (a blind run doing A only): published A 0.4 + B 0 + finish 0.2 = 0.6;
        # corrected gates the finish by B's Intent → 0.4. Incomplete in both (< 0.8).
        (False, 'published', (0.2, 0.2), 0.6),
        (False, 'corrected', (0.0, 0.0), 0.4),
    ],
)
def test_rule5_sequence_returns_raw_phases(b_picks, variant, finish, total):
    if b_picks:
        motion = sequence_motion()
    else:
        motion = pick(scene(duration=14.0), arm='left', name='red_cube_in_bowl', start=S4_OBJECTS['red_cube_in_bowl'])
    record = score(SEQUENCE, motion, S4_1, variant=variant)
    assert stage_scores(record)[0] == ('stage1_action_a', 0.4, 0.4)
    assert stage_scores(record)[1] == (('stage2_action_b', 0.4, 0.4) if b_picks else ('stage2_action_b', 0.0, 0.0))
    assert (record['stages'][2]['intent'], record['stages'][2]['exec']) == finish
    assert (record['intent_score'], record['exec_score']) == (total, total)
    assert record['completion_ok'] is (total == 1.0)


# Rule 6: S3 "around X" partner. Published pairs slabs by name (red-green, yellow-blue) in every layout;
# corrected takes the other slab in X's column of the episode's layout. Layout 3.3 swaps red and yellow.
AROUND_33 = 'L1_scene3_3__l_pick5_around3_to1_short_right'


def test_rule6_partner_by_name_or_by_column():
    published, corrected = (get_task(AROUND_33, variant=v) for v in ('published', 'corrected'))
    assert (published.truth.route_partner, corrected.truth.route_partner) == ('red_bar_2', 'yellow_bar_4')
    rewrite = 'L3_scene3_3__l_pick5_around3_to1_short_right__rw_route0_ori0'
    # the L2/L3 rewrite names the partner of the variant's truth
    assert 'pass over the red slab' in get_task(rewrite, variant='published').instruction
    assert 'pass over the yellow slab' in get_task(rewrite, variant='corrected').instruction
    # elsewhere the two readings agree
    for task_id in ('L0_l_pick5_around3_to1_short_right', 'L1_scene3_1__l_pick5_around3_to1_short_right'):
        assert get_task(task_id, variant='published').truth == get_task(task_id, variant='corrected').truth


@pytest.mark.parametrize(
    ('waypoints', 'variant', 'route'),
    [
        # leave the source column diagonally, then over yellow at (-0.09, -0.17): corrected 0.3; published
        # needs red (0.01, -0.17), but within 0.01 of red's x the slab is still 0.064 m from it in y → 0
        ([(-0.04, -0.17), (-0.09, -0.17)], 'published', 0.0),
        ([(-0.04, -0.17), (-0.09, -0.17)], 'corrected', 0.3),
        # over red first (its own column), then round the front row: published 0.3; corrected never comes
        # within 0.06 m in y of yellow while within 0.01 m of its x (y -0.25 there) → 0
        ([(0.01, -0.17), (-0.04, -0.25), (-0.19, -0.25)], 'published', 0.3),
        ([(0.01, -0.17), (-0.04, -0.25), (-0.19, -0.25)], 'corrected', 0.0),
    ],
)
def test_rule6_route_over_the_partner_of_the_variant(waypoints, variant, route):
    around = get_task(AROUND_33, variant=variant)
    layout = layout_of(around)
    objects = standing(layout, dict.fromkeys(('red_bar_2', 'green_bar_3', 'yellow_bar_4', 'blue_bar_5'), 0.754))
    objects |= {'green_label_1': (-0.19, -0.13, 0.741), 'blue_label_6': (0.11, -0.13, 0.741)}
    motion = carry(
        arm='left', name='blue_bar_5', label='green_label_1', yaw_deg=90.0, waypoints=waypoints, objects=objects
    )
    record = score(around, motion, layout, variant=variant)
    assert record['stages'][1]['intent'] == record['stages'][1]['exec'] == route
    # route 0 gates the orientation: 0.3 + 0 + 0; else 0.3 + 0.3 + 0.4
    assert record['intent_score'] == (1.0 if route else 0.3)


# Rule 7: frame windows. Published counts recorded frames (20-frame home window, 180-frame lateness) when the
# frames are executed rows; otherwise, and always in corrected, 1.2 s and 10.8 s. Rows here are 0.06 s up to
# 3.5 s, then 0.2 s (slow rows, like gripper rows).
ROW_TIMES = np.concatenate([np.arange(0.0, 3.5, 0.06), np.arange(3.5, 27.0 + 1e-9, 0.2)])


def cube_pickup(home_at: float, *extra: tuple[float, tuple[float, float, float]]) -> Motion:
    grasp = add(CUBE, (0, 0, TCP_ABOVE))
    up = add(grasp, (0, 0, 0.10))
    held = add(CUBE, (0, 0, 0.10))
    motion = still(Motion(duration=27.0), S2_OBJECTS)
    motion.ee('left', (0.0, HOME['left']), (1.5, grasp), (2.5, grasp), (3.5, up), (home_at, HOME['left']), *extra)
    motion.obj('large_blue_cube', (0.0, CUBE), (2.5, CUBE), (3.5, held), (home_at, (-0.30, -0.30, held[2])))
    motion.grip('left', (2.0, 1.0), (2.3, 0.0))
    return motion


def slow_return() -> Motion:
    # the cube rises 0.01 at 2.64 s (frame 44, the completion time); the EE is within 0.10 m of home from
    # 16.1 s (frame 122): 13.46 s later (> 10.8 s) but 78 frames later (<= 180)
    return cube_pickup(25.0)


def short_stay() -> Motion:
    # home from 4.5 s for 8 rows (1.6 s >= 1.2 s, < 20 frames), then 0.15 m away (> 0.14) at 6.5-6.7 s,
    # home again from 7.1 s to the end
    home = HOME['left']
    away = add(home, (0.15, 0.0, 0.0))
    return cube_pickup(5.0, (6.0, home), (6.4, away), (6.8, away), (7.2, home))


def rows(motion: Motion, *, executed: bool) -> Trajectory:
    return replace(motion.sample(times=ROW_TIMES), frames_are_rows=executed)


@pytest.mark.parametrize('motion', [slow_return, short_stay], ids=['lateness', 'home_window'])
@pytest.mark.parametrize(
    ('variant', 'executed', 'units', 'totals'),
    [
        # frames: slow_return is home 78 frames after completion (on time); short_stay's first 20-frame home
        # window starts at 7.1 s, after the excursion, and the arm stays → finish 0.2 → 1.0 / 1.0
        ('published', True, 'frames', (1.0, 1.0)),
        # seconds: slow_return is 13.46 s late; short_stay is home at 4.5 s for 1.2 s, then leaves 0.15 m →
        # finish 0 → 0.8 / 0.8 (still complete: pickup totals >= 0.8)
        ('published', False, 'seconds', (0.8, 0.8)),
        ('corrected', True, 'seconds', (0.8, 0.8)),
    ],
)
def test_rule7_frame_windows_count_executed_rows(motion, variant, executed, units, totals):
    from robofollow_ros.referee.score import score_episode

    record = score_episode(PICKUP, rows(motion(), executed=executed), layout=S2, variant=variant).to_record()
    assert record['window_units'] == units
    assert stage_scores(record) == [
        ('stage1_source_select', 0.8, 0.8),
        ('stage3_finish', *((0.2, 0.2) if totals == (1.0, 1.0) else (0.0, 0.0))),
    ]
    assert (record['intent_score'], record['exec_score']) == totals
    assert record['completion_ok'] is True


# Rule 7, S1 final layout: the relation must hold on the table in the last 10 frames (rows), or over the last 0.6 s.
BEHIND = task(
    'L0_place_yellow_block_1_behind_red_cylinder',
    GroundTruth(1, 'place_relative', 'right', 'yellow_block_1', target='red_cylinder', relation='behind'),
    S1,
)
S1_ROW_TIMES = np.concatenate([np.arange(0.0, 8.0, 0.06), np.arange(8.0, 10.0 + 1e-9, 0.2)])


def nudged_placement() -> Motion:
    # placed behind the cylinder at 5.5 s and released (5.82 s); pushed aside (cos 0.62 < 0.71) from 8.1 s to
    # 9.1 s, back in place from 9.3 s. Rows of 0.2 s from 8.0 s: the last 10 frames (8.2-10.0 s) include the
    # nudge, the last 0.6 s do not.
    objects = standing(S1, {'red_cylinder': 0.765})
    block, spot = objects['yellow_block_1'], (0.10, 0.04, 0.76)
    motion = pick(still(Motion(duration=10.0), objects), arm='right', name='yellow_block_1', start=block, place=spot)
    aside = (0.20, 0.04, 0.76)
    motion.obj(
        'yellow_block_1',
        (0.0, block),
        (2.5, block),
        (3.5, add(block, (0, 0, 0.10))),
        (5.0, add(spot, (0, 0, 0.10))),
        (5.5, spot),
        (8.0, spot),
        (8.1, aside),
        (9.1, aside),
        (9.3, spot),
    )
    return motion


@pytest.mark.parametrize(
    ('variant', 'executed', 'final'),
    [('published', True, False), ('published', False, True), ('corrected', True, True)],
)
def test_rule7_final_layout_window_counts_executed_rows(variant, executed, final):
    from robofollow_ros.referee.score import score_episode

    trajectory = replace(nudged_placement().sample(times=S1_ROW_TIMES), frames_are_rows=executed)
    record = score_episode(BEHIND, trajectory, layout=S1, variant=variant).to_record()
    # every stage full in all three (1.0 / 1.0); Completion is the final-layout flag
    assert (record['intent_score'], record['exec_score']) == (1.0, 1.0)
    assert record['final_target_ok'] is final
    assert record['completion_ok'] is final
    frames = variant == 'published' and executed
    assert record['window_units'] == ('frames' if frames else 'seconds')
    # the window checked: the last 10 rows (8.2-10.0 s), or the samples after 10.0 - 0.6 s (9.6-10.0 s)
    assert record['final_target_window'] == pytest.approx([8.2, 10.0] if frames else [9.6, 10.0])


# Also in the code: the S4 sequence match distance is inclusive in published (d <= 0.07), strict in corrected.
SEQUENCE_BLUE = task(
    'L0_s41_seq_l_blue_then_r_green',
    GroundTruth(4, 'sequence_pickups', 'left', 'blue_sphere', then_arm='right', then_source='green_cylinder_top'),
    S4_1,
)


@pytest.mark.parametrize(
    ('offset', 'variant', 'total'),
    [
        # EE 0.069 m from the sphere at A's close: a match in both → 1.0
        (-0.069, 'published', 1.0),
        (-0.069, 'corrected', 1.0),
        # exactly 0.07 m (exact in floating point): published matches → 1.0; corrected: A never starts → 0
        (-0.07, 'published', 1.0),
        (-0.07, 'corrected', 0.0),
    ],
)
def test_sequence_match_distance_is_inclusive_when_published(offset, variant, total):
    sphere = S4_OBJECTS['blue_sphere']
    assert float(np.linalg.norm(np.subtract((sphere[0] + offset, sphere[1]), sphere[:2]))) == abs(offset)
    motion = pick(scene(duration=14.0), arm='left', name='blue_sphere', start=sphere, offset=(offset, 0.0))
    record = score(SEQUENCE_BLUE, pick_green(motion, t0=5.0), S4_1, variant=variant)
    assert (record['intent_score'], record['exec_score']) == (total, total)


# Also in the code: nearest-object ties. Published takes the first object in recording order, corrected the
# first by name. The EE closes at x 0.0, exactly 0.05 m from the small red cube (x -0.05) and from the large
# red cylinder (x 0.05).
TIED = task('L0_pickup_right_cube', GroundTruth(2, 'pickup', 'left', 'small_red_cube'), S2)


@pytest.mark.parametrize(
    ('cube_first', 'variant', 'total'),
    [
        # cube recorded first: published picks it → 1.0; corrected picks 'large_red_cylinder' (by name) → 0
        (True, 'published', 1.0),
        (True, 'corrected', 0.0),
        # cylinder recorded first: the cylinder in both → 0
        (False, 'published', 0.0),
        (False, 'corrected', 0.0),
    ],
)
def test_nearest_object_ties(cube_first, variant, total):
    cube, cylinder = (-0.05, -0.20, 0.76), (0.05, -0.20, 0.775)
    tied = {'small_red_cube': cube, 'large_red_cylinder': cylinder}
    others = {name: p for name, p in S2_OBJECTS.items() if name not in tied}
    order = tied if cube_first else dict(reversed(tied.items()))
    scene2 = still(Motion(duration=10.0), order | others)
    motion = pick(scene2, arm='left', name='small_red_cube', start=cube, offset=(0.05, 0.0), lift=0.05)
    record = score(TIED, motion, S2, variant=variant)
    assert (record['intent_score'], record['exec_score']) == (total, total)
