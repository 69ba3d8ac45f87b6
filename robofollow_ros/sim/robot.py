"""The robot as described by the URDF: joint names, limits and velocity limits per arm, and the 14-D layout."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np

from robofollow_ros.benchmark.types import ARMS, Arm
from robofollow_ros.errors import SimulationError
from robofollow_ros.sim.constants import HOME_Q, URDF_PATH
from robofollow_ros.state_layout import ARM_JOINTS


@dataclass(frozen=True)
class ArmDescription:
    """One arm's joints as the URDF declares them.

    Attributes:
        arm: ``left`` or ``right``.
        joints: the six revolute joint names, base to wrist.
        lower, upper: joint limits (rad), shape (6,).
        velocity: joint velocity limits (rad/s), shape (6,).
        fingers: the two prismatic finger joint names (the second mimics the first in the URDF).
        finger_travel: finger stroke (m); each finger moves 0 (closed) .. travel (open).
        finger_velocity: finger speed limit (m/s) from the URDF.
        tcp: name of the TCP link (frame between the finger pads, +x toward the fingertips).
    """

    arm: Arm
    joints: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    fingers: tuple[str, str]
    finger_travel: float
    finger_velocity: float
    tcp: str

    @property
    def opening(self) -> float:
        """Full gap between the finger pads when open (m)."""
        return 2.0 * self.finger_travel


@dataclass(frozen=True)
class RobotDescription:
    """Both arms of the cell."""

    arms: dict[Arm, ArmDescription]
    urdf: Path

    def state_lower(self) -> np.ndarray:
        """Lower bounds of the 14-D state/action vector (gripper 0)."""
        return np.concatenate([np.append(self.arms[a].lower, 0.0) for a in ARMS])

    def state_upper(self) -> np.ndarray:
        """Upper bounds of the 14-D state/action vector (gripper 1)."""
        return np.concatenate([np.append(self.arms[a].upper, 1.0) for a in ARMS])

    def joint_velocity(self) -> np.ndarray:
        """Velocity limits of the 12 arm joints in state order (left 1-6, right 1-6)."""
        return np.concatenate([self.arms[a].velocity for a in ARMS])


def home_state() -> np.ndarray:
    """The 14-D home configuration: both arms at ``HOME_Q`` with open grippers."""
    return np.array([*HOME_Q, 1.0, *HOME_Q, 1.0], dtype=np.float64)


def _limit(joint: ET.Element, name: str) -> ET.Element:
    limit = joint.find('limit')
    if limit is None:
        raise SimulationError(f'URDF joint {name!r} has no <limit>')
    return limit


@cache
def load_robot(urdf: Path = URDF_PATH) -> RobotDescription:
    """Read joint names, limits and velocity limits of both arms from the URDF.

    Raises:
        SimulationError: the file is missing or lacks an expected joint or limit.
    """
    try:
        root = ET.parse(urdf).getroot()
    except (OSError, ET.ParseError) as exc:
        raise SimulationError(f'cannot read URDF {urdf}: {exc}') from exc
    joints = {j.get('name'): j for j in root.iter('joint')}
    arms: dict[Arm, ArmDescription] = {}
    for arm in ARMS:
        names = ARM_JOINTS[arm]
        fingers = (f'{arm}_finger_left_joint', f'{arm}_finger_right_joint')
        missing = [n for n in (*names, *fingers) if n not in joints]
        if missing:
            raise SimulationError(f'URDF {urdf} lacks joints {missing}')
        limits = [_limit(joints[n], n) for n in names]
        finger_limit = _limit(joints[fingers[0]], fingers[0])
        arms[arm] = ArmDescription(
            arm=arm,
            joints=names,
            lower=np.array([float(lim.get('lower')) for lim in limits]),
            upper=np.array([float(lim.get('upper')) for lim in limits]),
            velocity=np.array([float(lim.get('velocity')) for lim in limits]),
            fingers=fingers,
            finger_travel=float(finger_limit.get('upper')),
            finger_velocity=float(finger_limit.get('velocity')),
            tcp=f'{arm}_tcp',
        )
    return RobotDescription(arms=arms, urdf=urdf)
