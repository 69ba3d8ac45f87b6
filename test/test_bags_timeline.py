"""Asynchronous topics: frames on the EE pose stamps, zero-order hold, dropped start, gap detection."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin
from test_bags_support import JOINTS, POSE, STRING, joints_cdr, pose_cdr, string_cdr, write_raw_bag

from robofollow_ros.bags import read_episode_bag

S = 1_000_000_000
EPISODE = ('/robofollow/episode', STRING, 0, string_cdr(json.dumps({'task_id': 'async'})))


def ns(seconds: float) -> int:
    return round(seconds * S)


def ee(arm: str, t: float, x: float) -> tuple[str, str, int, bytes]:
    return (f'/robofollow/ee/{arm}/pose', POSE, ns(t), pose_cdr(ns(t), (x, 0.0, 0.0)))


def obj(name: str, t: float, x: float, *, log: float | None = None) -> tuple[str, str, int, bytes]:
    return (f'/robofollow/objects/{name}/pose', POSE, ns(t if log is None else log), pose_cdr(ns(t), (x, 1.0, 2.0)))


def grip(t: float, values: dict[str, float]) -> tuple[str, str, int, bytes]:
    return ('/joint_states', JOINTS, ns(t), joints_cdr(ns(t), list(values), list(values.values())))


@pytest.mark.parametrize('storage', [StoragePlugin.MCAP, StoragePlugin.SQLITE3], ids=['mcap', 'sqlite3'])
def test_zero_order_hold_of_topics_at_different_rates(tmp_path, storage):
    ee_times = [1.0 + 0.1 * i for i in range(11)]
    messages = [
        EPISODE,
        grip(0.95, {'right_gripper': 0.2}),
        *[ee(arm, t, 10 * t) for t in ee_times for arm in ('left', 'right')],
        grip(1.05, {'left_joint1': 0.3, 'left_gripper': 0.1}),
        grip(1.45, {'left_gripper': 0.5}),
        grip(1.5, {'right_gripper': 0.6}),
        grip(1.85, {'left_gripper': 0.9}),
        obj('cube', 1.02, 1.02),
        obj('cube', 1.68, 1.68),
        obj('cube', 1.35, 1.35, log=1.9),
        obj('cube', 1.68, 1.69, log=1.95),
        obj('cube', 2.01, 2.01),
    ]
    meta, trajectory = read_episode_bag(write_raw_bag(tmp_path / 'bag', messages, storage=storage))

    assert meta == {'task_id': 'async'}
    frames = [1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0]
    np.testing.assert_allclose(trajectory.t, frames, rtol=0, atol=1e-9)
    np.testing.assert_allclose(trajectory.ee['left'][:, 0], [10 * t for t in frames])
    np.testing.assert_allclose(trajectory.ee['right'][:, 0], [10 * t for t in frames])
    np.testing.assert_array_equal(trajectory.grip['left'], [0.1, 0.1, 0.1, 0.1, 0.5, 0.5, 0.5, 0.5, 0.9, 0.9])
    np.testing.assert_array_equal(trajectory.grip['right'], [0.2, 0.2, 0.2, 0.2, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6])
    cube_x = [1.02, 1.02, 1.02, 1.35, 1.35, 1.35, 1.69, 1.69, 1.69, 1.69]
    np.testing.assert_array_equal(trajectory.obj_pos['cube'][:, 0], cube_x)
    np.testing.assert_array_equal(trajectory.obj_pos['cube'][:, 1:], np.tile([1.0, 2.0], (10, 1)))
    np.testing.assert_array_equal(trajectory.obj_quat['cube'], np.tile([1.0, 0.0, 0.0, 0.0], (10, 1)))
    assert len(trajectory.gaps) == 1
    np.testing.assert_allclose(trajectory.gaps[0], (1.1, 1.5), rtol=0, atol=1e-9)


def test_frames_are_the_union_of_both_arms_stamps(tmp_path):
    messages = [
        EPISODE,
        grip(0.0, {'left_gripper': 1.0, 'right_gripper': 0.0}),
        obj('cube', 0.0, 0.5),
        ee('left', 0.0, 0.0),
        ee('left', 0.2, 2.0),
        ee('left', 0.4, 4.0),
        ee('right', 0.1, -1.0),
        ee('right', 0.3, -3.0),
    ]
    _, trajectory = read_episode_bag(write_raw_bag(tmp_path / 'bag', messages))
    np.testing.assert_allclose(trajectory.t, [0.1, 0.2, 0.3, 0.4], rtol=0, atol=1e-9)
    np.testing.assert_array_equal(trajectory.ee['left'][:, 0], [0.0, 2.0, 2.0, 4.0])
    np.testing.assert_array_equal(trajectory.ee['right'][:, 0], [-1.0, -1.0, -3.0, -3.0])


def test_random_rates_match_a_reference_hold(tmp_path):
    rng = np.random.default_rng(11)
    ee_t = np.sort(rng.choice(np.arange(0, 3000), size=120, replace=False)) / 1000
    obj_t = np.sort(rng.choice(np.arange(0, 3000), size=45, replace=False)) / 1000
    grip_t = np.sort(rng.choice(np.arange(0, 3000), size=70, replace=False)) / 1000
    messages = [EPISODE]
    messages += [ee(arm, t, t) for t in ee_t for arm in ('left', 'right')]
    messages += [obj('ball', t, 100 + t) for t in obj_t]
    messages += [grip(t, {'left_gripper': t / 10, 'right_gripper': 1 - t / 10}) for t in grip_t]
    _, trajectory = read_episode_bag(write_raw_bag(tmp_path / 'bag', messages))

    start = max(ee_t[0], obj_t[0], grip_t[0])
    expected_frames = [t for t in ee_t if t >= start]
    np.testing.assert_allclose(trajectory.t, expected_frames, rtol=0, atol=1e-9)
    for i, frame in enumerate(expected_frames):
        latest_obj = max(t for t in obj_t if t <= frame + 1e-12)
        latest_grip = max(t for t in grip_t if t <= frame + 1e-12)
        assert trajectory.obj_pos['ball'][i, 0] == 100 + latest_obj
        assert trajectory.grip['left'][i] == latest_grip / 10
        assert trajectory.grip['right'][i] == 1 - latest_grip / 10


def gap_messages() -> list[tuple[str, str, int, bytes]]:
    ee_t = [i / 50 for i in range(201) if not 1.0 < i / 50 < 1.8]
    grip_t = [i / 20 for i in range(81) if not 2.0 < i / 20 < 2.4]
    cube_t = [i / 10 for i in range(31)]
    ball_t = [i / 10 for i in range(41) if not 1.5 < i / 10 < 2.2]
    return [
        EPISODE,
        *[ee(arm, t, t) for t in ee_t for arm in ('left', 'right')],
        *[grip(t, {'left_gripper': 1.0, 'right_gripper': 1.0}) for t in grip_t],
        *[obj('cube', t, t) for t in cube_t],
        *[obj('ball', t, t) for t in ball_t],
    ]


def test_gaps_are_detected_merged_and_frames_kept(tmp_path):
    bag = write_raw_bag(tmp_path / 'bag', gap_messages())
    _, trajectory = read_episode_bag(bag)
    assert len(trajectory) == 201 - 39
    assert trajectory.t[-1] == pytest.approx(4.0)
    assert len(trajectory.gaps) == 2
    np.testing.assert_allclose(trajectory.gaps, [(1.0, 2.2), (3.0, 4.0)], rtol=0, atol=1e-9)

    _, loose = read_episode_bag(bag, max_gap=0.75)
    np.testing.assert_allclose(loose.gaps, [(1.0, 1.8), (3.0, 4.0)], rtol=0, atol=1e-9)
    _, looser = read_episode_bag(bag, max_gap=1.0)
    assert looser.gaps == ()


def test_gap_that_started_before_the_first_frame_is_clipped(tmp_path):
    messages = [
        EPISODE,
        obj('cube', 0.0, 0.0),
        grip(0.0, {'left_gripper': 1.0, 'right_gripper': 1.0}),
        *[grip(1.0 + i / 10, {'left_gripper': 1.0, 'right_gripper': 1.0}) for i in range(11)],
        *[ee(arm, 0.3 + i / 10, 0.0) for i in range(18) for arm in ('left', 'right')],
        obj('cube', 1.2, 0.0),
        *[obj('cube', 1.2 + i / 10, 0.0) for i in range(1, 9)],
    ]
    _, trajectory = read_episode_bag(write_raw_bag(tmp_path / 'bag', messages))
    assert trajectory.t[0] == pytest.approx(0.3)
    np.testing.assert_allclose(trajectory.gaps, [(0.3, 1.2)], rtol=0, atol=1e-9)
