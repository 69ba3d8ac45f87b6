"""The frozen extrinsic file (tracking/extrinsic.py): what is written reads back, CameraInfo's pixel convention is
applied, and a wrong file is refused in one line naming the field."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robofollow_ros.errors import CalibrationError
from robofollow_ros.tracking.camera import CameraPose
from robofollow_ros.tracking.extrinsic import (
    FrozenExtrinsic,
    extrinsic_text,
    intrinsics_from_camera_info,
    read_extrinsic,
)

POSE = CameraPose.look_at(position=(0.0, -0.36, 1.32), target=(0.0, 0.0, 0.74))


def test_written_extrinsic_reads_back(tmp_path: Path) -> None:
    path = tmp_path / 'cam_high.yaml'
    path.write_text(extrinsic_text(FrozenExtrinsic('cam_high', 640, 480, 'corner', POSE), rms_px=0.41), 'utf-8')
    read = read_extrinsic(path)
    assert (read.camera, read.width, read.height, read.pixel_centre) == ('cam_high', 640, 480, 'corner')
    np.testing.assert_allclose(read.pose.rotation, POSE.rotation, atol=1e-11)
    np.testing.assert_allclose(read.pose.position, POSE.position, atol=1e-11)


def test_camera_info_pixel_convention() -> None:
    k = [500.0, 0.0, 320.0, 0.0, 500.0, 240.0, 0.0, 0.0, 1.0]
    corner = intrinsics_from_camera_info(k, width=640, height=480, distortion=(), pixel_centre='corner')
    centre = intrinsics_from_camera_info(k, width=640, height=480, distortion=(), pixel_centre='centre')
    assert (corner.cx, corner.cy) == (319.5, 239.5)
    assert (centre.cx, centre.cy) == (320.0, 240.0)


@pytest.mark.parametrize(
    ('text', 'field'),
    [
        (
            'camera: cam_high\nwidth: 640\nheight: 480\npixel_centre: corner\nrotation: [[1,0,0],[0,1,0],[0,0,1]]\n',
            'translation: is missing',
        ),
        (
            'camera: cam_high\nwidth: 640\nheight: 480\npixel_centre: middle\nrotation: [[1,0,0],[0,1,0],[0,0,1]]\n'
            'translation: [0, 0, 1]\n',
            'pixel_centre: must be one of corner, centre',
        ),
        (
            'camera: cam_high\nwidth: 640\nheight: 480\npixel_centre: corner\nrotation: [[2,0,0],[0,1,0],[0,0,1]]\n'
            'translation: [0, 0, 1]\n',
            'rotation: is not a rotation matrix',
        ),
        (
            'camera: cam_high\nwidth: -1\nheight: 480\npixel_centre: corner\nrotation: [[1,0,0],[0,1,0],[0,0,1]]\n'
            'translation: [0, 0, 1]\n',
            'width: must be a positive integer',
        ),
    ],
)
def test_a_wrong_file_is_refused_naming_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / 'bad.yaml'
    path.write_text(text, 'utf-8')
    with pytest.raises(CalibrationError) as caught:
        read_extrinsic(path)
    assert f'camera extrinsic {path}: {field}' in str(caught.value) and '\n' not in str(caught.value)
