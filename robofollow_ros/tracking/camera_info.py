"""Camera intrinsics from a CameraInfo YAML file, as ``camera_info_manager`` writes it (and ``camera_calibration``'s
``cameracalibrator`` saves it): ``image_width``, ``image_height``, ``camera_name``, ``camera_matrix.data`` (K, row
major), ``distortion_model`` and ``distortion_coefficients.data``.

Pixel-centre convention: a calibration made with OpenCV (which ROS's ``camera_calibration`` is) writes K in OpenCV's
convention, the centre of pixel (0, 0) at (0, 0): ``centre``. The simulator's CameraInfo writes cx = W / 2, pixel
(0, 0) spanning [0, 1]: ``corner`` (read as cx - 0.5, cy - 0.5). ``auto`` (the default) takes a principal point at
exactly (W / 2, H / 2) for ``corner``, which a calibrated lens never gives to the last digit, and anything else for
``centre``; ``CameraInfoFile.convention`` says which it took.

The camera's name is ``camera_name``, or the camera whose optical frame it is (``topics.camera_of_frame``): a
CameraInfo read from a topic names its frame, ``cam_high_optical_frame``, and the tracker knows the camera as
``cam_high``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from robofollow_ros.errors import CalibrationError
from robofollow_ros.fields import FieldReader
from robofollow_ros.textfiles import read_yaml
from robofollow_ros.topics import camera_of_frame
from robofollow_ros.tracking.camera import Intrinsics

Convention = Literal['centre', 'corner']
ConventionChoice = Literal['centre', 'corner', 'auto']
CONVENTIONS: tuple[ConventionChoice, ...] = ('auto', 'centre', 'corner')
# OpenCV's distortion models; ``equidistant`` (fisheye) needs cv2.fisheye, which the tracker does not use.
DISTORTION_LENGTHS = {'plumb_bob': (5,), 'rational_polynomial': (8,)}


@dataclass(frozen=True)
class CameraInfoFile:
    """What a CameraInfo file says: the camera's name (may be empty), its intrinsics in OpenCV's convention and the
    convention its matrix was read in."""

    name: str
    intrinsics: Intrinsics
    distortion_model: str
    convention: Convention = 'centre'


def load_camera_info(path: str | Path, *, convention: ConventionChoice = 'auto') -> CameraInfoFile:
    """Read a CameraInfo YAML file.

    Raises:
        CalibrationError: the file is missing, unreadable or not YAML, a field is missing or wrong, or the
            distortion model is not one OpenCV's pinhole model takes; one line naming the file and the field.
    """
    data = read_yaml(path, what='camera info', error=CalibrationError)
    return parse_camera_info(data, source=str(path), convention=convention)


def parse_camera_info(data: object, *, source: str, convention: ConventionChoice = 'auto') -> CameraInfoFile:
    """Check an already parsed CameraInfo document (see ``load_camera_info``); ``source`` names it in errors."""
    if convention not in CONVENTIONS:
        raise CalibrationError(f'pixel convention must be one of {", ".join(CONVENTIONS)}, got {convention!r}')

    reader = FieldReader('camera info', source, error=CalibrationError)
    if not isinstance(data, dict):
        reader.fail('(top)', 'must be a mapping (camera_info_manager YAML)')
    width, height = (
        reader.count(data.get('image_width'), 'image_width'),
        reader.count(data.get('image_height'), 'image_height'),
    )
    k = _matrix_data(reader, data, 'camera_matrix', (9,)).reshape(3, 3)
    if k[0, 0] <= 0.0 or k[1, 1] <= 0.0 or k[0, 1] != 0.0 or list(k[2]) != [0.0, 0.0, 1.0]:
        reader.fail('camera_matrix.data', 'is not a pinhole matrix [fx, 0, cx, 0, fy, cy, 0, 0, 1] with fx, fy > 0')
    model = data.get('distortion_model', 'plumb_bob')
    if model not in DISTORTION_LENGTHS:
        reader.fail('distortion_model', f'{model!r} is not supported (use {" or ".join(DISTORTION_LENGTHS)})')
    coefficients = 'distortion_coefficients' in data
    distortion = (
        tuple(float(v) for v in _matrix_data(reader, data, 'distortion_coefficients', DISTORTION_LENGTHS[model]))
        if coefficients
        else ()
    )
    name = data.get('camera_name', '')
    if not isinstance(name, str):
        reader.fail('camera_name', f'must be text, got {name!r}')
    taken = detected_convention(k, width=width, height=height) if convention == 'auto' else convention
    if taken == 'corner':
        intrinsics = Intrinsics.from_corner_convention(k, width=width, height=height, distortion=distortion)
    else:
        intrinsics = Intrinsics(
            fx=float(k[0, 0]),
            fy=float(k[1, 1]),
            cx=float(k[0, 2]),
            cy=float(k[1, 2]),
            width=width,
            height=height,
            distortion=distortion,
        )
    return CameraInfoFile(
        name=camera_of_frame(name) if name else '',
        intrinsics=intrinsics,
        distortion_model=str(model),
        convention=taken,
    )


def _matrix_data(reader: FieldReader, data: dict, field: str, sizes: tuple[int, ...]) -> np.ndarray:
    """The numbers under ``field``'s ``data`` key (camera_info_manager's matrices)."""
    block = data.get(field)
    return reader.vector(block.get('data') if isinstance(block, dict) else None, f'{field}.data', sizes=sizes)


def detected_convention(k: np.ndarray, *, width: int, height: int) -> Convention:
    """``corner`` for a principal point at exactly (W / 2, H / 2), else ``centre`` (module docstring)."""
    return 'corner' if (float(k[0, 2]), float(k[1, 2])) == (width / 2.0, height / 2.0) else 'centre'


def camera_info_text(intrinsics: Intrinsics, *, name: str) -> str:
    """A CameraInfo YAML file (camera_info_manager's layout) of distortion-free or plumb_bob ``intrinsics``, in
    OpenCV's convention (for tests and for writing the simulator's cameras out)."""
    distortion = list(intrinsics.distortion) or [0.0] * 5
    if len(distortion) not in (5, 8):
        raise CalibrationError(f'{len(distortion)} distortion coefficients: CameraInfo files take 5 or 8')
    k = intrinsics.matrix.reshape(-1).tolist()
    p = [intrinsics.fx, 0.0, intrinsics.cx, 0.0, 0.0, intrinsics.fy, intrinsics.cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    lines = [
        f'image_width: {intrinsics.width}',
        f'image_height: {intrinsics.height}',
        f'camera_name: {name}',
        'camera_matrix:',
        '  rows: 3',
        '  cols: 3',
        f'  data: [{", ".join(repr(float(v)) for v in k)}]',
        f'distortion_model: {"plumb_bob" if len(distortion) == 5 else "rational_polynomial"}',
        'distortion_coefficients:',
        '  rows: 1',
        f'  cols: {len(distortion)}',
        f'  data: [{", ".join(repr(float(v)) for v in distortion)}]',
        'rectification_matrix:',
        '  rows: 3',
        '  cols: 3',
        '  data: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]',
        'projection_matrix:',
        '  rows: 3',
        '  cols: 4',
        f'  data: [{", ".join(repr(float(v)) for v in p)}]',
    ]
    return '\n'.join(lines) + '\n'
