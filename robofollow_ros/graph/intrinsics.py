"""Pinhole intrinsics of a simulated camera for ``sensor_msgs/CameraInfo`` (plumb_bob, no distortion)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class CameraInfoMatrices:
    """Image size and the 3x3 camera matrix ``k`` and 3x4 projection ``p`` (row-major, as in CameraInfo)."""

    width: int
    height: int
    k: tuple[float, ...]
    p: tuple[float, ...]


def pinhole_from_fovy(fovy_deg: float, *, width: int, height: int) -> CameraInfoMatrices:
    """Intrinsics of a MuJoCo camera: vertical field of view ``fovy_deg``, square pixels, centred principal point."""
    f = 0.5 * height / math.tan(math.radians(fovy_deg) / 2.0)
    cx, cy = width / 2.0, height / 2.0
    return CameraInfoMatrices(
        width=width,
        height=height,
        k=(f, 0.0, cx, 0.0, f, cy, 0.0, 0.0, 1.0),
        p=(f, 0.0, cx, 0.0, 0.0, f, cy, 0.0, 0.0, 0.0, 1.0, 0.0),
    )
