"""Object positions across a long silence (``referee.timeline.bridge``): a tracker publishes no pose while an
object's tag is hidden, e.g. under the gripper that pushes it; the referee then sees the object move along the
straight line from where it was last seen to where it shows again, instead of a jump once the arm is gone
(docs/real-cell.md). Silences up to ``max_gap`` (a camera's frame period) keep the zero-order hold. An object first
seen a little after the episode started (the camera's first image) is held back to the arms' first frame."""

from __future__ import annotations

import numpy as np

from robofollow_ros import topics
from robofollow_ros.benchmark.types import ARMS
from robofollow_ros.referee.builder import TrajectoryBuilder
from robofollow_ros.referee.timeline import Signal, bridge, hold
from robofollow_ros.units import NS_PER_S

MS = NS_PER_S // 1000


def signal(stamps_ms: list[int], xs: list[float]) -> Signal:
    values = np.array([[x, 0.5, 0.77] for x in xs])
    return Signal('cube', np.array(stamps_ms, dtype=np.int64) * MS, values)


def test_a_long_silence_is_bridged_linearly_and_a_short_one_held() -> None:
    pushed = signal([0, 100, 1100, 1200], [0.0, 0.0, 0.05, 0.05])  # hidden from 0.1 s to 1.1 s, moved 5 cm
    frames = np.array([0, 50, 100, 350, 600, 1100, 1150, 1300], dtype=np.int64) * MS
    bridged = bridge(pushed, frames, max_gap_ns=500 * MS)
    np.testing.assert_allclose(bridged[:, 0], [0.0, 0.0, 0.0, 0.0125, 0.025, 0.05, 0.05, 0.05])
    np.testing.assert_allclose(bridged[:, 1:], hold(pushed, frames)[:, 1:])
    # The same silence within max_gap: held, as every signal is.
    np.testing.assert_array_equal(bridge(pushed, frames, max_gap_ns=2000 * MS), hold(pushed, frames))


def test_after_the_last_sample_the_position_is_held() -> None:
    lost = signal([0, 100], [0.1, 0.2])  # covered for good (a cube under another)
    frames = np.array([100, 900, 5000], dtype=np.int64) * MS
    np.testing.assert_array_equal(bridge(lost, frames, max_gap_ns=500 * MS), hold(lost, frames))


def test_a_tracked_episode_starts_with_the_arms_not_with_the_cameras_first_image() -> None:
    builder = TrajectoryBuilder()
    for k in range(10):  # the arms from the reset on, every 0.1 s
        stamp = k * 100 * MS
        for arm in ARMS:
            builder.add_pose(topics.ee_pose_topic(arm), stamp, (0.1 * k, 0.0, 1.0), (1.0, 0.0, 0.0, 0.0))
        builder.add_joint_state(stamp, ['left_gripper', 'right_gripper'], [0.2 + 0.1 * k, 1.0])
    # The cube's first tracked pose comes with the camera's first image, 0.25 s after the reset.
    cube = topics.object_pose_topic('cube')
    builder.add_pose(cube, 250 * MS, (0.3, 0.2, 0.77), (1.0, 0.0, 0.0, 0.0))
    builder.add_pose(cube, 700 * MS, (0.3, 0.2, 0.77), (1.0, 0.0, 0.0, 0.0))
    trajectory = builder.build().trajectory
    assert trajectory.t[0] == 0.0 and len(trajectory.t) == 10  # the gripper's first values are scored too
    np.testing.assert_allclose(trajectory.obj_pos['cube'], np.tile([0.3, 0.2, 0.77], (10, 1)))
    np.testing.assert_allclose(trajectory.obj_quat['cube'], np.tile([1.0, 0.0, 0.0, 0.0], (10, 1)))
