"""The frozen camera calibration (``robofollow calibrate`` writes it, the tracker reads it): one YAML format, one
reader and one writer (docs/real-cell.md, "Calibrating the camera").

Format (version 1)::

    format: robofollow_camera_calibration
    version: 1
    camera: cam_high                 # the camera's name (its topics /<camera>/image_raw, /<camera>/camera_info)
    width: 640                       # the image size the intrinsics hold for
    height: 480
    pixel_centre: opencv             # cx, cy in OpenCV's convention: the centre of pixel (0, 0) is (0, 0)
    intrinsics: {fx: .., fy: .., cx: .., cy: .., distortion: [k1, k2, p1, p2, k3]}   # [] when none
    world_to_camera:                 # x_camera = rotation @ x_world + translation (OpenCV's rvec/tvec as a matrix)
      rotation: [[..], [..], [..]]   # 3x3, rows
      translation: [tx, ty, tz]      # metres
    quality: {rms_px: .., max_px: .., board_tags: [40, ..], images: 1}

The camera's optical centre in the world is -rotationᵀ @ translation (written as a comment). A CameraInfo with the
simulator's cx = W / 2 was converted before writing (``tracking.camera_info``): the file is always OpenCV's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robofollow_ros.errors import CalibrationError
from robofollow_ros.fields import FieldReader
from robofollow_ros.textfiles import read_yaml, write_atomically
from robofollow_ros.topics import camera_of_frame
from robofollow_ros.tracking.camera import CameraPose, Intrinsics

FORMAT = 'robofollow_camera_calibration'
VERSION = 1
PIXEL_CENTRE = 'opencv'
ORTHONORMAL_TOLERANCE = 1e-6
FIELDS = ('format', 'version', 'camera', 'width', 'height', 'pixel_centre', 'intrinsics', 'world_to_camera', 'quality')


@dataclass(frozen=True)
class CalibrationQuality:
    """How well the board fitted: RMS and worst corner reprojection (px), the board tags used, the images."""

    rms_px: float
    max_px: float
    board_tags: tuple[int, ...]
    images: int


@dataclass(frozen=True)
class CameraCalibration:
    """A camera's intrinsics and pose in the world, as frozen by ``robofollow calibrate``."""

    camera: str
    intrinsics: Intrinsics
    pose: CameraPose
    quality: CalibrationQuality


def calibration_for(path: str | Path, camera: str) -> CameraCalibration:
    """The calibration file at ``path``, checked to be of ``camera`` (a file naming the camera's optical frame,
    ``<camera>_optical_frame``, is of that camera).

    Raises:
        CalibrationError: as ``load_calibration``, or the file is of another camera.
    """
    calibration = load_calibration(path)
    if camera_of_frame(calibration.camera) != camera:
        raise CalibrationError(f'calibration {path} is for camera {calibration.camera!r}, not {camera!r}')
    return calibration


def calibration_text(calibration: CameraCalibration) -> str:
    """The YAML text of ``calibration`` (numbers written with full precision)."""
    k = calibration.intrinsics
    rvec, tvec = calibration.pose.world_to_camera()
    rotation = calibration.pose.rotation.T
    position = calibration.pose.position
    quality = calibration.quality

    def numbers(values: object) -> str:
        return '[' + ', '.join(repr(float(v)) for v in np.asarray(values).reshape(-1)) + ']'

    lines = [
        '# Camera calibration written by `robofollow calibrate` (docs/real-cell.md, "Calibrating the camera").',
        f'# Optical centre in the world (m): {numbers(np.round(position, 4))}; rvec {numbers(np.round(rvec, 6))}.',
        f'format: {FORMAT}',
        f'version: {VERSION}',
        f'camera: {json.dumps(calibration.camera)}',
        f'width: {k.width}',
        f'height: {k.height}',
        f'pixel_centre: {PIXEL_CENTRE}',
        'intrinsics:',
        f'  fx: {k.fx!r}',
        f'  fy: {k.fy!r}',
        f'  cx: {k.cx!r}',
        f'  cy: {k.cy!r}',
        f'  distortion: {numbers(k.distortion)}',
        'world_to_camera:',
        '  rotation:',
        *(f'    - {numbers(row)}' for row in rotation),
        f'  translation: {numbers(tvec)}',
        'quality:',
        f'  rms_px: {quality.rms_px!r}',
        f'  max_px: {quality.max_px!r}',
        f'  board_tags: [{", ".join(str(t) for t in quality.board_tags)}]',
        f'  images: {quality.images}',
    ]
    return '\n'.join(lines) + '\n'


def save_calibration(calibration: CameraCalibration, path: str | Path) -> Path:
    """Write ``calibration`` to ``path`` atomically (a kill leaves the old file or the new one)."""
    out = Path(path)
    if out.parent != Path('') and not out.parent.is_dir():
        raise CalibrationError(f'cannot write calibration {out}: folder {out.parent} does not exist')
    try:
        return write_atomically(out, calibration_text(calibration))
    except OSError as failure:
        raise CalibrationError(f'cannot write calibration {out}: {failure.strerror or failure}') from failure


def _intrinsics(reader: FieldReader, data: object, width: int, height: int) -> Intrinsics:
    block = reader.mapping(data, 'intrinsics', required=('fx', 'fy', 'cx', 'cy', 'distortion'))
    focal = {key: reader.number(block[key], f'intrinsics.{key}') for key in ('fx', 'fy', 'cx', 'cy')}
    if focal['fx'] <= 0.0 or focal['fy'] <= 0.0:
        reader.fail('intrinsics', f'fx and fy must be positive, got {focal["fx"]}, {focal["fy"]}')
    distortion = reader.vector(block['distortion'], 'intrinsics.distortion', sizes=(0, 4, 5, 8, 12, 14))
    return Intrinsics(**focal, width=width, height=height, distortion=tuple(float(v) for v in distortion))


def _world_to_camera(reader: FieldReader, data: object) -> tuple[np.ndarray, np.ndarray]:
    block = reader.mapping(data, 'world_to_camera', required=('rotation', 'translation'))
    rows = block['rotation']
    if not isinstance(rows, list) or len(rows) != 3:
        reader.fail('world_to_camera.rotation', f'must be three rows of three numbers, got {rows!r}')
    r_cw = np.array([reader.vector(row, f'world_to_camera.rotation[{i}]', sizes=(3,)) for i, row in enumerate(rows)])
    if np.abs(r_cw @ r_cw.T - np.eye(3)).max() > ORTHONORMAL_TOLERANCE or np.linalg.det(r_cw) < 0.0:
        reader.fail('world_to_camera.rotation', 'is not a rotation matrix (orthonormal, determinant +1)')
    return r_cw, reader.vector(block['translation'], 'world_to_camera.translation', sizes=(3,))


def _quality(reader: FieldReader, data: object) -> CalibrationQuality:
    block = reader.mapping(data, 'quality', required=('rms_px', 'max_px', 'board_tags', 'images'))
    tags = block['board_tags']
    if not isinstance(tags, list) or not all(isinstance(tag, int) and not isinstance(tag, bool) for tag in tags):
        reader.fail('quality.board_tags', f'must be a list of tag ids, got {tags!r}')
    return CalibrationQuality(
        rms_px=reader.number(block['rms_px'], 'quality.rms_px'),
        max_px=reader.number(block['max_px'], 'quality.max_px'),
        board_tags=tuple(tags),
        images=reader.count(block['images'], 'quality.images'),
    )


def load_calibration(path: str | Path) -> CameraCalibration:
    """Read and check a calibration file.

    Raises:
        CalibrationError: missing or unreadable file, not YAML, another format or version, a field missing,
            unknown or wrong (a rotation that is not a rotation); one line naming the file and the field.
    """
    data = read_yaml(path, what='camera calibration', error=CalibrationError)
    reader = FieldReader('camera calibration', path, error=CalibrationError)
    if not isinstance(data, dict):
        reader.fail('(top)', f'must be a mapping with {", ".join(FIELDS)}')
    reader.mapping(data, '', required=FIELDS)
    if data['format'] != FORMAT:
        reader.fail('format', f'must be {FORMAT}, got {data["format"]!r}')
    if data['version'] != VERSION:
        reader.fail('version', f'{data["version"]!r} is not supported (this reader knows version {VERSION})')
    if data['pixel_centre'] != PIXEL_CENTRE:
        reader.fail(
            'pixel_centre', f"must be {PIXEL_CENTRE} (cx, cy in OpenCV's convention), got {data['pixel_centre']!r}"
        )
    camera = data['camera']
    if not isinstance(camera, str) or not camera:
        reader.fail('camera', f"must be the camera's name, got {camera!r}")
    intrinsics = _intrinsics(
        reader, data['intrinsics'], reader.count(data['width'], 'width'), reader.count(data['height'], 'height')
    )
    r_cw, t = _world_to_camera(reader, data['world_to_camera'])
    quality = _quality(reader, data['quality'])
    return CameraCalibration(
        camera=camera,
        intrinsics=intrinsics,
        pose=CameraPose(rotation=r_cw.T, position=-r_cw.T @ t),
        quality=quality,
    )
