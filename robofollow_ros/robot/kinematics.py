"""Forward kinematics of the cell's arms from the URDF alone (numpy, no MuJoCo, no tf2).

Each arm is the URDF's serial chain from ``world`` to its ``<arm>_tcp`` link (the project's TCP: between the finger
pads, local +x toward the fingertips, +y the closing axis). A pose source, the real-time bridge's workspace check and
the ``ee_pose`` node compute TCP poses from measured joints with it; the simulator's own TCP site agrees within
numerical precision (``test/test_robot_kinematics.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from xml.etree import ElementTree as ET

import numpy as np

from robofollow_ros.errors import SimulationError
from robofollow_ros.robot.description import RobotDescription, load_robot
from robofollow_ros.robot.specs import DEFAULT_ROBOT
from robofollow_ros.state_layout import ARM_DOF, ARM_SLICE, ARMS, STATE_DIM, Arm, Numbers

WORLD_LINK = 'world'
"""The URDF's root link: the frame every TCP pose is given in (``frame_id`` ``world`` on ROS)."""


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """The URDF's fixed-axis roll-pitch-yaw rotation, Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr, cp, sp, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def axis_angle_matrix(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation by ``angle`` (rad) about the unit vector ``axis`` (Rodrigues)."""
    x, y, z = axis
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def _axis_angle_matrices(axis: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Rotations (N, 3, 3) by each of ``angles`` (N,) about the unit vector ``axis`` (Rodrigues)."""
    x, y, z = axis
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    sines, cosines = np.sin(angles)[:, None, None], np.cos(angles)[:, None, None]
    return np.eye(3) + sines * k + (1.0 - cosines) * (k @ k)


def quaternion_from_matrix(rot: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z), w >= 0, of a rotation matrix."""
    m = np.asarray(rot, dtype=np.float64)
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0.0:
        s = 2.0 * np.sqrt(trace + 1.0)
        q = np.array([0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s])
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = np.array([(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s])
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = np.array([(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s])
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = np.array([(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s])
    q /= np.linalg.norm(q)
    return -q if q[0] < 0.0 else q


@dataclass(frozen=True)
class ChainLink:
    """One URDF joint on the way from ``world`` to a TCP: its fixed origin, then (revolute) a turn about ``axis``.

    Attributes:
        joint: the URDF joint's name.
        translation, rotation: the joint's ``<origin>`` in its parent link's frame.
        axis: unit rotation axis in the joint frame, or None for a fixed joint.
        column: which of the arm's six joints drives it (0..5), or None for a fixed joint.
    """

    joint: str
    translation: np.ndarray
    rotation: np.ndarray
    axis: np.ndarray | None
    column: int | None


@dataclass(frozen=True)
class TcpPose:
    """A TCP pose in the ``world`` frame: position (m), rotation matrix (columns = TCP axes), quaternion (w x y z)."""

    position: np.ndarray
    rotation: np.ndarray

    @property
    def quaternion(self) -> np.ndarray:
        """Orientation as a unit quaternion (w, x, y, z), w >= 0."""
        return quaternion_from_matrix(self.rotation)


def _vector(text: str | None, *, default: str, where: str) -> np.ndarray:
    try:
        values = np.array([float(v) for v in (text if text is not None else default).split()])
    except ValueError:
        raise SimulationError(f'{where}: {text!r} is not three numbers') from None
    if values.shape != (3,):
        raise SimulationError(f'{where}: {text!r} is not three numbers')
    return values


class ForwardKinematics:
    """TCP poses of both arms of a registered robot, from its URDF (``robot.description``)."""

    def __init__(self, robot: RobotDescription) -> None:
        self.robot = robot
        try:
            root = ET.parse(robot.spec.urdf).getroot()
        except (OSError, ET.ParseError) as exc:
            raise SimulationError(f'cannot read URDF {robot.spec.urdf}: {exc}') from exc
        self.chains: dict[Arm, tuple[ChainLink, ...]] = {
            arm: self._chain(root, arm, robot.arms[arm].tcp, robot.arms[arm].joints) for arm in ARMS
        }

    def _chain(self, root: ET.Element, arm: Arm, tcp: str, joints: tuple[str, ...]) -> tuple[ChainLink, ...]:
        urdf = self.robot.spec.urdf
        by_child: dict[str, ET.Element] = {}
        for element in root.iter('joint'):
            child = element.find('child')
            child_link = None if child is None else child.get('link')
            if child_link:
                by_child[child_link] = element
        chain: list[ChainLink] = []
        link = tcp
        while link != WORLD_LINK:
            joint = by_child.get(link)
            if joint is None:
                raise SimulationError(f'URDF {urdf}: no joint leads to link {link!r} on the way from {tcp!r} to world')
            name = joint.get('name', '')
            kind = joint.get('type')
            origin = joint.find('origin')
            where = f'URDF {urdf} joint {name!r}'
            xyz = _vector(None if origin is None else origin.get('xyz'), default='0 0 0', where=where)
            rpy = _vector(None if origin is None else origin.get('rpy'), default='0 0 0', where=where)
            if kind == 'fixed':
                axis, column = None, None
            elif kind in ('revolute', 'continuous') and name in joints:
                axis_element = joint.find('axis')
                axis = _vector(None if axis_element is None else axis_element.get('xyz'), default='1 0 0', where=where)
                axis = axis / np.linalg.norm(axis)
                column = joints.index(name)
            else:
                raise SimulationError(f'{where}: a {kind} joint on the {arm} TCP chain is not one of {joints}')
            chain.append(ChainLink(name, xyz, rpy_matrix(*rpy), axis, column))
            parent = joint.find('parent')
            link = '' if parent is None else parent.get('link', '')
        chain.reverse()
        driven = sorted(c.column for c in chain if c.column is not None)
        if driven != list(range(ARM_DOF)):
            raise SimulationError(f'URDF {urdf}: the {arm} TCP chain is not driven by the joints {joints}')
        return tuple(chain)

    def tcp_pose(self, arm: Arm, q: Numbers) -> TcpPose:
        """The TCP pose of ``arm`` for its six joint positions ``q`` (rad).

        Raises:
            SimulationError: ``q`` is not six finite numbers.
        """
        joints = np.asarray(q, dtype=np.float64)
        if joints.shape != (ARM_DOF,) or not np.all(np.isfinite(joints)):
            raise SimulationError(f'{arm} arm: forward kinematics needs {ARM_DOF} finite joint positions, got {q!r}')
        position = np.zeros(3)
        rotation = np.eye(3)
        for link in self.chains[arm]:
            position = position + rotation @ link.translation
            rotation = rotation @ link.rotation
            if link.axis is not None and link.column is not None:
                rotation = rotation @ axis_angle_matrix(link.axis, float(joints[link.column]))
        return TcpPose(position=position, rotation=rotation)

    def joint_reach(self, arm: Arm) -> np.ndarray:
        """For each of ``arm``'s six joints, an upper bound (m) on its TCP's distance from the joint's axis: the
        lengths of the chain's links beyond it added up. A turn of ``dq`` rad at joint ``i`` moves the TCP at most
        ``reach[i] * |dq|``, whatever the other joints (a bound with no forward kinematics to compute)."""
        reach = np.zeros(ARM_DOF)
        chain = self.chains[arm]
        for index, link in enumerate(chain):
            if link.column is not None:
                reach[link.column] = sum(float(np.linalg.norm(later.translation)) for later in chain[index + 1 :])
        return reach

    def tcp_poses(self, state: Numbers) -> dict[Arm, TcpPose]:
        """Both TCP poses for a 14-D state (grippers ignored).

        Raises:
            SimulationError: ``state`` is not 14 numbers or holds non-finite joints.
        """
        values = np.asarray(state, dtype=np.float64)
        if values.shape != (STATE_DIM,):
            raise SimulationError(f'forward kinematics needs a {STATE_DIM}-D state, got shape {values.shape}')
        return {arm: self.tcp_pose(arm, values[ARM_SLICE[arm]]) for arm in ARMS}

    def tcp_positions(self, states: Numbers) -> np.ndarray:
        """Both TCP positions (N, 2, 3; arms in ``ARMS`` order) of N 14-D states (N, 14) at once: the chain's
        products over the whole batch, for checking many states (a chunk's rows and the points between them).

        Raises:
            SimulationError: ``states`` is not (N, 14) or holds non-finite joints.
        """
        values = np.asarray(states, dtype=np.float64)
        if values.ndim != 2 or values.shape[1] != STATE_DIM:
            raise SimulationError(f'forward kinematics needs (N, {STATE_DIM}) states, got shape {values.shape}')
        positions = np.empty((len(values), len(ARMS), 3))
        for index, arm in enumerate(ARMS):
            joints = values[:, ARM_SLICE[arm]]
            if not np.isfinite(joints).all():
                raise SimulationError(f'{arm} arm: forward kinematics needs finite joint positions')
            positions[:, index] = self._chain_positions(arm, joints)
        return positions

    def _chain_positions(self, arm: Arm, joints: np.ndarray) -> np.ndarray:
        count = len(joints)
        position = np.zeros((count, 3))
        rotation = np.broadcast_to(np.eye(3), (count, 3, 3))
        for link in self.chains[arm]:
            position = position + rotation @ link.translation
            rotation = rotation @ link.rotation
            if link.axis is not None and link.column is not None:
                rotation = rotation @ _axis_angle_matrices(link.axis, joints[:, link.column])
        return position

    def tcp_poses_from_joints(self, names: Sequence[str], positions: Numbers) -> dict[Arm, TcpPose]:
        """TCP poses of the arms whose six URDF joints are all in a JointState's ``names`` / ``positions``.

        An arm with a joint missing is left out (a driver may publish each arm on its own); extra names are ignored.

        Raises:
            SimulationError: names and positions differ in length, or a named joint is not finite.
        """
        if len(names) != len(positions):
            raise SimulationError(f'joint state has {len(names)} names but {len(positions)} positions')
        by_name: Mapping[str, float] = dict(zip(names, (float(p) for p in positions), strict=True))
        poses: dict[Arm, TcpPose] = {}
        for arm in ARMS:
            joints = self.robot.arms[arm].joints
            if all(name in by_name for name in joints):
                poses[arm] = self.tcp_pose(arm, [by_name[name] for name in joints])
        return poses


@cache
def forward_kinematics(robot: str = DEFAULT_ROBOT) -> ForwardKinematics:
    """The (cached) forward kinematics of a registered robot.

    Raises:
        SimulationError: unknown robot or unreadable URDF.
    """
    return ForwardKinematics(load_robot(robot))
