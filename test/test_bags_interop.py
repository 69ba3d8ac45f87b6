"""CDR interop with ROS 2 itself: rclpy reads what write_episode_bag writes, and rclpy-serialized bags read back.

deserialize_message / serialize_message need no rclpy.init, so no DDS traffic happens here.
"""

from __future__ import annotations

import json

import geometry_msgs.msg as geometry_msgs
import numpy as np
import pytest
import rclpy.serialization as serialization
import sensor_msgs.msg as sensor_msgs
import std_msgs.msg as std_msgs
from rosbags.rosbag2 import Reader
from test_bags_support import META, POSE, synthetic_trajectory, write_raw_bag

from robofollow_interfaces.msg import EpisodeSpec, Result
from robofollow_ros.bags import read_episode_bag, write_episode_bag
from robofollow_ros.interfaces import EPISODE_SPEC_FIELDS


def raw_messages(bag, topic):
    with Reader(bag) as reader:
        connections = [c for c in reader.connections if c.topic == topic]
        return [bytes(data) for _, _, data in reader.messages(connections=connections)]


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_rclpy_deserializes_every_message_we_write(tmp_path, storage):
    n = 8
    trajectory = synthetic_trajectory(n)
    joints = np.linspace(-1, 1, n * 14).reshape(n, 14)
    joints[:, 6], joints[:, 13] = trajectory.grip['left'], trajectory.grip['right']
    pixels = np.arange(6 * 5 * 3, dtype=np.uint8).reshape(6, 5, 3)
    bag = write_episode_bag(
        tmp_path / 'bag',
        meta=META,
        trajectory=trajectory,
        joint_positions=joints,
        images={'cam_high': [pixels] * n},
        result={'ok': 1},
        storage=storage,
    )
    deserialize = serialization.deserialize_message

    (episode,) = raw_messages(bag, '/robofollow/episode')
    spec = deserialize(episode, EpisodeSpec)
    assert spec.version == EpisodeSpec.VERSION and {name: getattr(spec, name) for name in META} == META
    (companion,) = raw_messages(bag, '/robofollow/episode_meta')
    assert json.loads(deserialize(companion, std_msgs.String).data) == {'extra': {}, 'absent': ['episode_id']}
    (result,) = raw_messages(bag, '/robofollow/result')
    typed = deserialize(result, Result)  # written by rosbags from the .msg files, read by rclpy's generated type
    assert typed.version == Result.VERSION and json.loads(typed.record_json) == {'ok': 1}

    for i, data in enumerate(raw_messages(bag, '/robofollow/ee/right/pose')):
        msg = deserialize(data, geometry_msgs.PoseStamped)
        assert msg.header.frame_id == 'world'
        assert msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec == round(trajectory.t[i] * 1e9)
        p, q = msg.pose.position, msg.pose.orientation
        assert [p.x, p.y, p.z] == trajectory.ee['right'][i].tolist()
        assert [q.w, q.x, q.y, q.z] == trajectory.ee_quat['right'][i].tolist()

    for i, data in enumerate(raw_messages(bag, '/joint_states')):
        msg = deserialize(data, sensor_msgs.JointState)
        assert list(msg.name)[:7] == [*(f'left_joint{k}' for k in range(1, 7)), 'left_gripper']
        assert list(msg.position) == joints[i].tolist()

    images = raw_messages(bag, '/cam_high/image_raw')
    assert len(images) == n
    image = deserialize(images[0], sensor_msgs.Image)
    assert (image.height, image.width, image.encoding, image.step) == (6, 5, 'rgb8', 15)
    assert image.header.frame_id == 'cam_high_optical_frame'
    assert bytes(image.data) == pixels.tobytes()


def test_bag_of_rclpy_serialized_messages_reads_back(tmp_path):
    n = 25
    trajectory = synthetic_trajectory(n)
    serialize = serialization.serialize_message
    messages = []
    for i in range(n):
        stamp = round(trajectory.t[i] * 1e9)

        def header(frame, stamp=stamp):
            h = std_msgs.Header(frame_id=frame)
            h.stamp.sec, h.stamp.nanosec = divmod(stamp, 10**9)
            return h

        joint_state = sensor_msgs.JointState(
            header=header(''),
            name=['left_gripper', 'right_gripper'],
            position=[float(trajectory.grip['left'][i]), float(trajectory.grip['right'][i])],
        )
        messages.append(('/joint_states', 'sensor_msgs/msg/JointState', stamp, serialize(joint_state)))
        for topic, position, quat in [
            *[
                (f'/robofollow/ee/{arm}/pose', trajectory.ee[arm][i], trajectory.ee_quat[arm][i])
                for arm in ('left', 'right')
            ],
            *[
                (f'/robofollow/objects/{name}/pose', trajectory.obj_pos[name][i], trajectory.obj_quat[name][i])
                for name in trajectory.obj_pos
            ],
        ]:
            pose = geometry_msgs.PoseStamped(header=header('world'))
            pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = (float(v) for v in position)
            o = pose.pose.orientation
            o.w, o.x, o.y, o.z = (float(v) for v in quat)
            messages.append((topic, POSE, stamp, serialize(pose)))
    episode = serialize(std_msgs.String(data=json.dumps(META)))
    messages.insert(0, ('/robofollow/episode', 'std_msgs/msg/String', 0, episode))

    meta, back = read_episode_bag(write_raw_bag(tmp_path / 'bag', messages))
    assert meta == META
    np.testing.assert_allclose(back.t, trajectory.t, rtol=0, atol=1e-9)
    for arm in ('left', 'right'):
        np.testing.assert_array_equal(back.ee[arm], trajectory.ee[arm])
        np.testing.assert_array_equal(back.ee_quat[arm], trajectory.ee_quat[arm])
        np.testing.assert_array_equal(back.grip[arm], trajectory.grip[arm])
    for name in trajectory.obj_pos:
        np.testing.assert_array_equal(back.obj_pos[name], trajectory.obj_pos[name])
        np.testing.assert_array_equal(back.obj_quat[name], trajectory.obj_quat[name])


def test_the_spec_fields_a_bag_stores_are_the_fields_of_the_built_message():
    """The writer fills every field of rclpy's EpisodeSpec (``interfaces.EPISODE_SPEC_FIELDS``), with its type."""
    declared = dict(EpisodeSpec.get_fields_and_field_types())
    assert declared.pop('version') == 'uint16'
    assert {name: {'string': str, 'int64': int}[kind] for name, kind in declared.items()} == EPISODE_SPEC_FIELDS
