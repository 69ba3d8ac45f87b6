"""The robot as described by its spec and URDF: joint names, limits and velocity limits per arm, the 14-D layout.

Reads XML only: importable (with ``robot.specs``) where MuJoCo must not be loaded, e.g. in policies and ROS nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from xml.etree import ElementTree as ET

import numpy as np

from robofollow_ros.errors import SimulationError
from robofollow_ros.robot.specs import DEFAULT_ROBOT, ROBOTS, RobotSpec, get_robot_spec, robot_names
from robofollow_ros.state_layout import ARMS, GENERIC_LAYOUT, Arm, JointLayout


@dataclass(frozen=True)
class ArmDescription:
    """One arm's joints as the URDF declares them.

    Attributes:
        arm: ``left`` or ``right``.
        joints: the six revolute joint names, base to wrist.
        lower, upper: joint limits (rad), shape (6,).
        velocity: joint velocity limits (rad/s), shape (6,).
        fingers: the two prismatic finger joint names (the second mimics the first in the URDF).
        base: name of the arm's base link.
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
    base: str
    finger_travel: float
    finger_velocity: float
    tcp: str

    @property
    def opening(self) -> float:
        """Full gap between the finger pads when open (m)."""
        return 2.0 * self.finger_travel


@dataclass(frozen=True)
class RobotDescription:
    """Both arms of the cell and the spec they were read for."""

    arms: dict[Arm, ArmDescription]
    spec: RobotSpec

    @property
    def name(self) -> str:
        """The robot's registry name."""
        return self.spec.name

    def home_state(self) -> np.ndarray:
        """The 14-D home configuration: both arms at the spec's home joints with open grippers."""
        return np.array([*self.spec.arm_home('left'), 1.0, *self.spec.arm_home('right'), 1.0], dtype=np.float64)

    def state_lower(self) -> np.ndarray:
        """Lower bounds of the 14-D state/action vector (gripper 0)."""
        return np.concatenate([np.append(self.arms[a].lower, 0.0) for a in ARMS])

    def state_upper(self) -> np.ndarray:
        """Upper bounds of the 14-D state/action vector (gripper 1)."""
        return np.concatenate([np.append(self.arms[a].upper, 1.0) for a in ARMS])

    @property
    def joint_layout(self) -> JointLayout:
        """How this robot's joints carry the 14-D layout on ROS: the URDF's joint names, the gripper as the first
        finger's position in metres (the second finger mimics it)."""
        return JointLayout(
            robot=self.name,
            arm_joints={arm: self.arms[arm].joints for arm in ARMS},
            grippers={arm: self.arms[arm].fingers[0] for arm in ARMS},
            gripper_scale=self.arms[ARMS[0]].finger_travel,
            gripper_mimics={arm: self.arms[arm].fingers[1:] for arm in ARMS},
        )

    def joint_velocity(self) -> np.ndarray:
        """Velocity limits of the 12 arm joints in state order (left 1-6, right 1-6)."""
        return np.concatenate([self.arms[a].velocity for a in ARMS])


def home_state(robot: str = DEFAULT_ROBOT) -> np.ndarray:
    """The 14-D home configuration of a registered robot (open grippers)."""
    return load_robot(robot).home_state()


def joint_layout(robot: str = DEFAULT_ROBOT) -> JointLayout:
    """The joint layout of a registered robot (its URDF's names; see ``RobotDescription.joint_layout``).

    Raises:
        SimulationError: unknown robot, or its URDF cannot be read.
    """
    return load_robot(robot).joint_layout


def known_joint_layouts(first: str | None = None) -> tuple[JointLayout, ...]:
    """The layouts a reader of recorded joint states tries: ``first`` (a robot name, when known), every
    registered robot, then the generic names of bags recorded before joints were named after the robot."""
    names = [first] if first in ROBOTS else []
    names += [name for name in robot_names() if name not in names]
    return (*(joint_layout(name) for name in names), GENERIC_LAYOUT)


class _Limit:
    """A URDF joint's ``<limit>``, read as numbers."""

    def __init__(self, joint: ET.Element, name: str) -> None:
        limit = joint.find('limit')
        if limit is None:
            raise SimulationError(f'URDF joint {name!r} has no <limit>')
        self.element, self.name = limit, name

    def get(self, key: str) -> float:
        """The limit's attribute ``key`` as a number.

        Raises:
            SimulationError: the attribute is missing or not a number.
        """
        text = self.element.get(key)
        try:
            return float(text if text is not None else '')
        except ValueError:
            raise SimulationError(f'URDF joint {self.name!r}: <limit {key}="{text}"> is not a number') from None


@cache
def load_robot(name: str = DEFAULT_ROBOT) -> RobotDescription:
    """Read joint names, limits and velocity limits of both arms of a registered robot from its URDF.

    Raises:
        SimulationError: unknown robot, or the URDF is missing or lacks an expected joint or limit.
    """
    spec = get_robot_spec(name)
    urdf = spec.urdf
    try:
        root = ET.parse(urdf).getroot()
    except (OSError, ET.ParseError) as exc:
        raise SimulationError(f'cannot read URDF {urdf}: {exc}') from exc
    joints = {j.get('name'): j for j in root.iter('joint')}
    arms: dict[Arm, ArmDescription] = {}
    for arm in ARMS:
        names = tuple(f'{arm}_{joint}' for joint in spec.joints)
        fingers = (f'{arm}_{spec.fingers[0]}', f'{arm}_{spec.fingers[1]}')
        missing = [n for n in (*names, *fingers) if n not in joints]
        if missing:
            raise SimulationError(f'URDF {urdf} lacks joints {missing}')
        limits = [_Limit(joints[n], n) for n in names]
        finger_limit = _Limit(joints[fingers[0]], fingers[0])
        arms[arm] = ArmDescription(
            arm=arm,
            joints=names,
            lower=np.array([lim.get('lower') for lim in limits]),
            upper=np.array([lim.get('upper') for lim in limits]),
            velocity=np.array([lim.get('velocity') for lim in limits]),
            fingers=fingers,
            base=f'{arm}_base_link',
            finger_travel=finger_limit.get('upper'),
            finger_velocity=finger_limit.get('velocity'),
            tcp=f'{arm}_tcp',
        )
    return RobotDescription(arms=arms, spec=spec)
