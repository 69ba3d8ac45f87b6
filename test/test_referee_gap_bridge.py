"""Object positions across a long silence (``referee.timeline.bridge``): a tracker publishes no pose while an
object's tag is hidden, e.g. under the gripper that pushes it; the referee then sees the object move along the
straight line from where it was last seen to where it shows again, instead of a jump once the arm is gone
(docs/real-cell.md). Silences up to ``max_gap`` (a camera's frame period) keep the zero-order hold."""

from __future__ import annotations

import numpy as np

from robofollow_ros.referee.timeline import NS_PER_S, Signal, bridge, hold

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
