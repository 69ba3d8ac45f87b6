"""A pinhole camera as data: intrinsics, the camera's pose in the world, rays and projection.

Pixel-centre convention: OpenCV's. The centre of pixel (0, 0) is at (0.0, 0.0), so a centred principal point is
((W - 1) / 2, (H - 1) / 2). The simulator's camera matrix (``sim.render.camera_matrix``) writes cx = W / 2, which
is the corner convention (pixel (0, 0) spans [0, 1]); ``Intrinsics.from_corner_convention`` converts it (cx - 0.5,
cy - 0.5). Ignoring the difference biases poses by half a pixel (0.2-0.8 mm on the table at 640x480).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics in OpenCV's pixel-centre convention, with optional OpenCV distortion coefficients."""

    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int
    distortion: tuple[float, ...] = ()

    @classmethod
    def from_corner_convention(
        cls, matrix: np.ndarray, *, width: int, height: int, distortion: tuple[float, ...] = ()
    ) -> Intrinsics:
        """Intrinsics from a camera matrix written with pixel (0, 0) spanning [0, 1] (the simulator's cx = W / 2)."""
        k = np.asarray(matrix, dtype=np.float64)
        return cls(
            fx=float(k[0, 0]),
            fy=float(k[1, 1]),
            cx=float(k[0, 2]) - 0.5,
            cy=float(k[1, 2]) - 0.5,
            width=width,
            height=height,
            distortion=distortion,
        )

    @classmethod
    def from_fovy(cls, *, fovy_deg: float, width: int, height: int) -> Intrinsics:
        """A distortion-free camera with square pixels, a centred principal point and vertical field of view
        ``fovy_deg`` (how the simulator's cameras are built)."""
        focal = 0.5 * height / math.tan(0.5 * math.radians(fovy_deg))
        return cls(fx=focal, fy=focal, cx=(width - 1) / 2.0, cy=(height - 1) / 2.0, width=width, height=height)

    @property
    def matrix(self) -> np.ndarray:
        """The 3x3 camera matrix K."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    @property
    def dist(self) -> np.ndarray:
        """Distortion coefficients as OpenCV takes them (zeros when none are given)."""
        return np.asarray(self.distortion or (0.0, 0.0, 0.0, 0.0, 0.0), dtype=np.float64)


@dataclass(frozen=True)
class CameraPose:
    """The camera's pose in the world: ``rotation`` maps camera-frame vectors (OpenCV: x right, y down, z along
    the view) to world vectors, ``position`` is the optical centre in world metres."""

    rotation: np.ndarray = field(repr=False)
    position: np.ndarray

    @classmethod
    def look_at(cls, *, position: tuple[float, float, float], target: tuple[float, float, float]) -> CameraPose:
        """A camera at ``position`` looking at ``target`` with the image's up as close to world +z as possible."""
        eye = np.asarray(position, dtype=np.float64)
        z = np.asarray(target, dtype=np.float64) - eye
        z /= np.linalg.norm(z)
        x = np.cross(z, np.array([0.0, 0.0, 1.0]))
        if np.linalg.norm(x) < 1e-9:
            # Looking straight down: the image's right is world +x.
            x = np.array([1.0, 0.0, 0.0])
        x /= np.linalg.norm(x)
        y = np.cross(z, x)
        return cls(rotation=np.stack([x, y, z], axis=1), position=eye)

    @classmethod
    def from_world_to_camera(cls, rvec: np.ndarray, tvec: np.ndarray) -> CameraPose:
        """The pose from OpenCV's world-to-camera ``rvec``, ``tvec`` (as ``solvePnP`` returns them)."""
        import cv2

        r_cw, _ = cv2.Rodrigues(np.asarray(rvec, dtype=np.float64).reshape(3))
        t = np.asarray(tvec, dtype=np.float64).reshape(3)
        return cls(rotation=r_cw.T, position=-r_cw.T @ t)

    def world_to_camera(self) -> tuple[np.ndarray, np.ndarray]:
        """OpenCV's (rvec, tvec) of this pose."""
        import cv2

        r_cw = self.rotation.T
        rvec, _ = cv2.Rodrigues(r_cw)
        return rvec.reshape(3), -r_cw @ self.position

    def to_camera(self, points: np.ndarray) -> np.ndarray:
        """World points (N, 3) in the camera frame."""
        return (np.asarray(points, dtype=np.float64) - self.position) @ self.rotation


def project(intrinsics: Intrinsics, pose: CameraPose, points: np.ndarray) -> np.ndarray:
    """Pixels (N, 2) of world ``points`` (N, 3), distortion included."""
    import cv2

    rvec, tvec = pose.world_to_camera()
    pixels, _ = cv2.projectPoints(
        np.asarray(points, dtype=np.float64).reshape(-1, 1, 3), rvec, tvec, intrinsics.matrix, intrinsics.dist
    )
    return pixels.reshape(-1, 2)


def intersect_plane(intrinsics: Intrinsics, pose: CameraPose, pixels: np.ndarray, *, z: float) -> np.ndarray | None:
    """World points (N, 3) where the rays through ``pixels`` (N, 2) meet the horizontal plane at height ``z``, or
    None when a ray misses it (parallel, or the plane is behind the camera)."""
    import cv2

    normalised = cv2.undistortPoints(
        np.asarray(pixels, dtype=np.float64).reshape(-1, 1, 2), intrinsics.matrix, intrinsics.dist
    ).reshape(-1, 2)
    rays = np.column_stack([normalised, np.ones(len(normalised))]) @ pose.rotation.T
    if np.any(np.abs(rays[:, 2]) < 1e-9):
        return None
    scale = (z - pose.position[2]) / rays[:, 2]
    if np.any(scale <= 0.0):
        return None
    return pose.position + scale[:, None] * rays
