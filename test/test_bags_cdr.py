"""The batch PoseStamped decoder agrees with the rosbags typestore on every layout it may meet."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bags_support import POSE, TS, joints_cdr, pose_cdr

from robofollow_ros.bags.cdr import decode_joint_state, decode_poses
from robofollow_ros.errors import BagError

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
pose_strategy = st.tuples(
    st.integers(0, 2**31 - 1),
    st.integers(0, 10**9 - 1),
    st.text(alphabet='abcdefghij_/', max_size=13),
    st.lists(finite, min_size=7, max_size=7),
    st.booleans(),
)


def serialize(sec, nanosec, frame, values, little_endian):
    types = TS.types
    msg = types[POSE](
        header=types['std_msgs/msg/Header'](
            stamp=types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec), frame_id=frame
        ),
        pose=types['geometry_msgs/msg/Pose'](
            position=types['geometry_msgs/msg/Point'](x=values[0], y=values[1], z=values[2]),
            orientation=types['geometry_msgs/msg/Quaternion'](x=values[3], y=values[4], z=values[5], w=values[6]),
        ),
    )
    return bytes(TS.serialize_cdr(msg, POSE, little_endian=little_endian))


@settings(max_examples=60, deadline=None)
@given(st.lists(pose_strategy, min_size=1, max_size=12))
def test_batch_decode_matches_message_by_message_decode(poses):
    data = [serialize(*pose) for pose in poses]
    series = decode_poses(TS, data, topic='/t')
    for i, (sec, nanosec, _, values, _) in enumerate(poses):
        assert series.stamp_ns[i] == sec * 10**9 + nanosec
        assert series.position[i].tolist() == values[:3]
        assert series.quat[i].tolist() == [values[6], values[3], values[4], values[5]]
    assert series.frames == {frame for _, _, frame, _, _ in poses}


def test_trailing_bytes_after_a_message_are_ignored():
    pose = pose_cdr(5, (1.0, 2.0, 3.0), (0.0, 1.0, 0.0, 0.0)) + b'\x91\x01\x00\x00\x70\x00\x00\x00'
    series = decode_poses(TS, [pose, pose_cdr(7, (4.0, 5.0, 6.0))], topic='/t')
    assert series.stamp_ns.tolist() == [5, 7]
    np.testing.assert_array_equal(series.position, [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(series.quat, [[0, 1, 0, 0], [1, 0, 0, 0]])

    joints = joints_cdr(3, ['left_gripper'], [0.25]) + b'\xaa' * 8
    sample = decode_joint_state(TS, joints, topic='/joint_states')
    assert (sample.stamp_ns, sample.names, sample.position.tolist()) == (3, ['left_gripper'], [0.25])


def test_a_message_cut_short_is_a_bag_error():
    """rosbags reports a sequence longer than the bytes left as its own SerdeError; readers see a BagError."""
    joints = joints_cdr(3, ['left_gripper', 'right_gripper'], [0.25, 0.5])
    for length in range(4, len(joints)):
        with pytest.raises(BagError):
            decode_joint_state(TS, joints[:length], topic='/joint_states')
