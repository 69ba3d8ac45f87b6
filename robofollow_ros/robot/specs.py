"""Robots as data: every robot the cell can be built with, by name (``--robot``).

A ``RobotSpec`` says where the robot's URDF is, how its joints are named and ordered in the 14-D layout, its home
pose, its servo physics and its camera mounts (the camera links are in the URDF). Kinematics and limits are read
from the URDF (``robot.load_robot``); everything MuJoCo-specific is applied by ``model.compose``. The 14-D layout,
the TCP convention (a ``<arm>_tcp`` link between the finger pads, +x toward the fingertips, fingertips 0.025 m
beyond it) and every scoring rule are the same for every robot.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from robofollow_ros.errors import SimulationError
from robofollow_ros.resources import share_file_or_default
from robofollow_ros.robot.assets import VX300S_URI, vx300s_light_meshes, vx300s_meshes
from robofollow_ros.state_layout import CAMERAS, HEAD_CAMERA, LEFT_WRIST_CAMERA, RIGHT_WRIST_CAMERA, Arm

RobotName = Literal['aloha', 'piper', 'primitive']
DEFAULT_ROBOT: RobotName = 'aloha'

ARM_KP = (900.0, 1200.0, 900.0, 250.0, 250.0, 150.0)
"""Position gains (N m / rad) of joints 1-6 of the primitive robot (ARM_*, HOME_Q and CAMERA_FOVY are the primitive
robot's, ARM_* and CAMERA_FOVY the Piper's too; the finger values are every robot's)."""
ARM_KV = (40.0, 50.0, 35.0, 8.0, 8.0, 5.0)
"""Velocity-feedback gains (N m s / rad) of joints 1-6, driven with the commanded joint velocity as feed-forward."""
ARM_ARMATURE = (0.05, 0.05, 0.04, 0.01, 0.01, 0.01)
HOME_Q = (0.0, -0.5, 0.77, 0.0, math.pi / 2.0 - 0.27, 0.0)
"""Home joints of each arm (joint1..6, rad): TCP pointing straight down (joint2 + joint3 + joint5 = pi/2) at
(-/+0.28, -0.270, 0.949), 0.17 m in front of the base and 0.21 m above the table, behind the operation area."""
CAMERA_FOVY = 37.0
PIPER_HOME = {
    'left': (1.1442, 1.8326, -0.6358, 0.0, 0.4607, 0.0),
    'right': (-1.1442, 1.8326, -0.6358, 0.0, 0.4607, 0.0),
}
"""Home joints of the Piper's arms (rad): each waist turned 65.6 degrees outward, TCP pointing down at (-/+0.30,
-0.24, 0.93), 0.19 m above the table, left / right of the operation area; joint6 at 0 (its range's middle, the
gripper's closing axis turned with the waist), so that the expert's grasps keep the wrist clear of its +-3.14 stops."""
FINGER_KP = 400.0
"""Finger position gain (N/m) of every robot: holding a 4 cm object with the fingers commanded shut squeezes with
~8 N each."""
FINGER_FORCE = 15.0
"""Finger force limit (N)."""
FINGER_KV = 4.0
"""Finger damping (N s/m)."""


@dataclass(frozen=True)
class RobotSpec:
    """One robot of the cell (both arms alike, named ``left_*`` / ``right_*`` in the URDF).

    Attributes:
        name: registry name (``--robot``).
        urdf: the cell's URDF (table, both arms, camera links).
        joints: per-arm joint names without the ``<arm>_`` prefix, base to wrist: state columns 1-6 of each arm.
        fingers: per-arm finger joint names without the prefix; each moves 0 (closed) .. its upper limit (open);
            the second mimics the first in the URDF and is actuated on its own in the simulation.
        home: home joints of each arm (the TCP pointing down, outside the operation area); the left arm's where
            ``right_home`` is given.
        right_home: the right arm's home joints where they differ from ``home`` (arms whose bases stand near the
            middle fold outward, each to its own side), else None.
        arm_kp, arm_kv, arm_armature: per joint position gain (N m/rad), commanded-velocity gain (N m s/rad) and
            armature (kg m^2).
        arm_torque: per joint limit of the summed actuator torque (N m), or None for unlimited.
        finger_kp, finger_kv, finger_force: finger position servo gain (N/m), damping (N s/m), force limit (N).
        camera_fovy: vertical field of view (degrees) per camera.
        mesh_packages: URDF mesh URI prefix -> function returning the installed folder it stands for.
        light_mesh_packages: the same for the lighter meshes the cameras draw instead (same file names; the
            physics keeps the ``mesh_packages`` ones); empty when the cameras draw what the physics uses.
        visual_hulls: cameras draw mesh geoms as their convex hulls by default (see ``render.CameraRig``; blockier
            arms and gripper, and with the light meshes no faster, so off for every robot).
        measured_ik_guess: the IK's closed-form guess takes the links' zero-pose directions from the model (an arm
            whose zero pose is folded, like the Piper's); off, it assumes an upright arm (primitive, ALOHA, whose
            planned trajectories stay bit for bit what they were).
        description: one line for listings.
    """

    name: str
    urdf: Path
    joints: tuple[str, ...]
    fingers: tuple[str, str]
    home: tuple[float, ...]
    arm_kp: tuple[float, ...]
    arm_kv: tuple[float, ...]
    arm_armature: tuple[float, ...]
    arm_torque: tuple[float, ...] | None
    finger_kp: float
    finger_kv: float
    finger_force: float
    camera_fovy: dict[str, float]
    mesh_packages: tuple[tuple[str, Callable[[], Path]], ...] = field(default=())
    light_mesh_packages: tuple[tuple[str, Callable[[], Path]], ...] = field(default=())
    visual_hulls: bool = False
    measured_ik_guess: bool = False
    right_home: tuple[float, ...] | None = None
    description: str = ''

    def arm_home(self, arm: Arm) -> tuple[float, ...]:
        """The home joints of ``arm``."""
        return self.right_home if arm == 'right' and self.right_home is not None else self.home

    def urdf_text(self, *, light: bool = False) -> str:
        """The URDF with mesh URIs resolved to the installed packages' folders (``light``: the cameras' lighter
        meshes, when the robot has them).

        Raises:
            SimulationError: the file cannot be read or a mesh package is not installed.
        """
        try:
            text = self.urdf.read_text()
        except OSError as exc:
            raise SimulationError(f'cannot read URDF {self.urdf}: {exc}') from exc
        packages = self.light_mesh_packages if light and self.light_mesh_packages else self.mesh_packages
        for prefix, resolve in packages:
            if prefix in text:
                text = text.replace(prefix, f'{resolve()}/')
        return text


PRIMITIVE = RobotSpec(
    name='primitive',
    urdf=share_file_or_default('urdf/robofollow_cell.urdf'),
    joints=tuple(f'joint{i}' for i in range(1, 7)),
    fingers=('finger_left_joint', 'finger_right_joint'),
    home=HOME_Q,
    arm_kp=ARM_KP,
    arm_kv=ARM_KV,
    arm_armature=ARM_ARMATURE,
    arm_torque=None,
    finger_kp=FINGER_KP,
    finger_kv=FINGER_KV,
    finger_force=FINGER_FORCE,
    camera_fovy=dict.fromkeys(CAMERAS, CAMERA_FOVY),
    description='two 6-DoF arms built from primitives (box / cylinder links, slide fingers)',
)

ALOHA = RobotSpec(
    name='aloha',
    urdf=share_file_or_default('urdf/aloha_cell.urdf'),
    joints=('waist', 'shoulder', 'elbow', 'forearm_roll', 'wrist_angle', 'wrist_rotate'),
    fingers=('left_finger', 'right_finger'),
    home=(0.0, -0.6, 0.5, 0.0, math.pi / 2.0 + 0.1, 0.0),
    arm_kp=(400.0, 900.0, 700.0, 120.0, 150.0, 60.0),
    arm_kv=(25.0, 45.0, 35.0, 5.0, 6.0, 3.0),
    arm_armature=(0.06, 0.12, 0.08, 0.03, 0.03, 0.01),
    arm_torque=(10.6, 21.2, 21.2, 10.6, 10.6, 4.1),
    finger_kp=FINGER_KP,
    finger_kv=FINGER_KV,
    finger_force=FINGER_FORCE,
    camera_fovy={HEAD_CAMERA: 52.0, LEFT_WRIST_CAMERA: 58.0, RIGHT_WRIST_CAMERA: 58.0},
    mesh_packages=((VX300S_URI, vx300s_meshes),),
    light_mesh_packages=((VX300S_URI, vx300s_light_meshes),),
    description='two ViperX 300 6DoF arms with grippers (ALOHA), meshes of gym-aloha 0.1.5 shipped with the package',
)

PIPER = RobotSpec(
    name='piper',
    urdf=share_file_or_default('urdf/piper_cell.urdf'),
    joints=tuple(f'joint{i}' for i in range(1, 7)),
    fingers=('joint7', 'joint8'),
    home=PIPER_HOME['left'],
    arm_kp=ARM_KP,
    arm_kv=ARM_KV,
    arm_armature=ARM_ARMATURE,
    arm_torque=None,
    finger_kp=FINGER_KP,
    finger_kv=FINGER_KV,
    finger_force=FINGER_FORCE,
    camera_fovy=dict.fromkeys(CAMERAS, CAMERA_FOVY),
    measured_ik_guess=True,
    right_home=PIPER_HOME['right'],
    description="two AgileX Piper arms on pedestals (piper_description's kinematics, geometry from primitives)",
)

ROBOTS: dict[str, RobotSpec] = {spec.name: spec for spec in (ALOHA, PIPER, PRIMITIVE)}


def robot_names() -> tuple[str, ...]:
    """Every registered robot name, sorted."""
    return tuple(sorted(ROBOTS))


def get_robot_spec(name: str) -> RobotSpec:
    """The registered robot called ``name``.

    Raises:
        SimulationError: no robot has that name.
    """
    try:
        return ROBOTS[name]
    except KeyError:
        raise SimulationError(f'unknown robot {name!r}; choose one of {", ".join(robot_names())}') from None
