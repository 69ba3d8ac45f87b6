"""The arms at an image's stamp (``tracking/stamp_alignment.py``): an arm lifting at 0.5 m/s with its samples
arriving late and out of order is read where it was when the image was taken, and a grasp's TCP is the one at the
moment the gripper closed, not where the arm had got to by the next image."""

from __future__ import annotations

import numpy as np

from robofollow_ros.tracking.grasp import RigidPose
from robofollow_ros.tracking.stamp_alignment import KEEP_NS, StampAligner

MS = 1_000_000


def lifting(t_ns: int) -> RigidPose:
    """The TCP at ``t_ns``: rising 0.5 m/s from z 0.80 m."""
    return RigidPose.from_yaw(0.1, 0.2, 0.80 + 0.5 * t_ns / 1e9, 0.0)


def test_the_tcp_at_an_image_stamp_is_interpolated_between_the_samples_around_it() -> None:
    arms = StampAligner()
    for t in (40, 0, 20, 60):  # (out of order, as two callbacks may deliver them)
        arms.add_tcp('left', t * MS, lifting(t * MS))
        arms.add_grip('left', t * MS, False)
    aligned = arms.at(30 * MS, since_ns=None)
    assert np.allclose(aligned.tcps['left'].position, lifting(30 * MS).position)
    assert aligned.closed == {'left': False} and aligned.closing == {}
    # Before the first sample, the first; after the last, the last.
    assert np.allclose(arms.at(-5 * MS, since_ns=None).tcps['left'].position, lifting(0).position)
    assert np.allclose(arms.at(90 * MS, since_ns=None).tcps['left'].position, lifting(60 * MS).position)


def test_covers_waits_for_every_arm_heard_from() -> None:
    arms = StampAligner()
    assert arms.covers(10 * MS)  # nothing heard: nothing to wait for
    arms.add_tcp('left', 20 * MS, lifting(0))
    arms.add_grip('left', 20 * MS, False)
    arms.add_tcp('right', 5 * MS, lifting(0))
    assert not arms.covers(10 * MS)
    arms.add_tcp('right', 12 * MS, lifting(0))
    assert arms.covers(10 * MS) and not arms.covers(15 * MS)


def test_a_grasp_takes_the_tcp_at_the_closing_and_only_once() -> None:
    arms = StampAligner()
    for t in range(0, 200, 10):
        arms.add_tcp('left', t * MS, lifting(t * MS))
        arms.add_grip('left', t * MS, t >= 70)  # the gripper closes at 70 ms, then the arm lifts on
    first = arms.at(150 * MS, since_ns=50 * MS)  # the first image after the closing was taken 80 ms later
    assert first.closed == {'left': True}
    assert np.allclose(first.closing['left'].position, lifting(70 * MS).position)
    assert np.allclose(first.tcps['left'].position, lifting(150 * MS).position)
    assert abs(first.tcps['left'].position[2] - first.closing['left'].position[2]) > 0.03
    assert arms.at(190 * MS, since_ns=150 * MS).closing == {}  # the next image: no new closing
    # An image taken before the closing sees the gripper open, whatever arrived since.
    assert arms.at(60 * MS, since_ns=None).closed == {'left': False}
    assert (arms.closed_at('left', 60 * MS), arms.closed_at('left', 70 * MS), arms.closed_at('right', 70 * MS)) == (
        False,
        True,
        False,
    )


def test_old_samples_are_let_go() -> None:
    arms = StampAligner()
    for t in range(0, 5000, 100):
        arms.add_tcp('left', t * MS, lifting(t * MS))
    kept = [stamp for stamp, _ in arms.arms['left'].tcps]
    assert kept[0] >= kept[-1] - KEEP_NS and len(kept) < 50
