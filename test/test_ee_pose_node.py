"""The ``ee_pose`` node over real DDS (its own process, private domain): joint states in, TCP poses out."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped
from graph_helpers import private_node, profile_without_robot, start_node_process, stop_node_process, wait_until
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState

from robofollow_ros import topics
from robofollow_ros.robot.description import load_robot
from robofollow_ros.robot.kinematics import forward_kinematics
from robofollow_ros.ros import qos
from robofollow_ros.ros.messages import joint_state_message
from robofollow_ros.state_layout import ARM_SLICE, ARMS

pytestmark = pytest.mark.ros
NOMINAL_DOMAIN = 31
"""Not used by another graph test (they take 10-59 through graph_helpers)."""
STAMP_NS = 1_234_567_890


def start_node(*parameters: str) -> subprocess.Popen[str]:
    return start_node_process(NOMINAL_DOMAIN, 'ee_pose', *parameters)


stop_node = stop_node_process


@pytest.fixture
def ros() -> Iterator[tuple[Node, SingleThreadedExecutor]]:
    with private_node(NOMINAL_DOMAIN, 'ee_pose_test', spin=False) as (node, executor):
        yield node, executor


def exchange(
    ros: tuple[Node, SingleThreadedExecutor], messages: dict[str, JointState], *, arms: tuple[str, ...] = ARMS
) -> dict[str, PoseStamped]:
    """Publish each topic's joint state until a pose of every arm in ``arms`` came back; the poses."""
    node, executor = ros
    poses: dict[str, PoseStamped] = {}
    for arm in ARMS:
        node.create_subscription(
            PoseStamped, topics.ee_pose_topic(arm), lambda m, arm=arm: poses.setdefault(arm, m), qos.STATE
        )
    pubs = {topic: node.create_publisher(JointState, topic, qos.STATE) for topic in messages}

    def answered() -> bool:
        for topic, message in messages.items():
            pubs[topic].publish(message)
        executor.spin_once(timeout_sec=0.2)
        return all(arm in poses for arm in arms)

    wait_until(answered, timeout=120, what='TCP poses from the ee_pose node')
    return poses


def assert_pose(message: PoseStamped, position: np.ndarray, quaternion: np.ndarray) -> None:
    p, o = message.pose.position, message.pose.orientation
    np.testing.assert_allclose([p.x, p.y, p.z], position, atol=1e-9)
    np.testing.assert_allclose([o.w, o.x, o.y, o.z], quaternion, atol=1e-9)
    assert message.header.frame_id == 'world'
    assert message.header.stamp.sec * 1_000_000_000 + message.header.stamp.nanosec == STAMP_NS


def test_ee_pose_publishes_each_tcp_from_urdf_named_joint_states(ros) -> None:
    robot = load_robot('aloha')
    state = robot.home_state() + np.linspace(-0.3, 0.3, 14)
    layout = robot.joint_layout
    names = [*layout.arm_joints['left'], *layout.arm_joints['right']]
    positions = [*state[ARM_SLICE['left']], *state[ARM_SLICE['right']]]
    process = start_node('robot:=aloha')
    node = ros[0]
    try:
        # Bad input first: a non-finite joint and names without positions are logged and skipped, not fatal.
        bad = node.create_publisher(JointState, topics.JOINT_STATES, qos.STATE)
        wait_until(lambda: bad.get_subscription_count() > 0, timeout=60, what='the ee_pose node to subscribe')
        bad.publish(joint_state_message(names, [float('nan')] * len(names), stamp_ns=1))
        bad.publish(JointState(name=names, position=[]))
        poses = exchange(ros, {topics.JOINT_STATES: joint_state_message(names, positions, stamp_ns=STAMP_NS)})
        assert process.poll() is None
    finally:
        err = stop_node(process)
    assert 'joint state ignored' in err
    expected = forward_kinematics('aloha').tcp_poses(state)
    for arm in ARMS:
        assert_pose(poses[arm], expected[arm].position, expected[arm].quaternion)


def test_ee_pose_reads_each_arm_through_the_interbotix_profile(ros) -> None:
    """xs_sdk publishes each follower's joints without the arm prefix, in its own namespace."""
    state = load_robot('aloha').home_state() + 0.2
    names = ['waist', 'shoulder', 'elbow', 'forearm_roll', 'wrist_angle', 'wrist_rotate', 'gripper', 'left_finger']
    messages = {
        f'/follower_{arm}/joint_states': joint_state_message(
            names, [*state[ARM_SLICE[arm]], 1.0, 0.05], stamp_ns=STAMP_NS
        )
        for arm in ARMS
    }
    process = start_node('robot_profile:=aloha_interbotix')
    try:
        poses = exchange(ros, messages)
    finally:
        stop_node(process)
    expected = forward_kinematics('aloha').tcp_poses(state)
    for arm in ARMS:
        assert_pose(poses[arm], expected[arm].position, expected[arm].quaternion)


def test_ee_pose_publishes_the_cells_joint_states_from_the_driver_topics(ros) -> None:
    """Real mode: /robofollow/joint_states carries both arms in the URDF's names and the policy's units (grippers as
    the URDF finger joint, like the sim's /joint_states), from xs_sdk's per-arm topics and units."""
    node, executor = ros
    state = load_robot('aloha').home_state() + 0.1
    names = ['waist', 'shoulder', 'elbow', 'forearm_roll', 'wrist_angle', 'wrist_rotate', 'gripper', 'left_finger']
    fingers = {'left': 0.0440, 'right': 0.0579}  # xs_sdk's closed and open finger positions (m)
    messages = {
        f'/follower_{arm}/joint_states': joint_state_message(
            names, [*state[ARM_SLICE[arm]], 1.0, fingers[arm]], stamp_ns=STAMP_NS
        )
        for arm in ARMS
    }
    seen: list[JointState] = []
    node.create_subscription(JointState, topics.CELL_JOINT_STATES, seen.append, qos.STATE)
    process = start_node('robot_profile:=aloha_interbotix')
    try:
        pubs = {topic: node.create_publisher(JointState, topic, qos.STATE) for topic in messages}

        def answered() -> bool:
            for topic, message in messages.items():
                pubs[topic].publish(message)
            executor.spin_once(timeout_sec=0.2)
            return bool(seen)

        wait_until(answered, timeout=120, what='/robofollow/joint_states from the ee_pose node')
    finally:
        stop_node(process)
    layout = load_robot('aloha').joint_layout
    expected = state.copy()
    expected[6], expected[13] = 0.0, 1.0  # normalised: closed left, open right
    message = seen[0]
    assert tuple(message.name) == layout.published_names
    np.testing.assert_allclose(message.position, layout.to_joints(expected), atol=1e-9)
    assert message.header.stamp.sec * 1_000_000_000 + message.header.stamp.nanosec == STAMP_NS


def test_ee_pose_refuses_a_profile_without_kinematics(tmp_path) -> None:
    process = start_node(f'robot_profile:={profile_without_robot(tmp_path)}')
    try:
        code = process.wait(timeout=120)
    finally:
        err = stop_node(process)
    assert code == 2
    assert "error: robot profile 'no_robot' names no robot description, so ee_pose has no kinematics" in err
