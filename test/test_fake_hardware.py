"""The ``fake_hardware`` node over real DDS (its own process, private domain): the MuJoCo cell behind a robot
profile, commanded in the driver's messages and units, read back from the driver's joint-state topics.

Positions are judged at the stamps of the joint states the node publishes (its wall clock), never by how long the
test waited, so a loaded machine only makes the test slower.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import PoseStamped
from graph_helpers import private_node, start_node_process, stop_node_process, wait_until
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image, JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robofollow_ros import topics
from robofollow_ros.benchmark import registry
from robofollow_ros.errors import DriverCommandError
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.realcell.fake_driver import DRIVER_STATE, FakeDriver
from robofollow_ros.robot.profiles import RobotProfile, load_profile
from robofollow_ros.ros import qos
from robofollow_ros.ros.messages import from_time, to_time
from robofollow_ros.ros.protocol import ResetCode, ResetEpisode, spec_message
from robofollow_ros.safety.jtc import check_command_qos
from robofollow_ros.sim.controllers import Setpoints, TrajectoryFollower, TrajectoryGoal

pytestmark = pytest.mark.ros
NOMINAL_DOMAIN = 33
NS = 1_000_000_000
ROS2_CONTROL = load_profile('aloha_ros2_control')


@dataclass
class Hardware:
    """A fake hardware node in its own process; its stderr once it stopped."""

    process: subprocess.Popen[str]
    err: str = ''


@dataclass
class Client:
    """The test's side of the graph: a node, its executor and every joint state heard, per topic."""

    node: Node
    executor: SingleThreadedExecutor
    states: dict[str, list[JointState]] = field(default_factory=dict)

    def listen(self, topic: str) -> None:
        self.states[topic] = []
        self.node.create_subscription(JointState, topic, self.states[topic].append, DRIVER_STATE)

    def spin_until(self, condition, *, what: str, timeout: float = 60.0) -> None:
        def spun() -> bool:
            self.executor.spin_once(timeout_sec=0.05)
            return bool(condition())

        wait_until(spun, timeout=timeout, what=what, poll=0.0)

    def latest(self, topic: str) -> dict[str, float]:
        message = self.states[topic][-1]
        return dict(zip(message.name, message.position, strict=True))

    def now_ns(self) -> int:
        return int(self.node.get_clock().now().nanoseconds)

    def publisher(self, message_type: type, topic: str):
        publisher = self.node.create_publisher(message_type, topic, qos.ARM_COMMANDS)
        self.spin_until(lambda: publisher.get_subscription_count() > 0, what=f'the fake hardware to read {topic}')
        return publisher

    def heard_after(self, topic: str, stamp_ns: int) -> bool:
        return bool(self.states[topic]) and from_time(self.states[topic][-1].header.stamp) > stamp_ns

    @contextlib.contextmanager
    def hardware(self, profile: str, topic: str, *parameters: str) -> Iterator[Hardware]:
        """Fake hardware for ``profile`` (``name:=value`` ``parameters``) for the block, its joint states on
        ``topic`` heard from the start and one of them in before the block runs; stopped after it."""
        self.listen(topic)
        process = start_node_process(NOMINAL_DOMAIN, 'fake_hardware', f'robot_profile:={profile}', *parameters)
        hardware = Hardware(process)
        try:
            self.spin_until(lambda: self.states[topic], what=f'joint states from the fake hardware on {topic}')
            yield hardware
        finally:
            hardware.err = stop_node_process(process)


@pytest.fixture
def client() -> Iterator[Client]:
    with private_node(NOMINAL_DOMAIN, 'fake_hardware_test') as (node, executor):
        yield Client(node, executor)


def trajectory(
    joints: tuple[str, ...], points: list[tuple[float, list[float]]], *, start_ns: int = 0
) -> JointTrajectory:
    message = JointTrajectory(joint_names=list(joints))
    message.header.stamp = to_time(start_ns)
    for seconds, positions in points:
        whole = int(seconds)
        message.points.append(
            JointTrajectoryPoint(
                positions=[float(v) for v in positions],
                time_from_start=Duration(sec=whole, nanosec=round((seconds - whole) * NS)),
            )
        )
    return message


def driver_names(profile: RobotProfile, arm: str) -> list[str]:
    spec = profile.arms[arm]
    return [*spec.joints, spec.gripper.feedback.joint]


def position_at(states: list[JointState], stamp_ns: int, joint: str) -> float:
    """The joint's position in the first joint state stamped at or after ``stamp_ns``."""
    for message in states:
        if from_time(message.header.stamp) >= stamp_ns:
            return float(message.position[list(message.name).index(joint)])
    raise AssertionError(f'no joint state stamped after {stamp_ns}')


def test_trajectory_follower_semantics_without_ros() -> None:
    """The JTC rules on their own: a future start, interpolation from the measured state, replacement, refusal."""
    jtc = TrajectoryFollower([0])
    setpoints = Setpoints([jtc], initial=np.zeros(14))
    goal = TrajectoryGoal(start_ns=2 * NS, times_ns=np.array([NS]), positions=np.array([[1.0]]))
    jtc.accept(goal, now_ns=NS, measured=np.array([0.2]))
    assert jtc.sample(NS)[0][0] == pytest.approx(0.2)  # from the measured position at receipt ...
    assert jtc.sample(2 * NS)[0][0] == pytest.approx(0.6)  # ... to the point at start + time_from_start
    assert jtc.sample(5 * NS)[0][0] == pytest.approx(1.0)  # then holds it
    with pytest.raises(DriverCommandError, match='Empty trajectory received'):
        jtc.accept(TrajectoryGoal(0, np.array([], dtype=np.int64), np.empty((0, 1))), now_ns=NS, measured=np.zeros(1))
    with pytest.raises(DriverCommandError, match=r'ends .* in the past'):
        jtc.accept(TrajectoryGoal(NS, np.array([NS]), np.array([[0.0]])), now_ns=3 * NS, measured=np.zeros(1))
    assert jtc.sample(2 * NS)[0][0] == pytest.approx(0.6)  # refused goals changed nothing
    jtc.accept(TrajectoryGoal(0, np.array([NS]), np.array([[-1.0]])), now_ns=4 * NS, measured=np.array([0.9]))
    position, velocity = setpoints.advance(4 * NS, 0.5)
    assert position[0] == pytest.approx(-0.05) and velocity[0] == pytest.approx(-1.9)  # the new goal replaced it


def test_driver_units_go_through_the_profile_signs_offsets_and_gripper_scale() -> None:
    """Commands in, joint states out, with a profile whose signs and offsets are not the identity."""
    piper = load_profile('piper')
    signs, offsets = np.array([1, -1, 1, -1, 1, -1.0]), np.array([0.1, -0.2, 0.0, 0.3, 0.0, 0.05])
    arms = {arm: replace(spec, signs=signs, offsets=offsets) for arm, spec in piper.arms.items()}
    profile = replace(piper, arms=arms)
    driver = FakeDriver(profile, initial=profile.home_state())
    (command,) = [c for c in driver.topics if c.topic == '/left_piper/joint_ctrl_single']
    sent = [0.4, 0.5, -0.3, 0.2, -0.3, 0.5]
    command.handle(JointState(position=[*sent, 0.035]), 0, profile.home_state())
    (stream,) = [c for c in driver.setpoints.controllers if c.columns[0] == 0]
    np.testing.assert_allclose(stream.target, [*((np.array(sent) - offsets) * signs), 0.5])  # 35 of 70 mm: half
    measured = profile.home_state()
    measured[:7] = stream.target
    names, positions = driver.joint_states(measured)['/left_piper/joint_states_single']
    assert names == ['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6', 'joint7']
    np.testing.assert_allclose(positions, [*sent, 0.035])  # back in the driver's units


def test_ros2_control_trajectories_move_the_arm_and_gripper_in_time(client: Client) -> None:
    """A timed JTC goal (future start, two points) and a gripper goal in metres; joint states with URDF names."""
    left = ROS2_CONTROL.arms['left']
    with client.hardware('aloha_ros2_control', '/joint_states') as hardware:
        first = client.states['/joint_states'][-1]
        assert list(first.name) == driver_names(ROS2_CONTROL, 'left') + driver_names(ROS2_CONTROL, 'right')
        home = client.latest('/joint_states')
        np.testing.assert_allclose([home[j] for j in left.joints], left.home[:6], atol=2e-3)
        assert home['left_left_finger'] == pytest.approx(0.036, abs=1e-3)  # open, in metres

        arm = client.publisher(JointTrajectory, left.command.topic)
        gripper = client.publisher(JointTrajectory, left.gripper.interface.topic)
        start = [home[j] for j in left.joints]
        target = list(start)
        target[0] += 0.5
        target[5] -= 0.4
        start_ns = client.now_ns() + NS // 2
        arm.publish(trajectory(left.joints, [(0.2, start), (1.2, target)], start_ns=start_ns))
        gripper.publish(trajectory(('left_left_finger',), [(0.5, [0.012])]))
        end_ns = start_ns + int(1.2 * NS)
        client.spin_until(lambda: client.heard_after('/joint_states', end_ns + NS // 2), what='the trajectory to end')
        assert hardware.process.poll() is None
    states = client.states['/joint_states']
    # Held before the first point, halfway at the middle of the segment, at the target from its end on.
    assert position_at(states, start_ns, 'left_waist') == pytest.approx(start[0], abs=0.01)
    assert position_at(states, start_ns + int(0.7 * NS), 'left_waist') == pytest.approx(start[0] + 0.25, abs=0.05)
    assert position_at(states, start_ns + int(0.7 * NS), 'left_wrist_rotate') == pytest.approx(start[5] - 0.2, abs=0.05)
    final = client.latest('/joint_states')
    np.testing.assert_allclose([final[j] for j in left.joints], target, atol=0.01)
    assert final['left_left_finger'] == pytest.approx(0.012, abs=1e-3)
    assert final['right_waist'] == pytest.approx(0.0, abs=2e-3)  # the other arm held
    assert 'refused' not in hardware.err


def test_empty_and_partial_trajectories_are_refused_and_the_arm_holds(client: Client) -> None:
    """The JTC's refusals (an empty trajectory no longer stops an arm: ros2_controllers#902); its readers' QoS."""
    left = ROS2_CONTROL.arms['left']
    with client.hardware('aloha_ros2_control', '/joint_states') as hardware:
        arm = client.publisher(JointTrajectory, left.command.topic)
        for topic in (left.command.topic, left.gripper.interface.topic):
            (reader,) = client.node.get_subscriptions_info_by_topic(topic)
            qos_of = reader.qos_profile
            assert not check_command_qos(durability=int(qos_of.durability), reliability=int(qos_of.reliability))
        before = client.latest('/joint_states')
        moved = [before[j] + 0.3 for j in left.joints]
        arm.publish(trajectory(left.joints, []))  # the sim graph's old "hold": a real JTC refuses it
        arm.publish(trajectory(left.joints[:5], [(0.3, moved[:5])]))  # partial goal
        arm.publish(trajectory(left.joints, [(0.3, [float('nan')] * 6)]))
        sent_ns = client.now_ns()
        client.spin_until(lambda: client.heard_after('/joint_states', sent_ns + NS), what='a second of joint states')
    err = hardware.err
    after = client.latest('/joint_states')
    np.testing.assert_allclose([after[j] for j in left.joints], [before[j] for j in left.joints], atol=2e-3)
    assert 'command refused: Empty trajectory received.' in err
    assert "command refused: Joints on incoming trajectory don't match the controller joints" in err
    assert 'command refused: trajectory positions must be finite' in err


def test_reset_places_the_layout_and_homes_the_arms(client: Client) -> None:
    task = next(t for t in registry.eval_tasks() if t.scene == 2)
    layout = registry.layout_of(task)
    spec = EpisodeSpec.for_trial(task, seed=11, round=1, variant='published')
    expected = registry.perturbed_positions(layout, seed=11)
    poses: dict[str, PoseStamped] = {}
    for name in expected:
        client.node.create_subscription(
            PoseStamped, topics.object_pose_topic(name), lambda m, name=name: poses.__setitem__(name, m), qos.STATE
        )
    left = ROS2_CONTROL.arms['left']
    images: list[Image] = []
    infos: list[CameraInfo] = []
    client.node.create_subscription(Image, topics.image_topic('cam_high'), images.append, qos.SENSOR)
    client.node.create_subscription(CameraInfo, topics.camera_info_topic('cam_high'), infos.append, qos.SENSOR)
    reset = client.node.create_client(ResetEpisode, topics.CELL_RESET)
    with client.hardware('aloha_ros2_control', '/joint_states', 'width:=160', 'height:=120'):
        arm = client.publisher(JointTrajectory, left.command.topic)
        away = [v + 0.3 for v in left.home[:6]]
        arm.publish(trajectory(left.joints, [(0.3, away)]))
        client.spin_until(lambda: abs(client.latest('/joint_states')['left_waist'] - away[0]) < 0.01, what='the move')
        client.spin_until(reset.service_is_ready, what='the reset service')
        future = reset.call_async(ResetEpisode.Request(episode=spec_message(spec)))
        client.spin_until(future.done, what='the reset')
        assert future.result().code == int(ResetCode.OK), future.result().message
        reset_ns = client.now_ns()
        poses.clear()
        images.clear()
        client.spin_until(
            lambda: client.heard_after('/joint_states', reset_ns + NS // 5) and len(poses) == len(expected) and images,
            what='joint states, object poses and a camera image after the reset',
        )
    home = client.latest('/joint_states')
    np.testing.assert_allclose([home[j] for j in left.joints], left.home[:6], atol=0.01)  # commands were dropped
    for name, xy in expected.items():
        p = poses[name].pose.position
        assert (p.x, p.y) == pytest.approx(xy, abs=0.01), name
        assert p.z > 0.74  # on the table
        assert poses[name].header.frame_id == 'world'
        assert from_time(poses[name].header.stamp) > reset_ns - NS  # the node's wall clock, no simulated clock
    image, info = images[-1], infos[-1]
    assert (image.width, image.height, image.encoding) == (160, 120, 'rgb8')
    assert (info.width, info.height) == (160, 120) and info.k[0] > 0.0
    pixels = np.frombuffer(bytes(image.data), dtype=np.uint8)
    assert pixels.size == 160 * 120 * 3 and pixels.std() > 5.0  # a rendered scene, not a blank frame


def test_piper_joint_ctrl_single_in_radians_and_metres(client: Client) -> None:
    piper = load_profile('piper')
    left = piper.arms['left']
    with client.hardware('piper', left.joint_states) as hardware:
        command = client.publisher(JointState, left.command.topic)
        assert list(client.states[left.joint_states][-1].name) == driver_names(piper, 'left')
        target = [0.4, 0.5, -0.3, 0.2, -0.3, 0.5]
        command.publish(JointState(position=[*target, 0.02], velocity=[0.0] * 6 + [100.0]))
        client.spin_until(
            lambda: np.allclose([client.latest(left.joint_states)[j] for j in left.joints], target, atol=0.01),
            what='the piper arm to reach its target',
        )
        client.spin_until(
            lambda: abs(client.latest(left.joint_states)['joint7'] - 0.02) < 1e-3, what='the gripper at 20 mm'
        )
        command.publish(JointState(position=[0.1, 0.2]))  # fewer than six joints: refused
        sent_ns = client.now_ns()
        client.spin_until(lambda: client.heard_after(left.joint_states, sent_ns + NS // 2), what='joint states')
    final = client.latest(left.joint_states)
    np.testing.assert_allclose([final[j] for j in left.joints], target, atol=0.01)
    assert 'command refused: joint_ctrl_single needs 6 joint positions, got 2' in hardware.err


def test_interbotix_joint_group_and_gripper_commands(client: Client) -> None:
    pytest.importorskip('interbotix_xs_msgs.msg', reason='scripts/build_interfaces.sh builds interbotix_xs_msgs')
    from interbotix_xs_msgs.msg import JointGroupCommand, JointSingleCommand

    profile = load_profile('aloha_interbotix')
    right = profile.arms['right']
    with client.hardware('aloha_interbotix', right.joint_states) as hardware:
        group = client.publisher(JointGroupCommand, right.command.topic)
        single = client.publisher(JointSingleCommand, right.gripper.interface.topic)
        assert list(client.states[right.joint_states][-1].name) == [*driver_names(profile, 'right'), 'gripper']
        target = [v + 0.25 for v in right.home[:6]]
        group.publish(JointGroupCommand(name='arm', cmd=target))
        single.publish(JointSingleCommand(name='gripper', cmd=0.6197))  # fully closed motor angle
        client.spin_until(
            lambda: np.allclose([client.latest(right.joint_states)[j] for j in right.joints], target, atol=0.01),
            what='the arm at its target',
        )
        client.spin_until(
            lambda: abs(client.latest(right.joint_states)['left_finger'] - 0.0440) < 5e-4, what='the gripper closed'
        )
        group.publish(JointGroupCommand(name='left_arm', cmd=[0.0] * 6))
        sent_ns = client.now_ns()
        client.spin_until(lambda: client.heard_after(right.joint_states, sent_ns + NS // 2), what='joint states')
    final = client.latest(right.joint_states)
    np.testing.assert_allclose([final[j] for j in right.joints], target, atol=0.01)
    assert final['gripper'] == pytest.approx(0.6197, abs=0.02)
    assert "command refused: joint group 'left_arm' does not exist" in hardware.err


def test_a_piper_speed_percent_slows_its_joints_not_its_gripper() -> None:
    """piper_ros passes ``velocity[6]`` to the arm's motion command and drives the gripper apart at its own speed."""
    piper = load_profile('piper')
    driver = FakeDriver(piper, initial=np.zeros(14))
    (command,) = [c for c in driver.topics if c.topic == '/left_piper/joint_ctrl_single']
    (stream,) = [c for c in driver.setpoints.controllers if c.columns[0] == 0]
    moved = {}
    for percent in (100.0, 25.0):
        command.handle(JointState(position=[3.0] * 6 + [0.08], velocity=[0.0] * 6 + [percent]), 0, np.zeros(14))
        step = stream.step(np.zeros(7), 0.01)
        assert step is not None
        moved[percent] = step[0]
    np.testing.assert_allclose(moved[25.0][:6], moved[100.0][:6] * 0.25)
    assert moved[25.0][6] == moved[100.0][6] > 0.0
