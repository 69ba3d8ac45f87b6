"""``robofollow calibrate`` on synthetic board images (tracking/synthetic.py) seen from known camera poses: the
frozen YAML holds the pose within a few millimetres and the CameraInfo's intrinsics in OpenCV's convention; bad
input (no tags, too few, a moved tag, an unreadable or missing file, a wrong CameraInfo) is one line, exit 2, and
leaves an existing calibration untouched. The file format's reader refuses what is not one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml
from test_score_bad_input import BILLION_LAUGHS, robofollow, unprivileged

from robofollow_ros.cli import main
from robofollow_ros.errors import CalibrationError
from robofollow_ros.tracking.calibration import pose_difference
from robofollow_ros.tracking.camera import CameraPose, Intrinsics
from robofollow_ros.tracking.camera_info import camera_info_text, load_camera_info
from robofollow_ros.tracking.extrinsic_file import (
    CalibrationQuality,
    CameraCalibration,
    calibration_text,
    load_calibration,
    save_calibration,
)
from robofollow_ros.tracking.markers import load_markers
from robofollow_ros.tracking.synthetic import TagInWorld, cam_high, render

# A second pose, off the cell's axis and tilted sideways, so that a result that merely echoes cam_high fails.
SIDE_CAMERA = CameraPose.look_at(position=(0.25, -0.60, 1.30), target=(0.0, 0.06, 0.74))


def _write_board_images(folder: Path, intrinsics: Intrinsics, camera: CameraPose, *, count: int, ids=None) -> list[str]:
    import cv2

    board = [t for t in load_markers('default').board if ids is None or t.id in ids]
    paths = []
    for index in range(count):
        tags = [TagInWorld(t.id, t.size, t.corners_world()) for t in board]
        image = render(intrinsics, camera, tags, rng=np.random.default_rng(index))
        path = folder / f'board{index}.png'
        cv2.imwrite(str(path), image)
        paths.append(str(path))
    return paths


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize('pose', ['cam_high', 'side'])
def test_the_known_extrinsic_is_recovered_and_frozen(tmp_path: Path, capsys: pytest.CaptureFixture[str], pose: str):
    intrinsics, camera = cam_high(640, 480)
    if pose == 'side':
        camera = SIDE_CAMERA
    images = _write_board_images(tmp_path, intrinsics, camera, count=2)
    info = tmp_path / 'info.yaml'
    info.write_text(camera_info_text(intrinsics, name='cam_high'))
    out = tmp_path / 'cal.yaml'
    assert main(['calibrate', *images, '--camera-info', str(info), '--out', str(out)]) == 0
    printed = capsys.readouterr().out
    assert 'board tags 40 41 42 43 44 (5 of 5)' in printed and f'wrote {out}' in printed
    calibration = load_calibration(out)
    distance, angle = pose_difference(calibration.pose, camera)
    # The calibration test's bound for the board at 640x480 (measured: 0.4 mm, 0.04°).
    assert distance < 0.003 and angle < 0.2
    assert calibration.camera == 'cam_high' and calibration.intrinsics == dataclasses.replace(
        intrinsics, distortion=(0.0,) * 5
    )
    assert calibration.quality.board_tags == (40, 41, 42, 43, 44) and calibration.quality.images == 2
    assert 0.0 < calibration.quality.rms_px < 1.0
    assert f'reprojection RMS {calibration.quality.rms_px:.2f} px' in printed


@pytest.mark.parametrize('given', [[], ['--pixel-convention', 'corner']], ids=['detected', 'given'])
def test_the_simulators_corner_convention_is_converted(tmp_path: Path, capsys: pytest.CaptureFixture[str], given):
    intrinsics, camera = cam_high(640, 480)
    images = _write_board_images(tmp_path, intrinsics, camera, count=1)
    # The simulator's CameraInfo: cx = W/2, cy = H/2 for the same camera, named by its optical frame.
    corner = dataclasses.replace(intrinsics, cx=320.0, cy=240.0)
    info = tmp_path / 'sim.yaml'
    info.write_text(camera_info_text(corner, name='cam_high_optical_frame'))
    out = tmp_path / 'cal.yaml'
    assert main(['calibrate', *images, '--camera-info', str(info), '--out', str(out), *given]) == 0
    assert 'intrinsics: pixel convention corner' in capsys.readouterr().out
    calibration = load_calibration(out)
    assert (calibration.intrinsics.cx, calibration.intrinsics.cy) == (319.5, 239.5)
    assert calibration.camera == 'cam_high'
    assert yaml.safe_load(out.read_text())['pixel_centre'] == 'opencv'
    assert pose_difference(calibration.pose, camera)[0] < 0.003


def test_a_calibrated_lenss_principal_point_is_read_as_opencvs(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    intrinsics, camera = cam_high(640, 480)
    lens = dataclasses.replace(intrinsics, cx=321.7, cy=238.4)
    images = _write_board_images(tmp_path, lens, camera, count=1)
    info = tmp_path / 'lens.yaml'
    info.write_text(camera_info_text(lens, name='cam_high'))
    out = tmp_path / 'cal.yaml'
    assert main(['calibrate', *images, '--camera-info', str(info), '--out', str(out)]) == 0
    assert 'intrinsics: pixel convention centre' in capsys.readouterr().out
    assert (load_calibration(out).intrinsics.cx, load_calibration(out).intrinsics.cy) == (321.7, 238.4)
    assert pose_difference(load_calibration(out).pose, camera)[0] < 0.003


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    return _one_line(captured.err)


def test_bad_input_is_one_line_exit_2_and_keeps_the_old_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    import cv2

    intrinsics, camera = cam_high(640, 480)
    info = tmp_path / 'info.yaml'
    info.write_text(camera_info_text(intrinsics, name='cam_high'))
    out = tmp_path / 'cal.yaml'
    out.write_text('old calibration\n')
    base = ['--camera-info', str(info), '--out', str(out)]
    blank = tmp_path / 'blank.png'
    cv2.imwrite(str(blank), np.full((480, 640), 140, dtype=np.uint8))
    line = _refused(['calibrate', str(blank), *base], capsys)
    assert (
        line == 'robofollow calibrate: error: 0 board tag(s) seen (none); at least 3 are needed (one tag alone flips)'
    )
    two = _write_board_images(tmp_path, intrinsics, camera, count=1, ids={40, 44})
    assert '2 board tag(s) seen (40, 44)' in _refused(['calibrate', *two, *base], capsys)
    garbage = tmp_path / 'garbage.png'
    garbage.write_bytes(b'not a png')
    assert _refused(['calibrate', str(garbage), *base], capsys) == (
        f'robofollow calibrate: error: cannot read image {garbage}: not an image OpenCV can decode'
    )
    missing = tmp_path / 'missing.png'
    assert _refused(['calibrate', str(missing), *base], capsys).endswith(f'cannot read image {missing}: no such file')
    small = tmp_path / 'small.png'
    cv2.imwrite(str(small), np.full((240, 320), 140, dtype=np.uint8))
    assert 'is 320x240 but the camera info is for 640x480' in _refused(['calibrate', str(small), *base], capsys)
    good = _write_board_images(tmp_path, intrinsics, camera, count=1)
    no_info = ['--camera-info', str(tmp_path / 'none.yaml'), '--out', str(out)]
    assert 'cannot read camera info' in _refused(['calibrate', *good, *no_info], capsys)
    assert out.read_text() == 'old calibration\n'


def test_a_broken_png_is_one_line_without_the_decoders_own(tmp_path: Path, capfd: pytest.CaptureFixture[str]):
    import cv2

    info = tmp_path / 'info.yaml'
    info.write_text(camera_info_text(cam_high(640, 480)[0], name='cam_high'))
    broken = tmp_path / 'broken.png'
    cv2.imwrite(str(broken), np.full((480, 640), 140, dtype=np.uint8))
    data = bytearray(broken.read_bytes())
    data[20] ^= 0xFF  # in the IHDR chunk: its CRC no longer matches
    broken.write_bytes(bytes(data))
    assert main(['calibrate', str(broken), '--camera-info', str(info), '--out', str(tmp_path / 'cal.yaml')]) == 2
    captured = capfd.readouterr()  # file descriptor 2 itself, where libpng writes
    assert _one_line(captured.err) == (
        f'robofollow calibrate: error: cannot read image {broken}: not an image OpenCV can decode '
        '(libpng error: IHDR: CRC error)'
    )


def _blank_image(folder: Path) -> Path:
    import cv2

    image = folder / 'board.png'
    cv2.imwrite(str(image), np.full((480, 640), 140, dtype=np.uint8))
    return image


def test_an_unreadable_image_is_named_with_the_reason(tmp_path: Path):
    image = _blank_image(tmp_path)
    info = tmp_path / 'info.yaml'
    info.write_text(camera_info_text(cam_high(640, 480)[0], name='cam_high'))
    image.chmod(0)
    done = robofollow('calibrate', str(image), '--camera-info', str(info), prefix=tuple(unprivileged()))
    assert (done.returncode, done.stdout) == (2, ''), done.stderr
    assert _one_line(done.stderr) == f'robofollow calibrate: error: cannot read image {image}: Permission denied'


def test_a_billion_laughs_camera_info_is_refused_at_once(tmp_path: Path):
    """The file of test_score_bad_input's ``BILLION_LAUGHS`` (2.3 GB, then a MemoryError, before the fix)."""
    image = _blank_image(tmp_path)
    laughs = tmp_path / 'laughs.yaml'
    laughs.write_text(BILLION_LAUGHS + 'image_width: 640\nimage_height: 480\ncamera_matrix: {data: *i}\n')
    done = robofollow('calibrate', str(image), '--camera-info', str(laughs))
    assert (done.returncode, done.stdout) == (2, ''), done.stderr
    assert _one_line(done.stderr).startswith(
        f'robofollow calibrate: error: camera info {laughs}: not valid YAML (aliases expand it past 1000000 values '
    )


def test_a_moved_board_tag_is_refused_by_the_fit_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    intrinsics, camera = cam_high(640, 480)
    images = _write_board_images(tmp_path, intrinsics, camera, count=1)
    info = tmp_path / 'info.yaml'
    info.write_text(camera_info_text(intrinsics, name='cam_high'))
    config = yaml.safe_load(load_markers('default').path.read_text())
    config['board'][0]['x'] += 0.05
    markers = tmp_path / 'moved.yaml'
    markers.write_text(yaml.safe_dump(config))
    out = tmp_path / 'cal.yaml'
    line = _refused(
        ['calibrate', *images, '--camera-info', str(info), '--markers', str(markers), '--out', str(out)], capsys
    )
    assert 'board reprojection error' in line and '> 1.5 px' in line
    assert not out.exists()


def test_the_file_round_trips_and_a_wrong_one_is_refused(tmp_path: Path):
    intrinsics = Intrinsics(
        fx=600.0, fy=601.0, cx=321.2, cy=238.9, width=640, height=480, distortion=(0.1, -0.2, 0.0, 0.0, 0.01)
    )
    calibration = CameraCalibration(
        camera='cam_high',
        intrinsics=intrinsics,
        pose=SIDE_CAMERA,
        quality=CalibrationQuality(0.5, 1.1, (40, 41, 42), 3),
    )
    path = save_calibration(calibration, tmp_path / 'cal.yaml')
    loaded = load_calibration(path)
    assert loaded.intrinsics == intrinsics and loaded.quality == calibration.quality and loaded.camera == 'cam_high'
    assert np.allclose(loaded.pose.rotation, SIDE_CAMERA.rotation, atol=1e-12)
    assert np.allclose(loaded.pose.position, SIDE_CAMERA.position, atol=1e-12)
    good = yaml.safe_load(calibration_text(calibration))

    def refused(change: dict, match: str) -> None:
        data = {**good, **change}
        bad = tmp_path / 'bad.yaml'
        bad.write_text(yaml.safe_dump(data))
        with pytest.raises(CalibrationError, match=match):
            load_calibration(bad)

    refused({'format': 'other'}, 'format: must be robofollow_camera_calibration')
    refused({'version': 2}, 'version: 2 is not supported')
    refused({'pixel_centre': 'corner'}, 'pixel_centre: must be opencv')
    refused({'colour': 1}, 'colour: is not a field here')
    skewed = {'rotation': [[1.0, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], 'translation': [0.0, 0.0, 1.0]}
    refused({'world_to_camera': skewed}, 'world_to_camera.rotation: is not a rotation matrix')
    refused({'intrinsics': {**good['intrinsics'], 'fx': -1.0}}, 'fx and fy must be positive')
    with pytest.raises(CalibrationError, match='cannot read camera calibration'):
        load_calibration(tmp_path / 'absent.yaml')


def test_camera_info_files_are_read_and_checked(tmp_path: Path):
    intrinsics, _ = cam_high(640, 480)
    path = tmp_path / 'info.yaml'
    path.write_text(camera_info_text(intrinsics, name='cam_left_wrist'))
    info = load_camera_info(path)
    assert info.name == 'cam_left_wrist' and info.distortion_model == 'plumb_bob'
    assert info.intrinsics == dataclasses.replace(intrinsics, distortion=(0.0,) * 5)
    data = yaml.safe_load(path.read_text())
    for change, match in (
        ({'image_width': 0}, 'image_width: must be a positive integer'),
        ({'camera_matrix': {'data': [1, 2, 3]}}, r'camera_matrix.data: must be a list of 9 numbers'),
        ({'distortion_model': 'equidistant'}, "distortion_model: 'equidistant' is not supported"),
    ):
        path.write_text(yaml.safe_dump({**data, **change}))
        with pytest.raises(CalibrationError, match=match):
            load_camera_info(path)


def test_images_from_a_moved_camera_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    intrinsics, camera = cam_high(640, 480)
    moved = CameraPose(rotation=camera.rotation, position=camera.position + np.array([0.02, 0.0, 0.0]))
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    images = _write_board_images(tmp_path / 'a', intrinsics, camera, count=1)
    images += _write_board_images(tmp_path / 'b', intrinsics, moved, count=1)
    info = tmp_path / 'info.yaml'
    info.write_text(camera_info_text(intrinsics, name='cam_high'))
    out = tmp_path / 'cal.yaml'
    line = _refused(['calibrate', *images, '--camera-info', str(info), '--out', str(out)], capsys)
    assert 'the images disagree' in line and 'did the camera or the board move' in line
    spread = float(line.split('lie ')[1].split(' mm')[0])
    assert 15.0 < spread < 25.0
    assert not out.exists()
