"""``CommandedGrips``: the grippers' command as the profile's controllers follow it, for ``/robofollow/joint_states``.

The simulated cell's 14-D state holds the measured arm joints and the *commanded* grips (``sim/executor.py``), and
the referee's close and open events are thresholds on that command (protocol §4.2): a gripper closed on a 4 cm
block measures about 0.6 open, which no close threshold would tell from a half-open gripper. A real cell's driver
reports the measured fingers, so the ee_pose node replaces each gripper's value with the command read from the
profile's gripper command topic, evaluated at the message's time as the driver's controller follows it
(``realcell/fake_driver.py``'s controller model: a JointTrajectoryController's interpolation, a streamed target's rate).
Until a gripper has been commanded, its measured value stands. Each new command continues from the grip commanded
so far, not from the measured finger: a JointTrajectoryController starts a new trajectory from the measured state,
and a gripper closed on a block measures about 0.6 open, so that start would read as the gripper opening and
closing again at every chunk (the policy commanded it closed throughout, and the simulated cell's state says so).
"""

from __future__ import annotations

import threading

import numpy as np
from rclpy.node import Node

from robofollow_ros.errors import DriverCommandError
from robofollow_ros.realcell.fake_driver import CommandTopic, FakeDriver
from robofollow_ros.robot.profiles import RobotProfile
from robofollow_ros.ros import qos
from robofollow_ros.state_layout import ARMS, GRIP_INDEX
from robofollow_ros.units import NS_PER_S


class CommandedGrips:
    """Listens to ``profile``'s command topics on ``node`` and answers the commanded grips at a given time."""

    def __init__(self, node: Node, profile: RobotProfile) -> None:
        self.node = node
        self.model = FakeDriver(profile, initial=profile.home_state())
        self.lock = threading.Lock()
        self.measured = profile.home_state()
        self.current = profile.home_state()
        self.commanded = dict.fromkeys(ARMS, False)
        self.last_ns: int | None = None
        grip_topics = {profile.arms[arm].gripper.interface.topic: arm for arm in ARMS}
        for command in self.model.topics:
            self._subscribe(command, grip_topics.get(command.topic))

    def _subscribe(self, command: CommandTopic, arm: str | None) -> None:
        self.node.create_subscription(
            command.message_type,
            command.topic,
            lambda message: self.on_command(command, message, arm),
            qos.ARM_COMMANDS,
        )

    def on_command(self, command: CommandTopic, message: object, arm: str | None) -> None:
        now_ns = self.node.get_clock().now().nanoseconds
        with self.lock:
            start = self.measured.copy()
            for grip_arm in ARMS:
                if self.commanded[grip_arm]:
                    start[GRIP_INDEX[grip_arm]] = self.current[GRIP_INDEX[grip_arm]]
            try:
                command.handle(message, now_ns, start)
            except DriverCommandError:
                return  # the driver refuses it as well: the grip stays what it was
            if arm is not None:
                self.commanded[arm] = True  # type: ignore[index]

    def apply(self, measured: np.ndarray, *, stamp_ns: int) -> np.ndarray:
        """``measured`` (14-D) with each commanded gripper's value replaced by its command at ``stamp_ns``."""
        state = np.array(measured, dtype=np.float64)
        with self.lock:
            if self.last_ns is None:
                self.model.setpoints.reset(state)
            dt = 0.0 if self.last_ns is None else max(0.0, (stamp_ns - self.last_ns) / NS_PER_S)
            self.last_ns = stamp_ns if self.last_ns is None else max(self.last_ns, stamp_ns)
            self.measured = state.copy()
            # ``advance`` gives the setpoint for the period ``dt`` that starts at its first argument, the end of which
            # is this stamp (sampled at the stamp plus the gap since the last one, the grip ran ahead after every
            # stall of the joint states: an opening showed while the arm was still lowering).
            position, _ = self.model.setpoints.advance(stamp_ns - round(dt * NS_PER_S), dt)
            self.current = position.copy()
            for arm in ARMS:
                if self.commanded[arm]:
                    state[GRIP_INDEX[arm]] = position[GRIP_INDEX[arm]]
        return state
