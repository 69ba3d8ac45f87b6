"""A robot profile's driver interface, played by the fake hardware: its command topics in, its joint states out.

``FakeDriver`` turns each command message of the profile's driver kind (``robot/profiles.py``) into the policy's
units and hands it to the matching controller (``sim/controllers.py``):

* ``ros2_control``: a JointTrajectoryController per arm and per gripper (trajectory_msgs/JointTrajectory on the
  profile's ``command`` and ``gripper.interface`` topics). Every joint of the controller must be named, none twice
  and no other (partial goals are refused, as with the JTC's default ``allow_partial_joints_goal: false``); points
  are read by joint name, so any order works. Published: one JointState per ``joint_states`` topic (``/joint_states``
  for both arms, as ``joint_state_broadcaster``) with the URDF names.
* ``interbotix_xs``: ``JointGroupCommand`` (group ``arm``, six positions in rad) and ``JointSingleCommand`` (the
  gripper's motor angle, or one arm joint), streamed: each is a new target. Needs the ``interbotix_xs_msgs``
  interface package (``scripts/build_interfaces.sh`` builds a minimal one into the venv).
* ``piper``: ``joint_ctrl_single`` (sensor_msgs/JointState) read by index as piper_ros does: ``position[0..5]`` the
  joints (rad), ``position[6]`` the gripper opening (m, clamped to the driver's 0..0.08), ``velocity[6]`` the joints'
  speed in percent (the profile's ``speed_percent`` when absent; the gripper keeps its own speed, as piper_ros
  commands it apart).

Every driver publishes each arm's six joints and the gripper's feedback joint (and its command joint, where that
differs: xs_sdk's ``gripper`` motor angle beside the finger position), measured, in the driver's names and units.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from robofollow_ros.errors import DriverCommandError, ProfileError
from robofollow_ros.robot.profiles import RobotProfile, arm_from_driver, arm_to_driver
from robofollow_ros.sim.constants import GRIP_SPEED
from robofollow_ros.sim.controllers import Controller, Setpoints, StreamedTarget, TrajectoryFollower, TrajectoryGoal
from robofollow_ros.state_layout import ARM_DOF, ARM_SLICE, ARMS, GRIP_INDEX, Arm, Numbers
from robofollow_ros.units import NS_PER_S

DRIVER_STATE = QoSProfile(
    depth=10,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
"""Joint states as drivers publish them (rclcpp's default QoS): reliable and volatile."""
INTERBOTIX_ARM_GROUP = 'arm'
"""The joint group of an ALOHA follower's six arm joints in xs_sdk's motor configuration."""
PIPER_GRIPPER_MAX_M = 0.08
"""piper_ros clamps the gripper opening of joint_ctrl_single to 0..80 mm."""

Handler = Callable[[Any, int, np.ndarray], None]
"""(message, now_ns, measured 14-D state) -> None; raises DriverCommandError."""


@dataclass(frozen=True)
class CommandTopic:
    """One command topic of the profile: its name, message class and what to do with a message."""

    topic: str
    message_type: type
    handle: Handler


def _interbotix_types() -> tuple[type, type]:
    try:
        from interbotix_xs_msgs.msg import JointGroupCommand, JointSingleCommand
    except ImportError:
        raise ProfileError(
            'the interbotix_xs profile needs the interbotix_xs_msgs package (run scripts/build_interfaces.sh, which '
            "builds a minimal one into the venv, or source Interbotix's workspace)"
        ) from None
    return JointGroupCommand, JointSingleCommand


def _joints_from_driver(profile: RobotProfile, arm: Arm, positions: Numbers) -> np.ndarray:
    """Six driver joint positions in policy radians (``arm_from_driver``, the gripper left out).

    Raises:
        ProfileError: not six finite numbers.
    """
    return arm_from_driver(profile, arm, positions, profile.arms[arm].gripper.command.closed)[:ARM_DOF]


class FakeDriver:
    """The command side and joint-state side of ``profile``'s driver over a 14-D setpoint.

    Args:
        profile: the robot profile.
        initial: the 14-D state the setpoint starts from (policy units).
    """

    def __init__(self, profile: RobotProfile, *, initial: np.ndarray) -> None:
        self.profile = profile
        self.topics: list[CommandTopic] = []
        controllers: list[Controller] = []
        builders = {'ros2_control': self._ros2_control, 'interbotix_xs': self._interbotix, 'piper': self._piper}
        for arm in ARMS:
            controllers.extend(builders[profile.driver](arm))
        self.setpoints = Setpoints(controllers, initial=initial)

    # --- ros2_control ----------------------------------------------------------------------------------------------

    def _ros2_control(self, arm: Arm) -> list[Controller]:
        spec = self.profile.arms[arm]
        columns = list(range(ARM_SLICE[arm].start, ARM_SLICE[arm].stop))
        arm_jtc, grip_jtc = TrajectoryFollower(columns), TrajectoryFollower([GRIP_INDEX[arm]])
        scale = spec.gripper.command

        def arm_points(positions: np.ndarray) -> np.ndarray:
            return np.array([_joints_from_driver(self.profile, arm, point) for point in positions])

        def grip_points(positions: np.ndarray) -> np.ndarray:
            return np.array([[scale.from_driver(float(v))] for v in positions[:, 0]])

        self.topics.append(
            CommandTopic(spec.command.topic, JointTrajectory, self._jtc_handler(arm_jtc, spec.joints, arm_points))
        )
        self.topics.append(
            CommandTopic(
                spec.gripper.interface.topic,
                JointTrajectory,
                self._jtc_handler(grip_jtc, (scale.joint,), grip_points),
            )
        )
        return [arm_jtc, grip_jtc]

    @staticmethod
    def _jtc_handler(
        jtc: TrajectoryFollower, joints: Sequence[str], to_policy: Callable[[np.ndarray], np.ndarray]
    ) -> Handler:
        def handle(message: JointTrajectory, now_ns: int, measured: np.ndarray) -> None:
            goal = trajectory_goal(message, joints)
            policy = TrajectoryGoal(goal.start_ns, goal.times_ns, to_policy(goal.positions))
            jtc.accept(policy, now_ns=now_ns, measured=measured[jtc.columns])

        return handle

    # --- interbotix xs_sdk -----------------------------------------------------------------------------------------

    def _interbotix(self, arm: Arm) -> list[Controller]:
        group_type, single_type = _interbotix_types()
        spec = self.profile.arms[arm]
        columns = [*range(ARM_SLICE[arm].start, ARM_SLICE[arm].stop), GRIP_INDEX[arm]]
        stream = StreamedTarget(columns, speed=[*spec.velocity, GRIP_SPEED])

        def on_group(message: Any, now_ns: int, measured: np.ndarray) -> None:
            if message.name != INTERBOTIX_ARM_GROUP:
                raise DriverCommandError(
                    f"joint group {message.name!r} does not exist (this arm has '{INTERBOTIX_ARM_GROUP}')"
                )
            if len(message.cmd) != ARM_DOF:
                raise DriverCommandError(
                    f'group {INTERBOTIX_ARM_GROUP!r} takes {ARM_DOF} commands, got {len(message.cmd)}'
                )
            target = self._stream_base(stream)
            target[:ARM_DOF] = _joints_from_driver(self.profile, arm, list(message.cmd))
            stream.command(target)

        def on_single(message: Any, now_ns: int, measured: np.ndarray) -> None:
            target = self._stream_base(stream)
            if message.name == spec.gripper.command.joint:
                target[ARM_DOF] = spec.gripper.command.from_driver(float(message.cmd))
            elif message.name in spec.joints:
                driver = arm_to_driver(self.profile, arm, target).positions
                driver[spec.joints.index(message.name)] = float(message.cmd)
                target[:ARM_DOF] = _joints_from_driver(self.profile, arm, driver)
            else:
                raise DriverCommandError(f'joint {message.name!r} does not exist on the {arm} arm')
            stream.command(target)

        self.topics.append(CommandTopic(spec.command.topic, group_type, on_group))
        self.topics.append(CommandTopic(spec.gripper.interface.topic, single_type, on_single))
        return [stream]

    def _stream_base(self, stream: StreamedTarget) -> np.ndarray:
        """The columns' current target (a command naming some joints keeps the others'), or where they hold."""
        if stream.target is not None:
            return stream.target.copy()
        return self.setpoints.position[stream.columns].copy()

    # --- piper ------------------------------------------------------------------------------------------------------

    def _piper(self, arm: Arm) -> list[Controller]:
        spec = self.profile.arms[arm]
        columns = [*range(ARM_SLICE[arm].start, ARM_SLICE[arm].stop), GRIP_INDEX[arm]]
        stream = StreamedTarget(columns, speed=[*spec.velocity, GRIP_SPEED], scaled=[True] * ARM_DOF + [False])
        default_percent = self.profile.speed_percent or 100.0

        def on_command(message: JointState, now_ns: int, measured: np.ndarray) -> None:
            positions = np.asarray(message.position, dtype=np.float64)
            if positions.size < ARM_DOF:
                raise DriverCommandError(f'joint_ctrl_single needs {ARM_DOF} joint positions, got {positions.size}')
            target = self._stream_base(stream)
            if positions.size > ARM_DOF:
                opening = float(np.clip(positions[ARM_DOF], 0.0, PIPER_GRIPPER_MAX_M))
                target = arm_from_driver(self.profile, arm, positions[:ARM_DOF], opening)
            else:
                target[:ARM_DOF] = _joints_from_driver(self.profile, arm, positions)
            percent = float(message.velocity[ARM_DOF]) if len(message.velocity) > ARM_DOF else default_percent
            stream.command(target, scale=float(np.clip(percent, 1.0, 100.0)) / 100.0)

        self.topics.append(CommandTopic(spec.command.topic, JointState, on_command))
        return [stream]

    # --- joint states -----------------------------------------------------------------------------------------------

    def joint_states(self, measured: np.ndarray) -> dict[str, tuple[list[str], list[float]]]:
        """Per ``joint_states`` topic of the profile, the names and positions (driver units) of the measured 14-D
        state: each arm's six joints, its gripper feedback joint and, where it differs, its gripper command joint."""
        states: dict[str, tuple[list[str], list[float]]] = {}
        for arm in ARMS:
            spec = self.profile.arms[arm]
            names, positions = states.setdefault(spec.joint_states, ([], []))
            opening = float(measured[GRIP_INDEX[arm]])
            joints = arm_to_driver(self.profile, arm, np.append(measured[ARM_SLICE[arm]], opening)).positions
            names.extend(spec.joints)
            positions.extend(float(v) for v in joints)
            names.append(spec.gripper.feedback.joint)
            positions.append(spec.gripper.feedback.to_driver(opening))
            if spec.gripper.command.joint != spec.gripper.feedback.joint:
                names.append(spec.gripper.command.joint)
                positions.append(spec.gripper.command.to_driver(opening))
        return states


def trajectory_goal(message: JointTrajectory, joints: Sequence[str]) -> TrajectoryGoal:
    """A JointTrajectory's start, times and positions in the controller's joint order (driver units).

    Raises:
        DriverCommandError: the joints are not exactly the controller's, or a point's positions do not match them.
    """
    names = list(message.joint_names)
    if len(set(names)) != len(names) or set(names) != set(joints):
        raise DriverCommandError(
            f"Joints on incoming trajectory don't match the controller joints: got {names}, want all of {list(joints)}"
        )
    order = [names.index(joint) for joint in joints]
    positions = np.empty((len(message.points), len(joints)))
    times = np.empty(len(message.points), dtype=np.int64)
    for i, point in enumerate(message.points):
        if len(point.positions) != len(names):
            raise DriverCommandError(f'point {i} has {len(point.positions)} positions for {len(names)} joints')
        positions[i] = np.asarray(point.positions, dtype=np.float64)[order]
        if not np.all(np.isfinite(positions[i])):
            raise DriverCommandError('trajectory positions must be finite')
        times[i] = int(point.time_from_start.sec) * NS_PER_S + int(point.time_from_start.nanosec)
    stamp = message.header.stamp
    return TrajectoryGoal(start_ns=int(stamp.sec) * NS_PER_S + int(stamp.nanosec), times_ns=times, positions=positions)
