"""A stand-in for a ros2_control cell in the real-time bridge's tests: JointTrajectory commands in, /joint_states out.

Each controller topic of a ``ros2_control`` profile is subscribed; a trajectory (stamp zero: "now") replaces that
controller's pending points, and each point's positions become the measured joints at its ``time_from_start`` after
arrival (a jump, no interpolation). A timer publishes every joint on the profile's ``joint_states`` topic at
``rate`` Hz, stamped ``lag`` seconds in the past (a stale driver). Every command is kept with its arrival time and
the measured 14-D state at that moment, for the tests to check what reached the arms.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from robofollow_ros.robot.profiles import RobotProfile, arm_state_from_joint_state, to_driver
from robofollow_ros.ros import qos
from robofollow_ros.ros.messages import joint_state_message
from robofollow_ros.state_layout import ARMS

NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class Received:
    """One command as it arrived: its topic, monotonic arrival time, the measured 14-D state then, the message."""

    topic: str
    arrived: float
    state: np.ndarray
    message: JointTrajectory

    @property
    def points(self) -> int:
        return len(self.message.points)


class JtcStandIn:
    """The stand-in's subscriptions, pending points and joint state timer on ``node`` (spun by the test)."""

    def __init__(self, node: Node, profile: RobotProfile, *, start: np.ndarray, rate: float = 100.0) -> None:
        self.node = node
        self.profile = profile
        self.lock = threading.Lock()
        self.positions: dict[str, float] = {}
        for arm, command in to_driver(profile, start).items():
            self.positions.update(zip(command.joints, (float(v) for v in command.positions), strict=True))
            self.positions[command.gripper_joint] = command.gripper
            self.positions[profile.arms[arm].gripper.feedback.joint] = command.gripper
        self.pending: dict[str, list[tuple[float, dict[str, float]]]] = {}
        self.received: list[Received] = []
        self.lag = 0.0
        self.silent = False
        """While set, no joint state goes out (a driver whose state stream paused)."""
        self.topics: dict[str, list[str]] = {}
        for arm in ARMS:
            spec = profile.arms[arm]
            self.topics.setdefault(spec.command.topic, []).extend(spec.joints)
            self.topics.setdefault(spec.gripper.interface.topic, []).append(spec.gripper.command.joint)
        for topic in self.topics:
            node.create_subscription(
                JointTrajectory, topic, lambda m, topic=topic: self.on_command(topic, m), qos.ARM_COMMANDS
            )
        states = {profile.arms[arm].joint_states for arm in ARMS}
        self.pubs = [node.create_publisher(JointState, topic, qos.STATE) for topic in states]
        node.create_timer(1.0 / rate, self.tick)

    def state(self) -> np.ndarray:
        """The measured 14-D state in policy units."""
        with self.lock:
            names, positions = list(self.positions), list(self.positions.values())
        values = [arm_state_from_joint_state(self.profile, arm, names, positions) for arm in ARMS]
        assert values[0] is not None and values[1] is not None
        return np.concatenate(values)

    def on_command(self, topic: str, message: JointTrajectory) -> None:
        arrived = time.monotonic()
        self.apply(arrived)
        self.received.append(Received(topic, arrived, self.state(), message))
        points = [
            (
                arrived + point.time_from_start.sec + point.time_from_start.nanosec / NS_PER_S,
                dict(zip(message.joint_names, point.positions, strict=True)),
            )
            for point in message.points
        ]
        with self.lock:
            self.pending[topic] = points

    def apply(self, now: float) -> None:
        """Jump every controller's joints to its points that are due."""
        with self.lock:
            for topic, points in self.pending.items():
                while points and points[0][0] <= now:
                    _, values = points.pop(0)
                    self.positions.update(values)
                    for arm in ARMS:
                        gripper = self.profile.arms[arm].gripper
                        if gripper.command.joint in values:
                            self.positions[gripper.feedback.joint] = values[gripper.command.joint]
                self.pending[topic] = points

    def tick(self) -> None:
        self.apply(time.monotonic())
        if self.silent:
            return
        with self.lock:
            names, positions = list(self.positions), list(self.positions.values())
        stamp = self.node.get_clock().now().nanoseconds - round(self.lag * NS_PER_S)
        for publisher in self.pubs:
            publisher.publish(joint_state_message(names, positions, stamp_ns=stamp))
