"""ee_pose's commanded grips (``realcell/commanded_grips.py``) of a gripper closed on an object stay closed across
chunks.

A gripper holding a block measures about 0.6 open. A JointTrajectoryController starts each new trajectory from the
measured state, and the commanded grips of /robofollow/joint_states modelled exactly that, so with a ros2_control
profile every chunk after a grasp read as the gripper opening and closing again: the referee scored "the gripper
closes again" on tasks the expert did right (bench/bench_real_mode.py). The commanded grip continues from the grip
commanded so far, as the simulated cell's state holds it. The node only hosts subscriptions: nothing goes over DDS.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from builtin_interfaces.msg import Duration
from graph_helpers import private_node
from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robofollow_ros.realcell.commanded_grips import CommandedGrips
from robofollow_ros.robot.profiles import load_profile
from robofollow_ros.state_layout import GRIP_INDEX

pytestmark = pytest.mark.ros
NOMINAL_DOMAIN = 57
HOLDING = 0.6
"""The measured opening of a gripper closed on a 4 cm block (normalised)."""


@pytest.fixture
def ros() -> Iterator[Node]:
    with private_node(NOMINAL_DOMAIN, 'grip_continuity_test', spin=False) as (node, _executor):
        yield node


def closed_gripper_trajectory(joint: str, value: float) -> JointTrajectory:
    """The left gripper controller's one-row chunk: closed, due in one row period (stamp zero: start now)."""
    return JointTrajectory(
        joint_names=[joint],
        points=[JointTrajectoryPoint(positions=[value], time_from_start=Duration(sec=0, nanosec=60_000_000))],
    )


def test_the_commanded_grip_of_a_jtc_gripper_holding_a_block_stays_closed_across_chunks(ros: Node) -> None:
    profile = load_profile('aloha_ros2_control')
    grips = CommandedGrips(ros, profile)
    spec = profile.arms['left'].gripper
    (topic,) = [command for command in grips.model.topics if command.topic == spec.interface.topic]
    message = closed_gripper_trajectory(spec.command.joint, spec.command.to_driver(0.0))
    measured = profile.home_state()
    column = GRIP_INDEX['left']

    def now() -> int:
        return ros.get_clock().now().nanoseconds

    grips.apply(measured, stamp_ns=now())
    grips.on_command(topic, message, 'left')  # chunk 1 closes the gripper
    closed_at = now() + 100_000_000
    measured[column] = HOLDING  # closed on the block
    assert grips.apply(measured, stamp_ns=closed_at)[column] == pytest.approx(0.0, abs=1e-9)
    while now() < closed_at:
        time.sleep(0.005)
    grips.on_command(topic, message, 'left')  # chunk 2 keeps it closed
    start = now()
    seen = [grips.apply(measured, stamp_ns=start + k * 10_000_000)[column] for k in range(1, 8)]
    assert max(seen) == pytest.approx(0.0, abs=1e-9), seen


def test_the_commanded_grip_is_the_command_at_the_joint_states_stamp_after_a_gap(ros: Node) -> None:
    """ee_pose samples the controller at each joint state's stamp, however long since the previous one (a stalled
    driver): it sampled one gap ahead, so an opening showed while the arm was still lowering."""
    profile = load_profile('aloha_ros2_control')
    grips = CommandedGrips(ros, profile)
    spec = profile.arms['left'].gripper
    (topic,) = [command for command in grips.model.topics if command.topic == spec.interface.topic]
    column = GRIP_INDEX['left']
    measured = profile.home_state()
    measured[column] = 0.0

    def now() -> int:
        return ros.get_clock().now().nanoseconds

    grips.on_command(topic, closed_gripper_trajectory(spec.command.joint, spec.command.to_driver(0.0)), 'left')
    closed_at = now() + 100_000_000
    grips.apply(measured, stamp_ns=closed_at)
    while now() < closed_at:
        time.sleep(0.005)
    opening = closed_gripper_trajectory(spec.command.joint, spec.command.to_driver(1.0))  # opens over one row
    grips.on_command(topic, opening, 'left')
    sent = now()
    grips.apply(measured, stamp_ns=sent)
    halfway = grips.apply(measured, stamp_ns=sent + 30_000_000)[column]  # the next state comes 30 ms later
    assert halfway == pytest.approx(0.5, abs=0.1)
