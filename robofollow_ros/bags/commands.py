"""The arm and gripper commands a real cell's episode bag holds, in the policy's units (``read_arm_commands``).

The real-mode graph's recorder writes every command the bridge sent to the arms during an episode, on the robot
profile's topics and in the driver's types and units (docs/bags.md). Read back here into ``ArmCommand`` for
``safety.command_audit``: a JointTrajectory's points when they are due (``time_from_start`` after its stamp, or after
its log time for a stamp of zero), a position stream's target (an xs_sdk JointGroupCommand or JointSingleCommand, a
Piper joint_ctrl_single JointState) one control period ahead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from robofollow_ros.bags.cdr import default_typestore
from robofollow_ros.bags.storage import read_raw
from robofollow_ros.errors import BagError
from robofollow_ros.robot.profiles import RobotProfile
from robofollow_ros.safety.command_audit import ArmCommand
from robofollow_ros.safety.jtc import seconds_due, trajectory_view
from robofollow_ros.state_layout import ARM_DOF, ARMS, Arm


def read_arm_commands(path: str | Path, profile: RobotProfile) -> list[ArmCommand]:
    """Every arm and gripper command of the bag at ``path`` on ``profile``'s topics, in log order.

    Raises:
        BagError: not a bag, a command in a type the profile does not name, or one that cannot be decoded.
    """
    roles: dict[str, dict[Arm, str]] = {}
    types: dict[str, str] = {}
    for arm in ARMS:
        spec = profile.arms[arm]
        for topic, msgtype, role in (
            (spec.command.topic, spec.command.type, 'arm'),
            (spec.gripper.interface.topic, spec.gripper.interface.type, 'gripper'),
        ):
            roles.setdefault(topic, {}).setdefault(arm, role)  # one message carries both on the Piper's topic
            types[topic] = msgtype
    raw = read_raw(path, wanted=lambda topic: topic in roles)
    store = default_typestore()
    period = 1.0 / profile.control_rate
    commands: list[ArmCommand] = []
    for topic, messages in raw.topics.items():
        if messages.msgtype != types[topic]:
            raise BagError(f'{path}: {topic} holds {messages.msgtype}, not the {types[topic]} of {profile.name}')
        for log_ns, data in zip(messages.log_ns, messages.data, strict=True):
            try:
                message = store.deserialize_cdr(data, messages.msgtype)
            except Exception as error:  # rosbags raises several kinds for a broken or foreign message
                raise BagError(f'{path}: {topic} at {log_ns}: cannot decode {messages.msgtype}: {error}') from error
            for arm, role in roles[topic].items():
                commands.append(_command(profile, topic, arm, role, int(log_ns), message, messages.msgtype, period))
    return sorted(commands, key=lambda command: command.log_ns)


def _command(
    profile: RobotProfile, topic: str, arm: Arm, role: str, log_ns: int, message: Any, msgtype: str, period: float
) -> ArmCommand:
    spec = profile.arms[arm]
    scale = spec.gripper.command
    if msgtype == 'trajectory_msgs/msg/JointTrajectory':
        names = list(message.joint_names)
        times = seconds_due(message, after_ns=log_ns)
        stamp_ns = trajectory_view(message).stamp_ns
        rows = [dict(zip(names, p.positions, strict=False)) for p in message.points]
        if role == 'arm':
            driver = np.array([[row.get(joint, np.nan) for joint in spec.joints] for row in rows]).reshape(-1, ARM_DOF)
            return ArmCommand(topic, arm, log_ns, times, joints=spec.joints_from_driver(driver), stamp_ns=stamp_ns)
        grips = np.array([row.get(scale.joint, np.nan) for row in rows])
        return ArmCommand(topic, arm, log_ns, times, grips=scale.opening(grips), stamp_ns=stamp_ns)
    ahead = np.array([period])
    if msgtype == 'sensor_msgs/msg/JointState':  # piper_ros joint_ctrl_single: six joints, then the gripper
        values = np.asarray(message.position, dtype=np.float64)
        joints = values[None, :ARM_DOF] if len(values) >= ARM_DOF else np.full((1, ARM_DOF), np.nan)
        grip = values[ARM_DOF : ARM_DOF + 1] if len(values) > ARM_DOF else np.array([np.nan])
        return ArmCommand(
            topic,
            arm,
            log_ns,
            ahead,
            joints=spec.joints_from_driver(joints),
            grips=scale.opening(grip),
            streamed=True,
        )
    cmd = np.atleast_1d(np.asarray(message.cmd, dtype=np.float64))
    if role == 'arm':  # xs_sdk JointGroupCommand: the group's six joints
        joints = cmd[None, :] if len(cmd) == ARM_DOF else np.full((1, ARM_DOF), np.nan)
        return ArmCommand(topic, arm, log_ns, ahead, joints=spec.joints_from_driver(joints), streamed=True)
    return ArmCommand(topic, arm, log_ns, ahead, grips=scale.opening(cmd[:1]), streamed=True)
