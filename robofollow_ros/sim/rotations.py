"""Small rotation helpers (quaternions are (w, x, y, z), matrices 3x3 with the frame's axes as columns)."""

from __future__ import annotations

import math

import mujoco
import numpy as np

TOP_DOWN = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [-1.0, 0.0, 0.0]])
"""TCP orientation of a top-down grasp at yaw 0: TCP +x (toward the fingertips) = world -z, TCP +y (finger closing
axis) = world -x, TCP +z = world +y. As a quaternion this is the protocol's top-down (-0.5, 0.5, -0.5, -0.5)."""


def quat_from_matrix(matrix: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix, with w >= 0."""
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(matrix, dtype=np.float64).reshape(9))
    return quat if quat[0] >= 0.0 else -quat


def matrix_from_quat(quat: np.ndarray) -> np.ndarray:
    """Rotation matrix of a quaternion (w, x, y, z)."""
    matrix = np.empty(9)
    mujoco.mju_quat2Mat(matrix, np.asarray(quat, dtype=np.float64))
    return matrix.reshape(3, 3)


def rot_z(angle: float) -> np.ndarray:
    """Rotation by ``angle`` (rad) about world +z."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def top_down(yaw: float = 0.0) -> np.ndarray:
    """Orientation of a top-down grasp rotated by ``yaw`` about world +z.

    At yaw 0 the fingers close along world x; at yaw pi/2 along world y.
    """
    return rot_z(yaw) @ TOP_DOWN


def vector_norm(vector: np.ndarray) -> float:
    """Euclidean norm of a 1-D float64 array, with the same arithmetic as ``np.linalg.norm`` (so the same bits)
    without its dispatch overhead; the IK calls it several times per iteration."""
    return math.sqrt(float(vector.dot(vector)))


def rotation_error(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Rotation vector (world frame, rad) that turns ``current`` into ``target``."""
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, (target @ current.T).reshape(9))
    if quat[0] < 0.0:
        quat = -quat
    vector = quat[1:]
    sin_half = vector_norm(vector)
    if sin_half < 1e-12:
        return np.zeros(3)
    angle = 2.0 * math.atan2(sin_half, float(quat[0]))
    return vector / sin_half * angle


def yaw_of(quat: np.ndarray) -> float:
    """Yaw about world z of a quaternion, as the protocol's S3 orientation stage computes it."""
    w, x, y, z = (float(v) for v in quat)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def tcp_yaw(matrix: np.ndarray) -> float:
    """Yaw of a top-down TCP orientation: the angle of the finger closing axis relative to world -x."""
    closing = matrix[:, 1]
    return math.atan2(-closing[1], -closing[0])


def wrap_angle(angle: float) -> float:
    """``angle`` wrapped to [-pi, pi)."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi
