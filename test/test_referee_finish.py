"""Golden tests of the finish stage (protocol §4.6): the home window in seconds, lateness, leaving home again,
re-grasp and the completion-time rules. Scene 2 pickup: home radius 0.10 m, leave radius 0.14 m."""

from __future__ import annotations

import pytest
from golden.episodes import HOME, pick, score, standing, still
from golden.scenes import S1, S2, task

from robofollow_ros.benchmark.types import GroundTruth
from robofollow_ros.referee.synthetic import Motion

pytestmark = pytest.mark.usefixtures('scoring_variant')

OBJECTS = standing(S2, {'large_blue_cube': 0.77})
CUBE = OBJECTS['large_blue_cube']
PICKUP = task('L0_pickup_left_cube', GroundTruth(2, 'pickup', 'left', 'large_blue_cube'), S2)
LEFT_HOME = HOME['left']
AWAY = (-0.14, -0.13, 0.90)  # above the cube, 0.40 m from home


def away_then_home(*, home_at: float, duration: float = 20.0, after: tuple[tuple[float, tuple], ...] = ()) -> Motion:
    """Pick the cube (close 2.22 s, lifted >= 0.01 first at 2.64 s), hold it above its place, then jump home at
    ``home_at`` (the EE is away until 0.04 s before and home from ``home_at`` on)."""
    motion = pick(still(Motion(duration=duration), OBJECTS), arm='left', name='large_blue_cube', start=CUBE)
    motion.ee(
        'left',
        (0.0, LEFT_HOME),
        (1.5, (CUBE[0], CUBE[1], CUBE[2] + 0.04)),
        (2.5, (CUBE[0], CUBE[1], CUBE[2] + 0.04)),
        (3.5, AWAY),
        (home_at - 0.04, AWAY),
        (home_at, LEFT_HOME),
        *after,
    )
    return motion


def finish(record: dict) -> tuple[float, float, str]:
    stage = record['stages'][-1]
    return stage['intent'], stage['exec'], stage['intent_reason']


@pytest.mark.parametrize(('home_at', 'on_time'), [(13.44, True), (13.50, False)])
def test_return_within_ten_point_eight_seconds(home_at, on_time):
    # completion t_c = first lift sample 2.64 s; home first at 13.44 s → 10.80 s (allowed); 13.50 s → 10.86 s
    record = score(PICKUP, away_then_home(home_at=home_at), S2)
    assert finish(record)[:2] == ((0.2, 0.2) if on_time else (0.0, 0.0))
    assert record['intent_score'] == (1.0 if on_time else 0.8)


@pytest.mark.parametrize(('stay', 'settled'), [(1.14, True), (1.08, False)])
def test_home_must_hold_for_a_window_of_one_point_two_seconds(stay, settled):
    # home from 6.0 s for ``stay`` seconds, then 0.12 m from home (outside 0.10, inside the 0.14 leave radius)
    # until the end. 1.14 s = 20 samples at 0.06 s fill [t, t + 1.2 s); 1.08 s = 19 samples do not.
    near = (LEFT_HOME[0] + 0.12, LEFT_HOME[1], LEFT_HOME[2])
    after = ((6.0 + stay, LEFT_HOME), (6.0 + stay + 0.04, near))
    record = score(PICKUP, away_then_home(home_at=6.0, after=after), S2)
    assert finish(record)[0] == (0.2 if settled else 0.0)


def test_window_is_truncated_at_the_end():
    # home only at the very last sample (19.98 s): the window [19.98, 21.18) holds just that sample → home;
    # but 19.98 - 2.64 = 17.34 s > 10.8 s → late. With a 12 s episode the same return is on time.
    assert 'after completion' in finish(score(PICKUP, away_then_home(home_at=19.98), S2))[2]
    record = score(PICKUP, away_then_home(home_at=11.94, duration=11.94), S2)
    assert finish(record)[:2] == (0.2, 0.2)


@pytest.mark.parametrize(('excursion', 'stays'), [(0.139, True), (0.141, False)])
def test_leaving_home_again(excursion, stays):
    out = (LEFT_HOME[0] + excursion, LEFT_HOME[1], LEFT_HOME[2])
    after = ((10.0, LEFT_HOME), (10.5, out), (11.0, LEFT_HOME))
    record = score(PICKUP, away_then_home(home_at=6.0, after=after), S2)
    assert finish(record)[0] == (0.2 if stays else 0.0)


def test_regrasp_after_completion_fails():
    motion = away_then_home(home_at=6.0)
    motion.grip('left', (2.0, 1.0), (2.3, 0.0), (8.0, 0.0), (8.3, 1.0), (9.0, 1.0), (9.3, 0.0))
    reason = finish(score(PICKUP, motion, S2))[2]
    assert 'closes again' in reason


@pytest.mark.parametrize(('x', 'inside'), [(0.15, True), (0.151, False)])
def test_operation_area_edge(x, inside):
    motion = away_then_home(home_at=6.0)
    right = HOME['right']
    motion.ee('right', (0.0, right), (8.0, right), (8.5, (x, 0.0, 0.80)), (8.7, (x, 0.0, 0.80)), (9.2, right))
    assert finish(score(PICKUP, motion, S2))[0] == (0.0 if inside else 0.2)


BEHIND = task(
    'L0_place_yellow_block_1_behind_red_cylinder',
    GroundTruth(1, 'place_relative', 'right', 'yellow_block_1', target='red_cylinder', relation='behind'),
    S1,
)


@pytest.mark.parametrize(('home_at', 'on_time'), [(16.62, True), (16.68, False)])
def test_relation_completion_time_is_the_release(home_at, on_time):
    # Scene 1 relation: t_c = the opening at 5.82 s; home by 5.82 + 10.8 = 16.62 s is on time
    objects = standing(S1, {'red_cylinder': 0.765})
    block = objects['yellow_block_1']
    motion = pick(
        still(Motion(duration=20.0), objects), arm='right', name='yellow_block_1', start=block, place=(0.10, 0.02, 0.76)
    )
    above = (0.10, 0.02, 0.90)
    motion.ee(
        'right',
        (0.0, HOME['right']),
        (1.5, (block[0], block[1], 0.80)),
        (2.5, (block[0], block[1], 0.80)),
        (3.5, (block[0], block[1], 0.90)),
        (5.0, above),
        (5.5, (0.10, 0.02, 0.80)),
        (6.0, (0.10, 0.02, 0.80)),
        (6.3, above),
        (home_at - 0.04, above),
        (home_at, HOME['right']),
    )
    record = score(BEHIND, motion, S1)
    assert record['events']['open'] == pytest.approx(5.82)
    assert record['stages'][2]['intent'] == (0.2 if on_time else 0.0)
