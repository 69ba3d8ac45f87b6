"""JointTrajectory CDR without message objects: rclpy reads what we write, we read what rclpy writes."""

from __future__ import annotations

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from rclpy.serialization import deserialize_message, serialize_message
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robofollow_ros.errors import GraphError
from robofollow_ros.robot.description import joint_layout
from robofollow_ros.ros.messages import to_time
from robofollow_ros.ros.trajectory_cdr import decode_trajectory, encode_trajectory, row_times_ns, trajectory_digest
from robofollow_ros.safety.jtc import check_trajectory

STAMP_NS = 1_796_000_123 * 1_000_000_000 + 456_789_012
ROW_SECONDS = 0.02


def _message(
    names: list[str], rows: np.ndarray, *, frame_id: str = '', extras: bool = False, stamp_ns: int = STAMP_NS
) -> JointTrajectory:
    message = JointTrajectory(joint_names=names)
    message.header.stamp = to_time(stamp_ns)
    message.header.frame_id = frame_id
    for index, row in enumerate(rows):
        due_ns = round((index + 1) * ROW_SECONDS * 1e9)
        point = JointTrajectoryPoint(
            positions=[float(v) for v in row],
            time_from_start=Duration(sec=due_ns // 1_000_000_000, nanosec=due_ns % 1_000_000_000),
        )
        if extras:
            point.velocities = [0.5] * (len(row) + index % 3)
            point.effort = [1.0] * (index % 2)
        message.points.append(point)
    return message


@pytest.mark.parametrize('rows', [1, 2, 7, 50])
@pytest.mark.parametrize('robot', ['aloha', 'primitive'])
def test_rclpy_reads_the_bytes_as_the_message_built_field_by_field(rows: int, robot: str) -> None:
    layout = joint_layout(robot)
    chunk = np.random.default_rng(rows).uniform(-1, 1, size=(rows, 14))
    for arm in ('left', 'right'):
        names = list(layout.command_joints(arm))
        positions = layout.arm_command(chunk, arm)
        data = encode_trajectory(names, positions, row_seconds=ROW_SECONDS)
        message = deserialize_message(data, JointTrajectory)
        assert message == _message(names, positions, stamp_ns=0)  # zero: a JTC starts it on arrival
        assert not check_trajectory(message, controller_joints=names)
        times_ns = row_times_ns(rows, ROW_SECONDS)
        digest = trajectory_digest(names, positions, times_ns)
        assert decode_trajectory(serialize_message(message)).digest() == decode_trajectory(data).digest() == digest
        moved = positions.copy()
        moved[-1, -1] += 1e-12
        assert trajectory_digest(names, moved, times_ns) != digest
        assert trajectory_digest(names, positions, times_ns * 2) != digest


def test_an_empty_trajectory_is_never_encoded() -> None:
    # A JointTrajectoryController rejects it and the arm keeps going (ros2_controllers#902): a hold has one point.
    with pytest.raises(GraphError, match='at least one row'):
        encode_trajectory(['a', 'b'], np.zeros((0, 2)), row_seconds=ROW_SECONDS)
    with pytest.raises(GraphError, match='positive row period'):
        encode_trajectory(['a', 'b'], np.zeros((1, 2)), row_seconds=0.0)


@pytest.mark.parametrize('frame_id', ['', 'world', 'a frame of odd length'])
@pytest.mark.parametrize('rows', [0, 1, 3, 50])
def test_what_rclpy_writes_decodes_to_its_stamp_names_and_positions(frame_id: str, rows: int) -> None:
    names = ['j', 'joint_two', 'a_much_longer_joint_name', 'x1']
    positions = np.random.default_rng(7).normal(size=(rows, len(names)))
    message = _message(names, positions, frame_id=frame_id, extras=True)
    decoded = decode_trajectory(serialize_message(message))
    assert decoded.stamp_ns == STAMP_NS and decoded.names == names
    assert decoded.positions.shape == (rows, len(names))
    np.testing.assert_array_equal(decoded.positions, positions)


def test_bad_bytes_are_refused_with_a_graph_error() -> None:
    names = ['a', 'b']
    good = serialize_message(_message(names, np.ones((3, 2))))
    with pytest.raises(GraphError, match=r'past the end|malformed'):
        decode_trajectory(good[:60])
    with pytest.raises(GraphError, match='little-endian'):
        decode_trajectory(b'\x00\x00\x00\x00' + good[4:])
    lying = bytearray(good)
    lying[4 + 8 + 4 + 4] = 0xFF  # the joint-name count, after stamp and the empty frame_id (length 1, '\0', pad)
    with pytest.raises(GraphError):
        decode_trajectory(bytes(lying))
    uneven = _message(names, np.ones((2, 2)))
    uneven.points[1].positions = [1.0]
    with pytest.raises(GraphError, match='2 positions each'):
        decode_trajectory(serialize_message(uneven))
