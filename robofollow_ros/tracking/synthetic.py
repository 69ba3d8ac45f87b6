"""Synthetic camera images of ArUco tags at known poses, for tests and ``bench/bench_tracker.py``.

Each tag (with its white quiet zone) is warped into the image by the homography of its plane under a pinhole
camera, rendered at ``supersample`` times the resolution and averaged down (area), so edges are anti-aliased as a
real sensor's are; then grey noise is added. No MuJoCo: the geometry is exactly the one the tracker assumes, so the
measured errors are the detector's and the estimator's alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros.benchmark.types import TABLE_Z
from robofollow_ros.tracking.camera import CameraPose, Intrinsics
from robofollow_ros.tracking.markers import MODULES, QUIET_MODULES, tag_image

# cam_high of the simulated cell (urdf/aloha_cell.urdf: origin 0 -0.36 1.32, pitched 58.2 degrees down toward +y,
# which looks at the table's origin) and its vertical field of view.
CAM_HIGH_POSITION = (0.0, -0.36, 1.32)
CAM_HIGH_TARGET = (0.0, 0.0, TABLE_Z)
CAM_HIGH_FOVY_DEG = 52.0
PIXELS_PER_MODULE = 32


@dataclass(frozen=True)
class TagInWorld:
    """A tag to draw: its id, its black square's side and its corners (4, 3) in the world, OpenCV's order."""

    id: int
    size: float
    corners: np.ndarray


def cam_high(width: int, height: int) -> tuple[Intrinsics, CameraPose]:
    """The simulated cell's overhead camera at ``width`` x ``height``."""
    return (
        Intrinsics.from_fovy(fovy_deg=CAM_HIGH_FOVY_DEG, width=width, height=height),
        CameraPose.look_at(position=CAM_HIGH_POSITION, target=CAM_HIGH_TARGET),
    )


def flat_tag(tag_id: int, *, size: float, x: float, y: float, z: float, yaw: float) -> TagInWorld:
    """A horizontal tag centred at (x, y, z), turned by ``yaw`` about the vertical."""
    c, s = math.cos(yaw), math.sin(yaw)
    h = size / 2.0
    local = np.array([[-h, h], [h, h], [h, -h], [-h, -h]])
    xy = local @ np.array([[c, s], [-s, c]]) + [x, y]
    return TagInWorld(tag_id, size, np.column_stack([xy, np.full(4, z)]))


def render(
    intrinsics: Intrinsics,
    camera: CameraPose,
    tags: Sequence[TagInWorld],
    *,
    rng: np.random.Generator,
    background: int = 140,
    noise: float = 2.0,
    supersample: int = 4,
) -> np.ndarray:
    """A grey image (uint8, H x W) of ``tags`` seen by the camera (distortion ignored)."""
    import cv2

    f = supersample
    width, height = intrinsics.width * f, intrinsics.height * f
    # Pixel centres: high-resolution pixel j covers low-resolution coordinate (j + 0.5) / f - 0.5.
    k_hi = np.array(
        [
            [intrinsics.fx * f, 0.0, (intrinsics.cx + 0.5) * f - 0.5],
            [0.0, intrinsics.fy * f, (intrinsics.cy + 0.5) * f - 0.5],
            [0.0, 0.0, 1.0],
        ]
    )
    r_cw = camera.rotation.T
    t_cw = -r_cw @ camera.position
    canvas: np.ndarray = np.full((height, width), float(background), dtype=np.float32)
    for tag in tags:
        image = tag_image(tag.id, pixels_per_module=PIXELS_PER_MODULE)
        n = image.shape[0]
        printed = tag.size * (MODULES + 2 * QUIET_MODULES) / MODULES
        corners = np.asarray(tag.corners, dtype=np.float64)
        origin = corners.mean(axis=0)
        ex = (corners[1] - corners[0]) / tag.size
        ey = (corners[0] - corners[3]) / tag.size
        step = printed / n
        # Tag-image pixel (i, j) (centre convention) -> tag-plane (x, y), image y running down the tag's -y.
        to_plane = np.array([[step, 0.0, 0.5 * step - printed / 2], [0.0, -step, printed / 2 - 0.5 * step], [0, 0, 1]])
        plane_to_image = k_hi @ np.column_stack([r_cw @ ex, r_cw @ ey, r_cw @ origin + t_cw])
        homography = plane_to_image @ to_plane
        warped = cv2.warpPerspective(image.astype(np.float32), homography, (width, height), flags=cv2.INTER_LINEAR)
        mask = cv2.warpPerspective(
            np.ones_like(image, dtype=np.float32), homography, (width, height), flags=cv2.INTER_LINEAR
        )
        canvas = canvas * (1.0 - mask) + warped
    small = cv2.resize(canvas, (intrinsics.width, intrinsics.height), interpolation=cv2.INTER_AREA)
    small = small + rng.normal(0.0, noise, size=small.shape)
    return np.asarray(np.clip(np.rint(small), 0, 255), dtype=np.uint8)


@dataclass(frozen=True)
class SweepResult:
    """What a sweep of random resting poses measured: per frame whether the tag was detected, the refusal reasons,
    the xy (m) and yaw (rad) errors of the poses returned, and the seconds per frame of detection + estimation."""

    frames: int
    detected: int
    refusals: tuple[str, ...]
    xy_errors: np.ndarray
    yaw_errors: np.ndarray
    seconds: np.ndarray


def sweep(
    *,
    width: int,
    height: int,
    size: float,
    tag_height: float,
    count: int,
    seed: int,
    x_range: tuple[float, float] = (-0.25, 0.25),
    y_range: tuple[float, float] = (-0.05, 0.30),
) -> SweepResult:
    """Random resting poses (uniform xy on the table in view of cam_high, uniform yaw) of one tag of side ``size``
    at ``tag_height`` above the table, each rendered, detected and estimated with the plane constraint and the
    default gates (no jump gate: the poses are independent)."""
    import time

    from robofollow_ros.tracking.markers import ObjectMarker
    from robofollow_ros.tracking.pose import Gates, ObjectPose, detect, estimate_pose, make_detector

    rng = np.random.default_rng(seed)
    intrinsics, camera = cam_high(width, height)
    detector = make_detector()
    marker = ObjectMarker(scene=0, name='tag', id=0, size=size, mount='top', height=tag_height)
    gates = Gates(max_jump=None)
    plane = TABLE_Z + tag_height
    detected = 0
    refusals: list[str] = []
    xy: list[float] = []
    yaw_errors: list[float] = []
    seconds: list[float] = []
    for _ in range(count):
        x, y = rng.uniform(*x_range), rng.uniform(*y_range)
        yaw = rng.uniform(-math.pi, math.pi)
        image = render(intrinsics, camera, [flat_tag(0, size=size, x=x, y=y, z=plane, yaw=yaw)], rng=rng)
        start = time.perf_counter()
        detections = detect(detector, image)
        result = None
        if 0 in detections:
            result = estimate_pose(detections[0], marker, intrinsics, camera, plane_z=plane, gates=gates)
        seconds.append(time.perf_counter() - start)
        if result is None:
            continue
        detected += 1
        if isinstance(result, ObjectPose):
            xy.append(math.hypot(result.x - x, result.y - y))
            yaw_errors.append(abs(math.atan2(math.sin(result.yaw - yaw), math.cos(result.yaw - yaw))))
        else:
            refusals.append(result.reason)
    return SweepResult(
        frames=count,
        detected=detected,
        refusals=tuple(refusals),
        xy_errors=np.asarray(xy),
        yaw_errors=np.asarray(yaw_errors),
        seconds=np.asarray(seconds),
    )
