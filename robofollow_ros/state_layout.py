"""The 14-value state/action layout of the dual-arm cell, defined once for every part of the package.

Layout: ``[left q1..q6, left gripper, right q1..q6, right gripper]``; joints in radians, grippers normalised
(1 = open, 0 = closed). On ROS the layout travels as ``sensor_msgs/JointState`` and, per arm, as
``trajectory_msgs/JointTrajectory`` (six joints and the gripper), named after the robot's URDF joints: a
``JointLayout`` maps those names to layout columns (``robot.description.joint_layout`` builds one per registered
robot). The helpers here work on names and plain sequences so that the core never imports rclpy (nor MuJoCo).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np

from robofollow_ros.errors import LayoutError

Arm = Literal['left', 'right']
ARMS: tuple[Arm, Arm] = ('left', 'right')
"""The two arms in layout order (``robofollow_ros.benchmark.types`` re-exports both names).

Defined here rather than in the benchmark package so that the layout, and the policy code built on it, can be
imported without the benchmark's task registry (an isolated policy's process holds no task objects)."""

Numbers = Sequence[float] | np.ndarray
"""A 1-D run of numbers: a sequence of floats or a numpy array (what joint and pose values arrive as)."""

ARM_DOF = 6
ACTION_DIM = 14
STATE_DIM = ACTION_DIM
ARM_SLICE: dict[Arm, slice] = {'left': slice(0, 6), 'right': slice(7, 13)}
GRIP_INDEX: dict[Arm, int] = {'left': 6, 'right': 13}
GRIP_COLUMNS = np.array([GRIP_INDEX[arm] for arm in ARMS])
"""The grippers' columns in the 14-vector, in arm order (an index array)."""
GRIP_COLUMNS.flags.writeable = False
ARM_JOINT_COLUMNS = np.array([column for column in range(ACTION_DIM) if column not in GRIP_INDEX.values()])
"""Both arms' twelve joint columns in the 14-vector, the grippers left out (an index array)."""
ARM_JOINT_COLUMNS.flags.writeable = False
ARM_COLUMNS: dict[Arm, slice] = {'left': slice(0, 7), 'right': slice(7, 14)}
"""Each arm's seven columns (six joints and its gripper) in the 14-vector."""
HEAD_CAMERA = 'cam_high'
LEFT_WRIST_CAMERA = 'cam_left_wrist'
RIGHT_WRIST_CAMERA = 'cam_right_wrist'
CAMERAS: tuple[str, str, str] = (HEAD_CAMERA, LEFT_WRIST_CAMERA, RIGHT_WRIST_CAMERA)
"""The cell's cameras, in the order observations, bags and exports list them (the one home of their names)."""
ROBOTWIN_CAMERAS: dict[str, str] = {
    HEAD_CAMERA: 'head_camera',
    LEFT_WRIST_CAMERA: 'left_camera',
    RIGHT_WRIST_CAMERA: 'right_camera',
}
"""Each camera's name in RoboTwin's observations and raw HDF5 layout."""


@dataclass(frozen=True)
class JointLayout:
    """How the 14-D layout travels as named joints (``JointState``, per-arm ``JointTrajectory``) for one robot.

    Every reader maps joint names to layout columns through a ``JointLayout``, never by position. Each arm's six
    joints carry radians as they are; its gripper travels as the position of one joint (the URDF's first finger),
    ``gripper_scale`` times the normalised value, so that robot_state_publisher and RViz see the URDF's units.
    Joints in ``gripper_mimics`` are published with the gripper joint's value (the mimicking second finger).

    Attributes:
        robot: the robot the names belong to (``robot.specs``), or ``generic`` for the pre-robot names.
        arm_joints: per arm, its six joint names, base to wrist.
        grippers: per arm, the joint carrying the gripper.
        gripper_scale: gripper joint position of a fully open gripper (1.0: the joint carries the normalised value).
        gripper_mimics: per arm, joints published alongside with the gripper joint's position.
    """

    robot: str
    arm_joints: Mapping[Arm, tuple[str, ...]]
    grippers: Mapping[Arm, str]
    gripper_scale: float = 1.0
    gripper_mimics: Mapping[Arm, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if any(len(self.arm_joints[arm]) != ARM_DOF for arm in ARMS):
            raise LayoutError(f'{self.robot}: every arm needs {ARM_DOF} joints')
        if not self.gripper_scale > 0.0:
            raise LayoutError(f'{self.robot}: gripper scale must be positive, got {self.gripper_scale}')

    def command_joints(self, arm: Arm) -> tuple[str, ...]:
        """Joint names of one arm's JointTrajectory, in column order (six joints and the gripper)."""
        return (*self.arm_joints[arm], self.grippers[arm])

    @cached_property
    def names(self) -> tuple[str, ...]:
        """The 14 joint names of the state vector, in layout order."""
        return tuple(name for arm in ARMS for name in self.command_joints(arm))

    @cached_property
    def published_names(self) -> tuple[str, ...]:
        """Every name of a JointState this layout publishes: the 14, then the gripper mimics."""
        return (*self.names, *(name for arm in ARMS for name in self.gripper_mimics.get(arm, ())))

    def to_joints(self, vector: np.ndarray) -> np.ndarray:
        """Joint positions (``published_names`` order) of 14-D vectors ``(..., 14)``: grippers scaled to joints."""
        columns, scale = self._published_columns
        return np.ascontiguousarray(np.asarray(vector, dtype=np.float64)[..., columns] * scale)

    @cached_property
    def _published_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """For each published joint, its layout column and factor (the sim publishes a state for every row)."""
        grippers = [GRIP_INDEX[arm] for arm in ARMS]
        mimics = [GRIP_INDEX[arm] for arm in ARMS for _ in self.gripper_mimics.get(arm, ())]
        columns = np.array([*range(ACTION_DIM), *mimics])
        scale = np.where(np.isin(columns, grippers), self.gripper_scale, 1.0)
        return columns, scale

    def from_joints(self, values: np.ndarray) -> np.ndarray:
        """14-D vectors from joint positions ``(..., 14)`` in ``names`` order: gripper joints back to normalised."""
        vector = np.array(values, dtype=np.float64)
        for arm in ARMS:
            vector[..., GRIP_INDEX[arm]] /= self.gripper_scale
        return vector

    def joint_state(self, vector: np.ndarray) -> tuple[tuple[str, ...], list[float]]:
        """The ``name`` and ``position`` fields of the JointState of a 14-D state."""
        return self.published_names, [float(v) for v in self.to_joints(vector)]

    def state_from_joint_state(self, names: Sequence[str], positions: Numbers) -> np.ndarray:
        """The 14-vector from a JointState's ``name`` and ``position`` (any order, extra joints ignored).

        Raises:
            LayoutError: a joint of the layout is missing, or names and positions differ in length.
        """
        if len(names) != len(positions):
            raise LayoutError(f'joint state has {len(names)} names but {len(positions)} positions')
        index = {name: i for i, name in enumerate(names)}
        missing = [name for name in self.names if name not in index]
        if missing:
            raise LayoutError(f'joint state lacks {", ".join(missing)} ({self.robot} joint names)')
        return self.from_joints(np.array([float(positions[index[name]]) for name in self.names]))

    def arm_command(self, chunk: np.ndarray, arm: Arm) -> np.ndarray:
        """One arm's (T, 7) JointTrajectory positions of a (T, 14) chunk, in ``command_joints(arm)`` order."""
        return self.to_joints(np.asarray(chunk, dtype=np.float64).reshape(-1, ACTION_DIM))[:, ARM_COLUMNS[arm]]

    def chunk_from_arm_rows(self, rows: Mapping[Arm, tuple[Sequence[str], np.ndarray]]) -> np.ndarray:
        """Join per-arm trajectories ``arm -> (joint names, (T, k) positions)`` into a (T, 14) chunk.

        Raises:
            LayoutError: an arm is missing, its names are not its seven layout joints, or the arms' row counts
                differ.
        """
        missing = [arm for arm in ARMS if arm not in rows]
        if missing:
            raise LayoutError(f'no trajectory for the {" and ".join(missing)} arm')
        counts = {arm: np.asarray(rows[arm][1]).shape[0] for arm in ARMS}
        if len(set(counts.values())) != 1:
            raise LayoutError(f'the arms have different numbers of points: {counts}')
        joints = np.empty((counts[ARMS[0]], ACTION_DIM), dtype=np.float64)
        for arm in ARMS:
            names, positions = rows[arm]
            expected = self.command_joints(arm)
            if sorted(names) != sorted(expected):
                raise LayoutError(f'{arm} arm trajectory names {list(names)}, expected {list(expected)}')
            order = [list(names).index(name) for name in expected]
            values = np.asarray(positions, dtype=np.float64)
            if values.ndim != 2 or values.shape[1] != len(expected):
                raise LayoutError(f'{arm} arm trajectory points must have {len(expected)} positions each')
            joints[:, ARM_COLUMNS[arm]] = values[:, order]
        return self.from_joints(joints)


GENERIC_LAYOUT = JointLayout(
    robot='generic',
    arm_joints={arm: tuple(f'{arm}_joint{i}' for i in range(1, ARM_DOF + 1)) for arm in ARMS},
    grippers={arm: f'{arm}_gripper' for arm in ARMS},
)
"""The names used before joints were named after the robot (``left_joint1`` .. ``left_gripper``, grippers
normalised): bags recorded with them are still read."""


def find_layout(names: Iterable[str], layouts: Sequence[JointLayout]) -> JointLayout:
    """The first of ``layouts`` whose gripper joints are both among ``names`` (what a trajectory needs).

    Raises:
        LayoutError: no layout's grippers are there.
    """
    present = set(names)
    for layout in layouts:
        if all(layout.grippers[arm] in present for arm in ARMS):
            return layout
    known = '; '.join(f'{layout.robot}: {", ".join(layout.grippers[arm] for arm in ARMS)}' for layout in layouts)
    shown = ', '.join(sorted(present)[:8]) or 'none'
    raise LayoutError(f'no gripper joints of a known robot among the joint names ({shown}); expected {known}')
