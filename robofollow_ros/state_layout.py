"""The 14-value state/action layout of the dual-arm cell, defined once for every part of the package.

Layout: ``[left q1..q6, left gripper, right q1..q6, right gripper]``; joints in radians, grippers normalised
(1 = open, 0 = closed). On ROS the layout travels as ``sensor_msgs/JointState`` (all 14 named entries) and, per arm,
as ``trajectory_msgs/JointTrajectory`` (7 named entries: six joints and the gripper). The helpers here work on names
and plain sequences so that the core never imports rclpy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from robofollow_ros.benchmark.types import ARMS, Arm
from robofollow_ros.errors import LayoutError

ARM_DOF = 6
ACTION_DIM = 14
STATE_DIM = ACTION_DIM
ARM_SLICE: dict[Arm, slice] = {'left': slice(0, 6), 'right': slice(7, 13)}
GRIP_INDEX: dict[Arm, int] = {'left': 6, 'right': 13}
ARM_COLUMNS: dict[Arm, slice] = {'left': slice(0, 7), 'right': slice(7, 14)}
"""Each arm's seven columns (six joints and its gripper) in the 14-vector."""
CAMERAS: tuple[str, str, str] = ('cam_high', 'cam_left_wrist', 'cam_right_wrist')

ARM_JOINTS: dict[Arm, tuple[str, ...]] = {arm: tuple(f'{arm}_joint{i}' for i in range(1, ARM_DOF + 1)) for arm in ARMS}
GRIPPER_JOINTS: dict[Arm, str] = {arm: f'{arm}_gripper' for arm in ARMS}
"""Name of each arm's normalised gripper entry in /joint_states and in the arm's JointTrajectory."""
ARM_COMMAND_JOINTS: dict[Arm, tuple[str, ...]] = {arm: (*ARM_JOINTS[arm], GRIPPER_JOINTS[arm]) for arm in ARMS}
"""Joint names of one arm's JointTrajectory, in column order."""
JOINT_NAMES: tuple[str, ...] = tuple(name for arm in ARMS for name in ARM_COMMAND_JOINTS[arm])
"""The 14 names of the state vector, in layout order."""


def state_from_joint_state(names: Sequence[str], positions: Sequence[float]) -> np.ndarray:
    """The 14-vector from a JointState's ``name`` and ``position`` (any order, extra joints ignored).

    Raises:
        LayoutError: a joint of the layout is missing, or names and positions differ in length.
    """
    if len(names) != len(positions):
        raise LayoutError(f'joint state has {len(names)} names but {len(positions)} positions')
    index = {name: i for i, name in enumerate(names)}
    missing = [name for name in JOINT_NAMES if name not in index]
    if missing:
        raise LayoutError(f'joint state lacks {", ".join(missing)}')
    return np.array([float(positions[index[name]]) for name in JOINT_NAMES], dtype=np.float64)


def arm_rows(chunk: np.ndarray, arm: Arm) -> np.ndarray:
    """One arm's (T, 7) columns of a (T, 14) chunk, in ``ARM_COMMAND_JOINTS[arm]`` order."""
    return np.asarray(chunk, dtype=np.float64)[:, ARM_COLUMNS[arm]]


def chunk_from_arm_rows(rows: Mapping[Arm, tuple[Sequence[str], np.ndarray]]) -> np.ndarray:
    """Join per-arm trajectories ``arm -> (joint names, (T, k) positions)`` into a (T, 14) chunk.

    Raises:
        LayoutError: an arm is missing, its names are not its seven layout joints, or the arms' row counts differ.
    """
    missing = [arm for arm in ARMS if arm not in rows]
    if missing:
        raise LayoutError(f'no trajectory for the {" and ".join(missing)} arm')
    counts = {arm: np.asarray(rows[arm][1]).shape[0] for arm in ARMS}
    if len(set(counts.values())) != 1:
        raise LayoutError(f'the arms have different numbers of points: {counts}')
    chunk = np.empty((counts[ARMS[0]], ACTION_DIM), dtype=np.float64)
    for arm in ARMS:
        names, positions = rows[arm]
        expected = ARM_COMMAND_JOINTS[arm]
        if sorted(names) != sorted(expected):
            raise LayoutError(f'{arm} arm trajectory names {list(names)}, expected {list(expected)}')
        order = [list(names).index(name) for name in expected]
        values = np.asarray(positions, dtype=np.float64)
        if values.ndim != 2 or values.shape[1] != len(expected):
            raise LayoutError(f'{arm} arm trajectory points must have {len(expected)} positions each')
        chunk[:, ARM_COLUMNS[arm]] = values[:, order]
    return chunk
