"""The safety layer's inputs from a robot profile (``config/robots/<name>.yaml``): its limits and its TCP function.

A profile states joint, velocity and (optionally) acceleration limits per arm in the policy's units, the workspace
box, ``joint_limits`` (``clamp`` or ``refuse``) and ``velocity_limits`` (``refuse`` or ``stretch``); the gripper's
speed is its URDF finger's (the bridge may override it), the state age is an argument here. The TCP function is the
URDF forward kinematics of the profile's robot; a profile without a robot (the Piper) has none, and its workspace
box cannot be checked until one is given.
"""

from __future__ import annotations

import numpy as np

from robofollow_ros.errors import SafetyError
from robofollow_ros.robot.description import load_robot
from robofollow_ros.robot.kinematics import forward_kinematics
from robofollow_ros.robot.profiles import RobotProfile
from robofollow_ros.safety.limits import SafetyLimits, VelocityMode, WorkspaceBox
from robofollow_ros.state_layout import ARM_SLICE, ARMS, GRIP_INDEX, STATE_DIM, Arm

DEFAULT_GRIPPER_VELOCITY = 2.0
"""Normalised gripper units per second (fully open to closed in 0.5 s) for a profile without a robot description."""
COMMAND_ACCELERATION_FRACTION = 0.85
"""The fraction of a profile's acceleration limits the real-time bridge plans its commands to. Rows at the limit
reached the arms at up to 1.15 times it (the 10,000-chunk fuzz, session 13): a JointTrajectoryController times each
window from its arrival, and a position stream's late tick makes up its lag at the velocity limit, so the timing
of delivery, not the plan, decides the last few percent."""


def limits_from_profile(
    profile: RobotProfile,
    *,
    velocity_mode: VelocityMode | None = None,
    max_state_age_s: float = 0.2,
    max_stretch: float = 4.0,
    gripper_velocity: float | None = None,
    acceleration_fraction: float = 1.0,
) -> SafetyLimits:
    """The ``SafetyLimits`` a profile states: its joint, velocity and acceleration limits (none on the grippers: a
    gripper's command is a target its own controller closes on at its speed), its workspace box, its ``joint_limits``
    and ``velocity_limits`` modes, and the driver's joint names (the gripper's command joint) for the interventions.

    ``velocity_mode`` overrides the profile's ``velocity_limits`` when given.

    ``gripper_velocity`` (normalised units per second) defaults to the URDF finger's speed over its travel when the
    profile names a robot, else ``DEFAULT_GRIPPER_VELOCITY``. ``acceleration_fraction`` scales the profile's
    acceleration limits (the bridge's ``COMMAND_ACCELERATION_FRACTION``: a margin for the commands' delivery).

    Raises:
        SafetyError: a limit is not usable.
    """
    velocity = np.empty(len(profile.state_lower()))
    acceleration = np.full(len(velocity), np.inf)
    names: list[str] = []
    for arm in ARMS:
        spec = profile.arms[arm]
        grip = GRIP_INDEX[arm]
        velocity[grip - len(spec.velocity) : grip] = spec.velocity
        acceleration[grip - len(spec.acceleration) : grip] = np.asarray(spec.acceleration) * acceleration_fraction
        velocity[grip] = gripper_velocity if gripper_velocity is not None else _gripper_velocity(profile, arm)
        names += [*spec.joints, spec.gripper.command.joint]
    return SafetyLimits(
        lower=profile.state_lower(),
        upper=profile.state_upper(),
        velocity=velocity,
        acceleration=acceleration,
        workspace=WorkspaceBox(lower=_point(profile.workspace_min), upper=_point(profile.workspace_max)),
        max_state_age_s=max_state_age_s,
        limit_mode=profile.joint_limits,
        velocity_mode=profile.velocity_limits if velocity_mode is None else velocity_mode,
        max_stretch=max_stretch,
        names=tuple(names),
    )


def _point(values: np.ndarray) -> tuple[float, float, float]:
    x, y, z = (float(v) for v in values)
    return x, y, z


def _gripper_velocity(profile: RobotProfile, arm: Arm) -> float:
    """The gripper's speed limit in normalised strokes per second: the URDF finger's speed over its travel (a full
    stroke in 0.18 s on the ALOHA), or ``DEFAULT_GRIPPER_VELOCITY`` for a profile without a robot description."""
    if profile.robot is None:
        return DEFAULT_GRIPPER_VELOCITY
    description = load_robot(profile.robot).arms[arm]
    return description.finger_velocity / description.finger_travel


class ProfileTcp:
    """The TCP positions of a 14-D state by the URDF forward kinematics of a robot: ``tcp(state) -> (left, right)``
    (a ``TcpFunction``), and ``tcp.many(states)`` (N, 2, 3) for many states at once."""

    def __init__(self, robot: str) -> None:
        self.kinematics = forward_kinematics(robot)

    def __call__(self, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        poses = self.kinematics.tcp_poses(state)
        return poses['left'].position, poses['right'].position

    def many(self, states: np.ndarray) -> np.ndarray:
        """Both TCP positions (N, 2, 3) of ``states`` (N, 14)."""
        return self.kinematics.tcp_positions(states)

    def reach(self) -> np.ndarray:
        """Per value of a 14-D state (14,), how far (m) a turn of one radian there moves its arm's TCP at most
        (``ForwardKinematics.joint_reach``; 0 for the grippers)."""
        reach = np.zeros(STATE_DIM)
        for arm in ARMS:
            reach[ARM_SLICE[arm]] = self.kinematics.joint_reach(arm)
        return reach


def profile_tcp(profile: RobotProfile) -> ProfileTcp:
    """The TCP positions of a 14-D state by the URDF forward kinematics of the profile's robot.

    Raises:
        SafetyError: the profile names no robot (no URDF to compute its TCPs from).
    """
    if profile.robot is None:
        raise SafetyError(
            f'robot profile {profile.name!r} names no robot: there is no forward kinematics to check its workspace box'
        )
    return ProfileTcp(profile.robot)
