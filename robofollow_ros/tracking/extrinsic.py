"""The frozen camera extrinsic file (YAML) the ``aruco_tracker`` node reads; ``robofollow calibrate`` writes it.

Fields (docs/real-cell.md, "The extrinsic file"):

    camera: cam_high            # the camera's name (its topics /<camera>/image_raw, /<camera>/camera_info)
    width: 640                  # the image size the calibration was made at
    height: 480
    pixel_centre: corner        # how the camera's CameraInfo writes pixel coordinates: corner = pixel (0, 0) spans
                                # [0, 1] (a centred principal point is W / 2: the simulator's CameraInfo);
                                # centre = OpenCV's, pixel (0, 0) is centred on 0 (a centred one is (W - 1) / 2)
    rotation: [[r00, r01, r02], [r10, r11, r12], [r20, r21, r22]]   # world -> camera (OpenCV camera axes: x right,
                                # y down, z along the view), row-major: x_camera = rotation @ x_world + translation
    translation: [tx, ty, tz]   # metres

Optional: ``rms_px`` (the calibration's reprojection error), ``source`` (free text: how it was made).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from robofollow_ros.errors import CalibrationError
from robofollow_ros.textfiles import read_yaml
from robofollow_ros.tracking.camera import CameraPose, Intrinsics

PixelCentre = Literal['corner', 'centre']
PIXEL_CENTRES: tuple[PixelCentre, ...] = ('corner', 'centre')


@dataclass(frozen=True)
class FrozenExtrinsic:
    """A camera's frozen pose in the world, the image size it holds for and the CameraInfo pixel convention."""

    camera: str
    width: int
    height: int
    pixel_centre: PixelCentre
    pose: CameraPose


def intrinsics_from_camera_info(
    k: np.ndarray | list[float], *, width: int, height: int, distortion: tuple[float, ...], pixel_centre: PixelCentre
) -> Intrinsics:
    """Tracker intrinsics (OpenCV's pixel-centre convention) from a CameraInfo's K (9 numbers, row-major) written
    in ``pixel_centre``'s convention."""
    matrix = np.asarray(k, dtype=np.float64).reshape(3, 3)
    if pixel_centre == 'corner':
        return Intrinsics.from_corner_convention(matrix, width=width, height=height, distortion=distortion)
    return Intrinsics(
        fx=float(matrix[0, 0]),
        fy=float(matrix[1, 1]),
        cx=float(matrix[0, 2]),
        cy=float(matrix[1, 2]),
        width=width,
        height=height,
        distortion=distortion,
    )


def read_extrinsic(path: str | Path) -> FrozenExtrinsic:
    """Read and check a frozen extrinsic file.

    Raises:
        CalibrationError: unreadable, not YAML, a field missing or malformed, or a rotation that is not one; one
            line naming the file and the field.
    """
    path = Path(path)
    data = read_yaml(path, what='camera extrinsic', error=CalibrationError)

    def fail(field: str, message: str) -> CalibrationError:
        return CalibrationError(f'camera extrinsic {path}: {field}: {message}')

    if not isinstance(data, dict):
        raise fail('(top)', f'must be a mapping, got {type(data).__name__}')
    for key in ('camera', 'width', 'height', 'pixel_centre', 'rotation', 'translation'):
        if key not in data:
            raise fail(key, 'is missing')
    if not isinstance(data['camera'], str) or not data['camera']:
        raise fail('camera', f'must be a camera name, got {data["camera"]!r}')
    size = {}
    for key in ('width', 'height'):
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise fail(key, f'must be a positive integer, got {value!r}')
        size[key] = value
    if data['pixel_centre'] not in PIXEL_CENTRES:
        raise fail('pixel_centre', f'must be one of {", ".join(PIXEL_CENTRES)}, got {data["pixel_centre"]!r}')
    try:
        rotation = np.asarray(data['rotation'], dtype=np.float64)
        translation = np.asarray(data['translation'], dtype=np.float64)
    except (TypeError, ValueError):
        raise fail('rotation/translation', 'must be numbers') from None
    if rotation.shape != (3, 3) or not np.all(np.isfinite(rotation)):
        raise fail('rotation', f'must be a 3x3 list of numbers, got shape {rotation.shape}')
    if translation.shape != (3,) or not np.all(np.isfinite(translation)):
        raise fail('translation', f'must be three numbers, got shape {translation.shape}')
    if not np.allclose(rotation @ rotation.T, np.eye(3), atol=1e-6) or not math.isclose(
        float(np.linalg.det(rotation)), 1.0, abs_tol=1e-6
    ):
        raise fail('rotation', 'is not a rotation matrix (orthonormal, determinant 1)')
    pixel_centre: PixelCentre = 'corner' if data['pixel_centre'] == 'corner' else 'centre'
    return FrozenExtrinsic(
        camera=data['camera'],
        width=size['width'],
        height=size['height'],
        pixel_centre=pixel_centre,
        pose=CameraPose(rotation=rotation.T, position=-rotation.T @ translation),
    )


def extrinsic_text(extrinsic: FrozenExtrinsic, *, rms_px: float | None = None, source: str = '') -> str:
    """The YAML text of a frozen extrinsic (what ``read_extrinsic`` reads back)."""
    rotation = extrinsic.pose.rotation.T
    translation = -rotation @ extrinsic.pose.position
    rows = ', '.join('[' + ', '.join(f'{v:.12g}' for v in row) + ']' for row in rotation)
    lines = [
        f'camera: {extrinsic.camera}',
        f'width: {extrinsic.width}',
        f'height: {extrinsic.height}',
        f'pixel_centre: {extrinsic.pixel_centre}',
        f'rotation: [{rows}]',
        f'translation: [{", ".join(f"{v:.12g}" for v in translation)}]',
    ]
    if rms_px is not None:
        lines.append(f'rms_px: {rms_px:.4g}')
    if source:
        lines.append(f'source: {source!r}')
    return '\n'.join(lines) + '\n'
