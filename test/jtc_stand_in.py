"""A stand-in for a ros2_control cell in the real-time bridge's tests: JointTrajectory commands in, /joint_states out.

Each controller topic of a ``ros2_control`` profile is subscribed; a trajectory replaces that controller's points
from the moment it was *sent* (its DDS source timestamp; the points due from its stamp, or from then for a stamp of
zero), and each point's positions become the measured joints when it is due (a jump, no interpolation). Timing a
trajectory from its arrival instead measured this process's executor: on a loaded machine a command handled 100 ms
late left the stand-in 100 ms behind the bridge's clock, and the next command, exact on the bridge's timeline, read
as a jump of two rows. A timer publishes every joint on the profile's ``joint_states`` topic at ``rate`` Hz, stamped
``lag`` seconds in the past (a stale driver). Every command is kept with its arrival and send times and the measured
14-D state at the moment it was sent, for the tests to check what reached the arms.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
from rclpy.node import Node
from rclpy.subscription import MessageInfo
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from robofollow_ros.robot.profiles import RobotProfile, arm_state_from_joint_state, to_driver
from robofollow_ros.ros import qos
from robofollow_ros.ros.messages import joint_state_message
from robofollow_ros.safety.jtc import seconds_due
from robofollow_ros.state_layout import ARMS

NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class Received:
    """One command as it arrived: its topic, monotonic arrival and send times, the measured 14-D state when it was
    sent (where the controller starts it from), the message."""

    topic: str
    arrived: float
    state: np.ndarray
    message: JointTrajectory
    sent: float

    @property
    def points(self) -> int:
        return len(self.message.points)


class JtcStandIn:
    """The stand-in's subscriptions, pending points and joint state timer on ``node`` (spun by the test)."""

    def __init__(self, node: Node, profile: RobotProfile, *, start: np.ndarray, rate: float = 100.0) -> None:
        self.node = node
        self.profile = profile
        self.lock = threading.Lock()
        self.start: dict[str, float] = {}
        for arm, command in to_driver(profile, start).items():
            self.start.update(zip(command.joints, (float(v) for v in command.positions), strict=True))
            self.start[command.gripper_joint] = command.gripper
            self.start[profile.arms[arm].gripper.feedback.joint] = command.gripper
        self.trajectories: dict[str, list[tuple[float, dict[str, float]]]] = {}
        """Per controller topic, its trajectory's points (monotonic due time, joint values): those due are behind."""
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
                JointTrajectory, topic, lambda m, info, topic=topic: self.on_command(topic, m, info), qos.ARM_COMMANDS
            )
        states = {profile.arms[arm].joint_states for arm in ARMS}
        self.pubs = [node.create_publisher(JointState, topic, qos.STATE) for topic in states]
        node.create_timer(1.0 / rate, self.tick)

    def positions_at(self, when: float) -> dict[str, float]:
        """Every joint's position at monotonic ``when``: the start, then each trajectory's points due by then; the
        caller holds ``lock``."""
        positions = dict(self.start)
        for points in self.trajectories.values():
            for due, values in points:
                if due > when:
                    break
                self.update(positions, values)
        return positions

    def update(self, positions: dict[str, float], values: dict[str, float]) -> None:
        positions.update(values)
        for arm in ARMS:
            gripper = self.profile.arms[arm].gripper
            if gripper.command.joint in values:
                positions[gripper.feedback.joint] = values[gripper.command.joint]

    def state(self, when: float | None = None) -> np.ndarray:
        """The measured 14-D state in policy units at monotonic ``when`` (default: now)."""
        with self.lock:
            positions = self.positions_at(time.monotonic() if when is None else when)
        names, values = list(positions), list(positions.values())
        arms = [arm_state_from_joint_state(self.profile, arm, names, values) for arm in ARMS]
        assert arms[0] is not None and arms[1] is not None
        return np.concatenate(arms)

    def put(self, state: np.ndarray, *, topics: Collection[str]) -> None:
        """The joints of the controllers on ``topics`` at ``state`` (14-D) at once, their trajectories dropped (fake
        hardware's reset of the cell)."""
        with self.lock:
            now = time.monotonic()
            self.start = self.positions_at(now)
            placed: dict[str, float] = {}
            for command in to_driver(self.profile, state).values():
                placed.update(zip(command.joints, (float(v) for v in command.positions), strict=True))
                placed[command.gripper_joint] = command.gripper
            for topic in topics:
                self.update(self.start, {joint: placed[joint] for joint in self.topics[topic]})
            self.trajectories = {topic: points for topic, points in self.trajectories.items() if topic not in topics}
            for topic, points in self.trajectories.items():
                self.trajectories[topic] = [(due, values) for due, values in points if due > now]

    def on_command(self, topic: str, message: JointTrajectory, info: MessageInfo) -> None:
        arrived, wall_ns = time.monotonic(), time.time_ns()
        sent, sent_ns = arrived, wall_ns
        if info['source_timestamp'] > 0:
            sent = min(arrived, arrived - (wall_ns - info['source_timestamp']) / NS_PER_S)
            sent_ns = min(wall_ns, info['source_timestamp'])
        due = seconds_due(message, after_ns=sent_ns)
        with self.lock:
            base = self.positions_at(sent)
            self.update(self.start, {joint: base[joint] for joint in self.topics[topic]})
            self.trajectories[topic] = [
                (sent + float(after), dict(zip(message.joint_names, point.positions, strict=True)))
                for after, point in zip(due, message.points, strict=True)
            ]
        self.received.append(Received(topic, arrived, self.state(sent), message, sent))

    def tick(self) -> None:
        if self.silent:
            return
        with self.lock:
            positions = self.positions_at(time.monotonic())
        names, values = list(positions), list(positions.values())
        stamp = self.node.get_clock().now().nanoseconds - round(self.lag * NS_PER_S)
        for publisher in self.pubs:
            publisher.publish(joint_state_message(names, values, stamp_ns=stamp))
