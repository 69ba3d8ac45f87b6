"""Conversions between numpy / the 14-D layout and standard ROS messages (no cv_bridge, no tf2)."""

from __future__ import annotations

import array
from collections.abc import Sequence
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import CameraInfo, Image, JointState

from robofollow_ros.errors import GraphError
from robofollow_ros.graph.intrinsics import CameraInfoMatrices
from robofollow_ros.units import NS_PER_S

RGB8 = 'rgb8'


def to_time(stamp_ns: int) -> Time:
    """A ``builtin_interfaces/Time`` from nanoseconds."""
    sec, nanosec = divmod(int(stamp_ns), NS_PER_S)
    return Time(sec=sec, nanosec=nanosec)


def from_time(stamp: Time) -> int:
    """Nanoseconds of a ``builtin_interfaces/Time``."""
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def image_message(pixels: np.ndarray, *, stamp_ns: int, frame_id: str) -> Image:
    """An rgb8 Image from an (h, w, 3) uint8 array (filled through ``array.array``, the fast path)."""
    height, width = pixels.shape[:2]
    data = array.array('B')
    data.frombytes(np.ascontiguousarray(pixels, dtype=np.uint8).tobytes())
    message = Image(height=height, width=width, encoding=RGB8, is_bigendian=0, step=width * 3)
    message.header.stamp = to_time(stamp_ns)
    message.header.frame_id = frame_id
    message.data = data
    return message


def image_array(message: Image) -> np.ndarray:
    """The (h, w, 3) uint8 RGB pixels of an rgb8 or bgr8 Image.

    Raises:
        GraphError: another encoding, or a data size that does not match the header.
    """
    if message.encoding not in (RGB8, 'bgr8'):
        raise GraphError(f'image encoding {message.encoding!r} is not rgb8 or bgr8')
    pixels = np.frombuffer(message.data, dtype=np.uint8)
    if pixels.size != message.height * message.step or message.step < message.width * 3:
        raise GraphError(f'image data holds {pixels.size} bytes for {message.height} rows of {message.step}')
    rows = pixels.reshape(message.height, message.step)[:, : message.width * 3]
    image = rows.reshape(message.height, message.width, 3)
    return image[..., ::-1].copy() if message.encoding == 'bgr8' else image.copy()


def camera_info_message(intrinsics: CameraInfoMatrices, *, stamp_ns: int, frame_id: str) -> CameraInfo:
    """CameraInfo of a distortion-free pinhole camera."""
    message = CameraInfo(
        width=intrinsics.width,
        height=intrinsics.height,
        distortion_model='plumb_bob',
        d=[0.0] * 5,
        k=list(intrinsics.k),
        r=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        p=list(intrinsics.p),
    )
    message.header.stamp = to_time(stamp_ns)
    message.header.frame_id = frame_id
    return message


def pose_message(position: Sequence[float], quat: Sequence[float], *, stamp_ns: int, frame_id: str) -> PoseStamped:
    """A PoseStamped from a position and a (w, x, y, z) quaternion."""
    message = PoseStamped()
    message.header.stamp = to_time(stamp_ns)
    message.header.frame_id = frame_id
    p, o = message.pose.position, message.pose.orientation
    p.x, p.y, p.z = (float(v) for v in position)
    o.w, o.x, o.y, o.z = (float(v) for v in quat)
    return message


def joint_state_message(names: Sequence[str], positions: Sequence[float], *, stamp_ns: int) -> JointState:
    """A JointState with positions only."""
    message = JointState(name=list(names), position=[float(v) for v in positions])
    message.header.stamp = to_time(stamp_ns)
    return message


def camera_info_document(message: CameraInfo) -> dict[str, Any]:
    """A sensor_msgs/CameraInfo as camera_info_manager writes it to YAML (``camera_name`` is the frame id)."""

    def matrix(rows: int, cols: int, values: Sequence[float]) -> dict[str, Any]:
        return {'rows': rows, 'cols': cols, 'data': [float(v) for v in values]}

    distortion = list(message.d)
    return {
        'image_width': int(message.width),
        'image_height': int(message.height),
        'camera_name': str(message.header.frame_id),
        'camera_matrix': matrix(3, 3, message.k),
        'distortion_model': str(message.distortion_model),
        'distortion_coefficients': matrix(1, len(distortion), distortion),
        'rectification_matrix': matrix(3, 3, message.r),
        'projection_matrix': matrix(3, 4, message.p),
    }
