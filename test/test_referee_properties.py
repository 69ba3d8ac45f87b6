"""Property tests, under both variants: scores do not depend on the sampling rate (frames not executed rows,
so windows are seconds) or the object order (no ties); bad values give clear errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from golden.episodes import pick, standing, still
from golden.scenes import S1, S4_1, task
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robofollow_ros.benchmark.constants import VARIANTS
from robofollow_ros.benchmark.types import GroundTruth
from robofollow_ros.errors import TrajectoryError
from robofollow_ros.referee.score import score_episode
from robofollow_ros.referee.synthetic import Motion
from robofollow_ros.referee.trajectory import Trajectory

S1_OBJECTS = standing(S1, {'red_cylinder': 0.765})
BEHIND = task(
    'L0_place_yellow_block_1_behind_red_cylinder',
    GroundTruth(1, 'place_relative', 'right', 'yellow_block_1', target='red_cylinder', relation='behind'),
    S1,
)
S4_OBJECTS = standing(S4_1, {'red_cube_in_bowl': 0.79, 'green_cylinder_top': 0.815})
PICK_GREEN = task('L0_s41_r_pick_green_cylinder_top', GroundTruth(4, 'pickup', 'right', 'green_cylinder_top'), S4_1)

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def away_from(low: float, high: float, *bands: tuple[float, float]) -> st.SearchStrategy[float]:
    """Floats in [low, high] outside every (a, b) band (thresholds with a margin)."""
    return st.floats(low, high).filter(lambda v: all(not a < v < b for a, b in bands))


@st.composite
def placements(draw) -> Motion:
    grasp = draw(away_from(0.0, 0.12, (0.06, 0.08)))
    lift = draw(st.sampled_from([0.0, 0.005, 0.03, 0.10]))
    distance = draw(away_from(0.03, 0.16, (0.11, 0.13)))
    angle = math.radians(draw(away_from(-80.0, 80.0, (-50.0, -40.0), (40.0, 50.0))))
    release = draw(st.booleans())
    place = (0.10 + distance * math.sin(angle), -0.04 + distance * math.cos(angle), 0.76)
    motion = still(Motion(duration=10.0), S1_OBJECTS)
    block = S1_OBJECTS['yellow_block_1']
    return pick(
        motion,
        arm='right',
        name='yellow_block_1',
        start=block,
        offset=(0, grasp),
        lift=lift,
        place=place,
        release=release,
    )


def summary(record: dict) -> tuple:
    return (
        record['intent_score'],
        record['exec_score'],
        record['completion_ok'],
        record.get('final_target_ok'),
        tuple((s['intent'], s['exec']) for s in record['stages']),
    )


@pytest.mark.parametrize('variant', VARIANTS)
@SETTINGS
@given(placements())
def test_scores_do_not_depend_on_the_sampling_rate(variant, motion):
    slow = score_episode(BEHIND, motion.sample(1 / 0.06), layout=S1, variant=variant).to_record()
    fast = score_episode(BEHIND, motion.sample(100.0), layout=S1, variant=variant).to_record()
    assert summary(slow) == summary(fast)


@pytest.mark.parametrize('variant', VARIANTS)
@SETTINGS
@given(grasp=away_from(0.0, 0.10, (0.06, 0.08)), lift=st.sampled_from([0.0, 0.005, 0.05]), rate=st.floats(10, 120))
def test_scene4_pickup_is_rate_independent(variant, grasp, lift, rate):
    motion = still(Motion(duration=9.0), S4_OBJECTS)
    pick(
        motion,
        arm='right',
        name='green_cylinder_top',
        start=S4_OBJECTS['green_cylinder_top'],
        offset=(0, grasp),
        lift=lift,
    )
    reference = score_episode(PICK_GREEN, motion.sample(1 / 0.06), layout=S4_1, variant=variant).to_record()
    other = score_episode(PICK_GREEN, motion.sample(rate), layout=S4_1, variant=variant).to_record()
    assert summary(reference) == summary(other)


@pytest.mark.parametrize('variant', VARIANTS)
@SETTINGS
@given(placements(), st.randoms(use_true_random=False))
def test_object_order_does_not_matter(variant, motion, random):
    trajectory = motion.sample(1 / 0.06)
    names = list(trajectory.obj_pos)
    random.shuffle(names)
    shuffled = Trajectory(
        t=trajectory.t,
        ee=trajectory.ee,
        grip=trajectory.grip,
        obj_pos={name: trajectory.obj_pos[name] for name in names},
        ee_quat=trajectory.ee_quat,
    )
    assert (
        score_episode(BEHIND, shuffled, layout=S1, variant=variant).to_record()
        == score_episode(BEHIND, trajectory, layout=S1, variant=variant).to_record()
    )


@pytest.mark.parametrize('variant', VARIANTS)
@SETTINGS
@given(
    frames=st.lists(st.integers(0, 166), min_size=1, max_size=200),
    signal=st.sampled_from(['ee', 'grip', 'obj', 'quat']),
)
def test_nan_values_are_dropped_or_rejected_clearly(variant, frames, signal):
    motion = still(Motion(duration=10.0), S1_OBJECTS)
    trajectory = pick(motion, arm='right', name='yellow_block_1', start=S1_OBJECTS['yellow_block_1']).sample(1 / 0.06)
    target = {
        'ee': trajectory.ee['right'],
        'grip': trajectory.grip['left'],
        'obj': trajectory.obj_pos['red_sphere'],
        'quat': trajectory.ee_quat['left'],
    }[signal]
    target[frames] = np.nan
    try:
        record = score_episode(BEHIND, trajectory, layout=S1, variant=variant).to_record()
    except TrajectoryError as error:
        assert 'frames have finite values' in str(error)
        assert len(set(frames)) > 167 - 2
    else:
        assert record['dropped_frames'] == len(set(frames))
        assert record['frames'] == 167 - len(set(frames))


@pytest.mark.parametrize('variant', VARIANTS)
def test_empty_trajectory_is_a_clear_error(variant):
    empty = Trajectory(
        t=np.zeros(0),
        ee={'left': np.zeros((0, 3)), 'right': np.zeros((0, 3))},
        grip={'left': np.zeros(0), 'right': np.zeros(0)},
        obj_pos={},
    )
    with pytest.raises(TrajectoryError, match='empty trajectory'):
        score_episode(BEHIND, empty, layout=S1, variant=variant)


@pytest.mark.parametrize('variant', VARIANTS)
def test_single_frame_trajectory_is_a_clear_error(variant):
    motion = still(Motion(duration=1.0), S1_OBJECTS)
    full = pick(motion, arm='right', name='yellow_block_1', start=S1_OBJECTS['yellow_block_1']).sample(1 / 0.06)
    one = Trajectory(
        t=full.t[:1],
        ee={arm: values[:1] for arm, values in full.ee.items()},
        grip={arm: values[:1] for arm, values in full.grip.items()},
        obj_pos={name: values[:1] for name, values in full.obj_pos.items()},
        ee_quat={arm: values[:1] for arm, values in full.ee_quat.items()},
    )
    with pytest.raises(TrajectoryError, match=r'only 1 frame\(s\) recorded'):
        score_episode(BEHIND, one, layout=S1, variant=variant)
