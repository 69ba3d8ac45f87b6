"""The arms' drivers as the bridge's writers: one publisher set per driver kind of a robot profile.

Every driver takes a safety ``Command`` (``safety.command_filter``: rows of 14-D targets in the policy's units, each
due ``times`` seconds from now) and writes it in the driver's names and units (``robot.profiles.to_driver``) on the
profile's topics, RELIABLE + VOLATILE (``qos.ARM_COMMANDS``: a driver that joins late never executes an old command).

* ``ros2_control``: one JointTrajectory per arm controller and per gripper controller (merged when the profile puts
  the gripper on the arm's topic), ``header.stamp`` zero ("start now"), ``time_from_start`` of each point the
  command's time, every joint of the controller. A hold is one point: never an empty trajectory (the JTC rejects it
  and keeps moving, ros2_controllers#902).
* ``piper`` (sensor_msgs/JointState on ``joint_ctrl_single``: six joints and the gripper in ``position``, the speed
  percent in ``velocity[6]``) and ``interbotix_xs`` (JointGroupCommand ``arm`` and JointSingleCommand ``gripper``):
  position streams, so the rows are streamed at the profile's ``control_rate`` by a thread of the driver's own,
  interpolating linearly from the measured state to the first row and between rows. A new command replaces the one
  streaming. (On a ROS timer the stream waited behind every other callback of the bridge, which one events executor
  runs one at a time: camera images, joint states, poses.)
"""

from __future__ import annotations

import importlib
import math
import threading
import time
from typing import Any, Protocol

import numpy as np
from builtin_interfaces.msg import Duration
from rclpy.node import Node
from rclpy.publisher import Publisher
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robofollow_ros.errors import GraphError
from robofollow_ros.robot.profiles import RobotProfile, to_driver
from robofollow_ros.ros import qos
from robofollow_ros.safety.command_filter import Command
from robofollow_ros.state_layout import ARMS

NS_PER_S = 1_000_000_000
INTERBOTIX_ARM_GROUP = 'arm'
INTERBOTIX_GRIPPER = 'gripper'


class Driver(Protocol):
    """What the bridge sends commands through."""

    def send(self, command: Command, *, start: np.ndarray) -> None:
        """Write ``command`` now; ``start`` is the measured 14-D state it begins from."""

    def connected(self) -> bool:
        """Whether every command topic has a reader (commands are not replayed to a late one)."""

    def topics(self) -> list[str]:
        """The command topics written."""

    def close(self) -> None:
        """Stop writing (the node is closing)."""


def message_class(type_name: str) -> Any:
    """The Python class of a ROS message type named ``pkg/msg/Name``.

    Raises:
        GraphError: its package is not installed (the driver's interface package must be built beside the wheels).
    """
    package, _, name = type_name.rpartition('/')
    module_name = package.replace('/', '.')
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError):
        raise GraphError(
            f'message type {type_name} is not installed: build its interface package into this environment '
            '(docs/real-cell.md)'
        ) from None


def duration(seconds: float) -> Duration:
    """A ``builtin_interfaces/Duration`` of ``seconds``."""
    sec, nanosec = divmod(round(float(seconds) * NS_PER_S), NS_PER_S)
    return Duration(sec=int(sec), nanosec=int(nanosec))


def trajectory(joints: tuple[str, ...], rows: np.ndarray, times: np.ndarray) -> JointTrajectory:
    """A JointTrajectory starting now (stamp zero) through ``rows`` (N, len(joints)) due ``times`` (N,) seconds."""
    message = JointTrajectory(joint_names=list(joints))
    message.points = [
        JointTrajectoryPoint(positions=[float(v) for v in row], time_from_start=duration(t))
        for row, t in zip(rows, times, strict=True)
    ]
    return message


class JtcDriver:
    """ros2_control JointTrajectoryControllers: each command is one trajectory per controller."""

    def __init__(self, node: Node, profile: RobotProfile) -> None:
        self.profile = profile
        self.joints: dict[str, list[str]] = {}
        for arm in ARMS:
            spec = profile.arms[arm]
            self.joints.setdefault(spec.command.topic, []).extend(spec.joints)
            self.joints.setdefault(spec.gripper.interface.topic, []).append(spec.gripper.command.joint)
        self.pubs: dict[str, Publisher] = {
            topic: node.create_publisher(JointTrajectory, topic, qos.ARM_COMMANDS) for topic in self.joints
        }

    def close(self) -> None:
        """Nothing to stop: each command is one message."""

    def controller_joints(self) -> dict[str, tuple[str, ...]]:
        """Each command topic's joints, in the order its trajectories list them."""
        return {topic: tuple(joints) for topic, joints in self.joints.items()}

    def topics(self) -> list[str]:
        return list(self.pubs)

    def connected(self) -> bool:
        return all(publisher.get_subscription_count() > 0 for publisher in self.pubs.values())

    def send(self, command: Command, *, start: np.ndarray) -> None:
        values: dict[str, list[np.ndarray]] = {topic: [] for topic in self.joints}
        for row in command.positions:
            per_arm = to_driver(self.profile, row)
            by_topic: dict[str, dict[str, float]] = {topic: {} for topic in self.joints}
            for arm in ARMS:
                spec, target = self.profile.arms[arm], per_arm[arm]
                positions = (float(v) for v in target.positions)
                by_topic[spec.command.topic].update(zip(target.joints, positions, strict=True))
                by_topic[spec.gripper.interface.topic][target.gripper_joint] = target.gripper
            for topic, joints in self.joints.items():
                values[topic].append(np.array([by_topic[topic][joint] for joint in joints]))
        messages = {
            topic: trajectory(tuple(self.joints[topic]), np.array(rows), command.times)
            for topic, rows in values.items()
        }
        for topic, message in messages.items():  # built first, then written back to back
            self.pubs[topic].publish(message)


class StreamedDriver:
    """Position-streaming drivers (piper_ros, interbotix xs_sdk): the rows go out at ``control_rate``, interpolated,
    from a thread of the driver's own (``close`` ends it)."""

    def __init__(self, node: Node, profile: RobotProfile) -> None:
        self.profile = profile
        self.period = 1.0 / profile.control_rate
        self.lock = threading.Condition()
        self.pubs: dict[str, Publisher] = {}
        for arm in ARMS:
            spec = profile.arms[arm]
            for interface in (spec.command, spec.gripper.interface):
                if interface.topic not in self.pubs:
                    kind = message_class(interface.type)
                    self.pubs[interface.topic] = node.create_publisher(kind, interface.topic, qos.ARM_COMMANDS)
        self.classes = {
            arm: (
                message_class(profile.arms[arm].command.type),
                message_class(profile.arms[arm].gripper.interface.type),
            )
            for arm in ARMS
        }
        self.plan: tuple[float, np.ndarray, np.ndarray] | None = None
        """(start, monotonic; knot times from 0, seconds; the 14-D points at them, the start state first)."""
        self.closed = False
        self.streamer = threading.Thread(target=self.stream, name='driver-stream', daemon=True)
        self.streamer.start()

    def topics(self) -> list[str]:
        return list(self.pubs)

    def connected(self) -> bool:
        return all(publisher.get_subscription_count() > 0 for publisher in self.pubs.values())

    def send(self, command: Command, *, start: np.ndarray) -> None:
        knots = np.concatenate([[0.0], np.asarray(command.times, dtype=np.float64)])
        points = np.vstack([np.asarray(start, dtype=np.float64)[None, :], np.asarray(command.positions, np.float64)])
        with self.lock:
            self.plan = (time.monotonic(), knots, points)
            # The first target goes out now, not one period later (a stop holds at once), and under the lock: no row
            # of the plan it replaces can follow it.
            self.tick()
            self.lock.notify_all()

    def target(self, elapsed: float) -> tuple[np.ndarray, bool]:
        """The interpolated 14-D target ``elapsed`` seconds into the plan, and whether the plan is over."""
        assert self.plan is not None
        _, knots, points = self.plan
        if elapsed >= knots[-1]:
            return points[-1], True
        return np.array([np.interp(elapsed, knots, points[:, c]) for c in range(points.shape[1])]), False

    def tick(self) -> None:
        """Publish the plan's current target (the lock held); the plan ends once its last row went out."""
        assert self.plan is not None
        row, done = self.target(time.monotonic() - self.plan[0])
        if done:
            self.plan = None
        self.publish(row)

    def stream(self) -> None:
        """The streaming thread: a tick every control period of the plan's own clock, until it is over; idle
        between plans."""
        with self.lock:
            while not self.closed:
                if self.plan is None:
                    self.lock.wait()
                    continue
                started = self.plan[0]
                now = time.monotonic()
                due = started + (math.floor((now - started) / self.period) + 1) * self.period
                self.lock.wait(timeout=due - now)
                if self.closed or self.plan is None or self.plan[0] != started or time.monotonic() < due:
                    continue  # closed, replaced (a new plan's grid), or woken early
                self.tick()

    def close(self) -> None:
        """Stop streaming and end the thread."""
        with self.lock:
            self.closed, self.plan = True, None
            self.lock.notify_all()
        self.streamer.join(timeout=1.0)

    def publish(self, row: np.ndarray) -> None:
        per_arm = to_driver(self.profile, row)
        for arm in ARMS:
            spec, target = self.profile.arms[arm], per_arm[arm]
            arm_class, gripper_class = self.classes[arm]
            if self.profile.driver == 'piper':
                # joint_ctrl_single: position[0..5] joints, position[6] the gripper, velocity[6] the speed percent.
                message = arm_class(
                    name=[*target.joints, target.gripper_joint],
                    position=[*(float(v) for v in target.positions), float(target.gripper)],
                    velocity=[0.0] * len(target.joints) + [float(self.profile.speed_percent or 0.0)],
                )
                self.pubs[spec.command.topic].publish(message)
                if spec.gripper.interface.topic != spec.command.topic:
                    self.pubs[spec.gripper.interface.topic].publish(message)
            else:
                self.pubs[spec.command.topic].publish(
                    arm_class(name=INTERBOTIX_ARM_GROUP, cmd=[float(v) for v in target.positions])
                )
                self.pubs[spec.gripper.interface.topic].publish(
                    gripper_class(name=INTERBOTIX_GRIPPER, cmd=float(target.gripper))
                )


def make_driver(node: Node, profile: RobotProfile) -> JtcDriver | StreamedDriver:
    """The driver writers a profile's ``driver`` kind needs.

    Raises:
        GraphError: the driver's message package is not installed.
    """
    if profile.driver == 'ros2_control':
        return JtcDriver(node, profile)
    return StreamedDriver(node, profile)
