"""``DriverFeedback``: a real cell's measured joints, read from a robot profile's driver ``joint_states`` topics.

The one place that turns a driver's JointState (its joint names, signs, offsets, gripper units) into the policy's
14-D state (``robot.profiles.arm_state_from_joint_state``): the policy bridge reads the latest state of both arms
from it in real mode, and the ``ee_pose`` node publishes the TCP poses and ``/robofollow/joint_states`` from it.

Both arms may share one topic (a ros2_control ``joint_state_broadcaster``) or have one each (xs_sdk, piper_ros);
each topic is subscribed once. A sample's age is measured from its ``header.stamp`` on the reader's ROS clock (in
real mode every node stamps with its wall clock); a driver that leaves the stamp zero is aged from its arrival.
The gaps between an arm's arrivals since ``mark_gaps`` say whether the cell kept real time
(``evaluation/real_time.py``): a late driver and a reader that falls behind both leave the arm unobserved.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from robofollow_ros.errors import ProfileError
from robofollow_ros.robot.profiles import RobotProfile, arm_state_from_joint_state
from robofollow_ros.ros.messages import from_time
from robofollow_ros.state_layout import ARMS, Arm
from robofollow_ros.units import NS_PER_S

DRIVER_STATES = QoSProfile(
    depth=100,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
"""Volatile and reliable: matches a driver's plain reliable writer as well as the sim's transient-local one (a
transient-local reader would not match a volatile writer and would never hear a real driver)."""

ArmCallback = Callable[[Arm, np.ndarray, int], None]
"""Called with an arm, its seven policy values and the stamp (ns) of the message they came from."""


@dataclass(frozen=True)
class ArmSample:
    """One arm's latest measured values (seven, policy units), their stamp (ns, ROS time) and arrival (monotonic)."""

    values: np.ndarray
    stamp_ns: int
    arrived: float


@dataclass(frozen=True)
class StateGaps:
    """The gaps between an arm's joint-state arrivals since ``DriverFeedback.mark_gaps``: the largest (s) and how
    many were longer than the limit given there."""

    largest_s: float
    late: int

    def with_gap(self, gap: float, *, late_s: float) -> StateGaps:
        """These gaps and one more."""
        return StateGaps(largest_s=max(self.largest_s, gap), late=self.late + int(gap > late_s))


@dataclass(frozen=True)
class MeasuredCell:
    """Both arms' latest measured state (14-D, policy units), its age (s) and the stamp of its older arm (ns)."""

    state: np.ndarray
    age_s: float
    stamp_ns: int


class DriverFeedback:
    """Subscribes to a profile's ``joint_states`` topics and keeps each arm's latest sample.

    Args:
        node: the node whose subscriptions (and ROS clock) these are.
        profile: the robot profile naming the topics and conversions.
        on_arm: called from the subscription callback with each arm state read (e.g. to publish its TCP pose).
        on_message: called once per message after its arms were stored (e.g. to publish the 14 joints).
        condition: notified whenever a sample is stored (a thread waiting for a fresh state waits on it).
        monotonic: the clock arrivals are timed on.
    """

    def __init__(
        self,
        node: Node,
        profile: RobotProfile,
        *,
        on_arm: ArmCallback | None = None,
        on_message: Callable[[int], None] | None = None,
        condition: threading.Condition | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.monotonic = monotonic
        self.node = node
        self.profile = profile
        self.on_arm = on_arm
        self.on_message = on_message
        self.condition = condition or threading.Condition()
        self.samples: dict[Arm, ArmSample] = {}
        self.late_gap_s = float('inf')
        self.gaps = StateGaps(largest_s=0.0, late=0)
        self.gaps_since = monotonic()
        by_topic: dict[str, list[Arm]] = {}
        for arm in ARMS:
            by_topic.setdefault(profile.arms[arm].joint_states, []).append(arm)
        self.subscriptions = [
            node.create_subscription(
                JointState, topic, lambda message, arms=tuple(arms): self.on_state(arms, message), DRIVER_STATES
            )
            for topic, arms in by_topic.items()
        ]

    def on_state(self, arms: tuple[Arm, ...], message: JointState) -> None:
        """Read the arms ``message`` carries; one throttled warning for a message that cannot be read."""
        stamp_ns = from_time(message.header.stamp)
        arrived = self.monotonic()
        read = False
        for arm in arms:
            try:
                values = arm_state_from_joint_state(self.profile, arm, list(message.name), list(message.position))
            except ProfileError as error:
                self.node.get_logger().warning(f'{arm} joint state ignored: {error}', throttle_duration_sec=5.0)
                continue
            if values is None:
                continue
            with self.condition:
                previous = self.samples.get(arm)
                gap = arrived - max(previous.arrived, self.gaps_since) if previous else 0.0
                self.gaps = self.gaps.with_gap(gap, late_s=self.late_gap_s)
                self.samples[arm] = ArmSample(values=values, stamp_ns=stamp_ns, arrived=arrived)
                self.condition.notify_all()
            read = True
            if self.on_arm is not None:
                self.on_arm(arm, values, stamp_ns)
        if read and self.on_message is not None:
            self.on_message(stamp_ns)

    def mark_gaps(self, *, late_s: float) -> None:
        """Measure the arrival gaps from now on (an episode's start), counting those longer than ``late_s``."""
        with self.condition:
            self.late_gap_s = late_s
            self.gaps = StateGaps(largest_s=0.0, late=0)
            self.gaps_since = self.monotonic()

    def gaps_since_mark(self) -> StateGaps:
        """The gaps since ``mark_gaps``, the one still open up to now included (an arm gone quiet for good)."""
        with self.condition:
            now = self.monotonic()
            open_gaps = [now - max(sample.arrived, self.gaps_since) for sample in self.samples.values()]
            gaps = self.gaps
        for gap in open_gaps:
            gaps = gaps.with_gap(gap, late_s=self.late_gap_s)
        return gaps

    def state(self, *, since: float | None = None) -> np.ndarray | None:
        """The latest 14-D state, or ``None`` before both arms were heard (since ``since``, monotonic, if given)."""
        with self.condition:
            if any(arm not in self.samples for arm in ARMS):
                return None
            if since is not None and any(self.samples[arm].arrived < since for arm in ARMS):
                return None
            return np.concatenate([self.samples[arm].values for arm in ARMS])

    def latest(self) -> MeasuredCell | None:
        """The latest 14-D state with its age (that of its older arm), or ``None`` before both arms were heard."""
        with self.condition:
            if any(arm not in self.samples for arm in ARMS):
                return None
            samples = [self.samples[arm] for arm in ARMS]
        now_ns = self.node.get_clock().now().nanoseconds
        now = self.monotonic()
        ages = [
            (now_ns - sample.stamp_ns) / NS_PER_S if sample.stamp_ns > 0 else now - sample.arrived for sample in samples
        ]
        return MeasuredCell(
            state=np.concatenate([sample.values for sample in samples]),
            age_s=max(ages),
            stamp_ns=min(sample.stamp_ns for sample in samples),
        )

    def close(self) -> None:
        """Drop the subscriptions."""
        for subscription in self.subscriptions:
            self.node.destroy_subscription(subscription)
        self.subscriptions = []
