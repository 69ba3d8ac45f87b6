"""The real-time bridge's driver writers (ros/drivers.py) over real DDS: what each driver kind puts on its topics."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from graph_helpers import private_node, wait_until
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from robofollow_ros.errors import GraphError
from robofollow_ros.robot.profiles import load_profile
from robofollow_ros.ros import qos
from robofollow_ros.ros.drivers import JtcDriver, StreamedDriver, make_driver, message_class
from robofollow_ros.safety.command_filter import Command
from robofollow_ros.safety.jtc import check_command_qos, check_trajectory

pytestmark = pytest.mark.ros
NOMINAL_DOMAIN = 56


@pytest.fixture
def ros() -> Iterator[Node]:
    with private_node(NOMINAL_DOMAIN, 'drivers_test', spin=True) as (node, _executor):
        yield node


def test_ros2_control_driver_writes_one_trajectory_per_controller_in_driver_units(ros: Node) -> None:
    profile = load_profile('aloha_ros2_control')
    driver = make_driver(ros, profile)
    assert isinstance(driver, JtcDriver)
    got: dict[str, JointTrajectory] = {}
    for topic in driver.topics():
        ros.create_subscription(JointTrajectory, topic, lambda m, t=topic: got.setdefault(t, m), qos.ARM_COMMANDS)
    wait_until(driver.connected, timeout=60, what='the readers to match')
    rows = np.tile(profile.home_state(), (2, 1))
    rows[1, 0] += 0.01
    rows[:, 6] = [0.5, 0.25]  # left gripper, normalised
    driver.send(Command(positions=rows, times=np.array([0.06, 0.12]), hold=False), start=profile.home_state())
    wait_until(lambda: len(got) == 4, timeout=30, what='four trajectories')
    for topic, info in ((t, ros.get_publishers_info_by_topic(t)) for t in driver.topics()):
        (writer,) = info
        assert (
            check_command_qos(
                durability=writer.qos_profile.durability.name, reliability=writer.qos_profile.reliability.name
            )
            == ()
        )
        assert check_trajectory(got[topic], controller_joints=driver.controller_joints()[topic]) == ()
    left = got['/left_arm_controller/joint_trajectory']
    assert list(left.joint_names) == list(profile.arms['left'].joints)
    assert left.points[1].positions[0] == pytest.approx(0.01)
    assert [(p.time_from_start.sec, p.time_from_start.nanosec) for p in left.points] == [
        (0, 60_000_000),
        (0, 120_000_000),
    ]
    gripper = got['/left_gripper_controller/joint_trajectory']
    assert list(gripper.joint_names) == ['left_left_finger']
    assert [p.positions[0] for p in gripper.points] == pytest.approx([0.018, 0.009])  # 0 .. 0.036 m


def test_piper_driver_streams_interpolated_rows_at_the_control_rate(ros: Node) -> None:
    profile = load_profile('piper')
    driver = make_driver(ros, profile)
    assert isinstance(driver, StreamedDriver)
    got: list[tuple[float, JointState]] = []
    ros.create_subscription(
        JointState, '/left_piper/joint_ctrl_single', lambda m: got.append((time.monotonic(), m)), qos.ARM_COMMANDS
    )
    wait_until(
        lambda: driver.pubs['/left_piper/joint_ctrl_single'].get_subscription_count() > 0, timeout=60, what='the reader'
    )
    start = profile.home_state()
    rows = np.tile(start, (10, 1))  # 0.6 s: many control periods between the first and the last row
    rows[:, 0] += np.linspace(0.02, 0.2, 10)
    rows[:, 6] = np.linspace(0.9, 0.0, 10)
    driver.send(Command(positions=rows, times=np.arange(1, 11) * 0.06, hold=False), start=start)
    wait_until(lambda: got and got[-1][1].position[0] == pytest.approx(0.2), timeout=30, what='the last row')
    time.sleep(0.2)
    count = len(got)
    time.sleep(0.2)
    assert len(got) == count  # the stream stops once the last row went out
    first = got[0][1]
    assert list(first.name) == [*profile.arms['left'].joints, 'joint7']
    assert first.velocity[6] == 50.0  # speed_percent
    waist = [message.position[0] for _, message in got]
    assert waist[0] == pytest.approx(0.0, abs=0.02)  # the first target goes out at once, from the measured state
    assert all(b >= a for a, b in itertools.pairwise(waist))  # interpolated, never beyond the rows
    assert got[-1][1].position[6] == pytest.approx(0.0)  # closed gripper, metres
    assert any(0.0 < message.position[0] < 0.2 for _, message in got)  # rows between the knots


def test_a_driver_message_type_that_is_not_installed_is_refused_in_one_line() -> None:
    """A driver message package may be missing (interbotix_xs_msgs has no wheel): named in one line, no traceback."""
    assert message_class('sensor_msgs/msg/JointState') is JointState
    with pytest.raises(GraphError, match='message type robofollow_absent_msgs/msg/Command is not installed'):
        message_class('robofollow_absent_msgs/msg/Command')


def test_interbotix_driver_streams_the_arm_group_and_the_gripper_motor_angle(ros: Node) -> None:
    messages = pytest.importorskip('interbotix_xs_msgs.msg', reason='built by scripts/build_interfaces.sh')
    profile = load_profile('aloha_interbotix')
    driver = make_driver(ros, profile)
    assert isinstance(driver, StreamedDriver)
    arm: list[object] = []
    gripper: list[object] = []
    ros.create_subscription(messages.JointGroupCommand, '/follower_right/commands/joint_group', arm.append, 10)
    ros.create_subscription(messages.JointSingleCommand, '/follower_right/commands/joint_single', gripper.append, 10)
    ros.create_subscription(messages.JointGroupCommand, '/follower_left/commands/joint_group', lambda _: None, 10)
    ros.create_subscription(messages.JointSingleCommand, '/follower_left/commands/joint_single', lambda _: None, 10)
    wait_until(driver.connected, timeout=60, what='the readers')
    start = profile.home_state()
    rows = np.tile(start, (3, 1))
    rows[:, 7] += [0.05, 0.1, 0.15]  # right waist
    rows[:, 13] = 0.0  # right gripper closed
    driver.send(Command(positions=rows, times=np.arange(1, 4) * 0.06, hold=False), start=start)
    wait_until(lambda: arm and arm[-1].cmd[0] == pytest.approx(0.15), timeout=30, what='the last row')
    wait_until(lambda: gripper and gripper[-1].cmd == pytest.approx(0.6197), timeout=30, what='the closed gripper')
    assert arm[-1].name == 'arm' and len(arm[-1].cmd) == 6
    assert gripper[0].name == 'gripper' and 0.6197 <= gripper[0].cmd <= 1.6214  # motor angle, rad


def test_the_stream_keeps_its_rate_while_the_bridges_callbacks_are_busy(ros: Node) -> None:
    """The bridge's callbacks run one at a time (an events executor): the stream has a thread of its own, so a
    callback that takes half a second (a camera image to decode on a loaded machine) does not stall the arm."""
    profile = load_profile('piper')
    driver = make_driver(ros, profile)
    assert isinstance(driver, StreamedDriver)
    topic = '/left_piper/joint_ctrl_single'
    with private_node(NOMINAL_DOMAIN, 'drivers_listener', spin=True) as (listener, _executor):
        arrivals: list[float] = []
        listener.create_subscription(JointState, topic, lambda _m: arrivals.append(time.monotonic()), 100)
        wait_until(lambda: driver.pubs[topic].get_subscription_count() > 0, timeout=60, what='the reader')
        busy = threading.Event()

        def block() -> None:
            timer.cancel()
            busy.set()
            time.sleep(0.6)

        timer = ros.create_timer(0.001, block)
        wait_until(busy.is_set, timeout=30, what="the bridge's executor to be busy")
        start = profile.home_state()
        rows = np.tile(start, (8, 1))
        rows[:, 0] += np.linspace(0.01, 0.08, 8)
        # A 2 s plan: the stream skips the grid slots it was late for, so a plan barely longer than the rows awaited
        # could end short of them on a loaded machine.
        driver.send(Command(positions=rows, times=np.arange(1, 9) * 0.25, hold=False), start=start)
        wait_until(lambda: len(arrivals) >= 0.4 * profile.control_rate, timeout=30, what='the streamed rows')
        driver.close()
    gaps = np.diff(arrivals[: int(0.4 * profile.control_rate)])
    assert gaps.max() < 0.25, f'the stream stalled for {gaps.max():.3f} s'
