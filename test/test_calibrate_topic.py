"""``robofollow calibrate --camera-info-topic``: the intrinsics from one CameraInfo of a live topic (read by
``ros.ask_once`` in its own process over real DDS, private domain), and one line with exit 2 when none
comes. ``--from-topic``: the board images too, from a camera publishing as the simulator's does (rgb8, its
CameraInfo naming the optical frame, cx = W/2), with nothing else given."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import rclpy
from graph_helpers import PROFILE, ros_domain, spinning
from rclpy.context import Context
from sensor_msgs.msg import CameraInfo, Image

from robofollow_ros.cli import main
from robofollow_ros.ros import qos
from robofollow_ros.tracking.calibration import pose_difference
from robofollow_ros.tracking.camera_info import camera_info_text
from robofollow_ros.tracking.extrinsic_file import calibration_text, load_calibration
from robofollow_ros.tracking.markers import load_markers
from robofollow_ros.tracking.synthetic import TagInWorld, cam_high, render

pytestmark = pytest.mark.ros
NOMINAL_DOMAIN = 27
"""Not used by another graph test (they take 10-59 through graph_helpers)."""
TOPIC = '/cam_high/camera_info'


@pytest.fixture
def domain(monkeypatch: pytest.MonkeyPatch) -> int:
    """The test's ROS domain, also for the reader process the command starts."""
    number = ros_domain(NOMINAL_DOMAIN)
    monkeypatch.setenv('ROS_DOMAIN_ID', str(number))
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    monkeypatch.setenv('FASTDDS_DEFAULT_PROFILES_FILE', str(PROFILE))
    monkeypatch.delenv('FASTRTPS_DEFAULT_PROFILES_FILE', raising=False)
    return number


def simulator_info_message(*, frame_id: str) -> CameraInfo:
    """cam_high's CameraInfo as the simulator states it: cx = W/2, cy = H/2."""
    intrinsics, _ = cam_high(640, 480)
    message = CameraInfo(width=640, height=480, distortion_model='plumb_bob', d=[0.0] * 5)
    message.k = [intrinsics.fx, 0.0, 320.0, 0.0, intrinsics.fy, 240.0, 0.0, 0.0, 1.0]
    message.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    message.p = [intrinsics.fx, 0.0, 320.0, 0.0, 0.0, intrinsics.fy, 240.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    message.header.frame_id = frame_id
    return message


@pytest.fixture
def simulator_camera_info(domain: int) -> Iterator[None]:
    """cam_high's CameraInfo as the simulator states it (cx = W/2), published at 20 Hz best effort."""
    message = simulator_info_message(frame_id='cam_high')
    context = Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node('camera_info_publisher', context=context)
    publisher = node.create_publisher(CameraInfo, TOPIC, qos.SENSOR)
    node.create_timer(0.05, lambda: publisher.publish(message))
    with spinning(context, node):
        yield


@pytest.fixture
def simulator_camera(domain: int) -> Iterator[None]:
    """cam_high's board image (rgb8) and CameraInfo as the simulator publishes them: frame id
    ``cam_high_optical_frame``, cx = W/2; 10 Hz, best effort."""
    from robofollow_ros.ros.messages import image_message
    from robofollow_ros.topics import camera_frame

    intrinsics, camera = cam_high(640, 480)
    board = load_markers('default').board
    grey = render(
        intrinsics, camera, [TagInWorld(t.id, t.size, t.corners_world()) for t in board], rng=np.random.default_rng(1)
    )
    image = image_message(np.repeat(grey[:, :, None], 3, axis=2), stamp_ns=0, frame_id=camera_frame('cam_high'))
    info = simulator_info_message(frame_id=camera_frame('cam_high'))
    context = Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node('camera_publisher', context=context)
    images = node.create_publisher(Image, '/cam_high/image_raw', qos.SENSOR)
    infos = node.create_publisher(CameraInfo, TOPIC, qos.SENSOR)
    node.create_timer(0.1, lambda: (images.publish(image), infos.publish(info)))
    with spinning(context, node):
        yield


def test_a_calibration_from_the_live_camera_alone_is_the_one_the_tracker_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], simulator_camera: None
) -> None:
    intrinsics, camera = cam_high(640, 480)
    out = tmp_path / 'cal.yaml'
    argv = ['calibrate', '--from-topic', '/cam_high/image_raw', '--count', '2', '--every', '0.2', '--out', str(out)]
    assert main([*argv, '--timeout', '60']) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert 'pixel convention corner' in printed and 'cx 319.5, cy 239.5' in printed
    calibration = load_calibration(out)
    assert calibration.camera == 'cam_high' and calibration.quality.images == 2
    assert (calibration.intrinsics.cx, calibration.intrinsics.cy) == (319.5, 239.5)
    assert pose_difference(calibration.pose, camera)[0] < 0.003
    saved = sorted((tmp_path / 'cal_board_images').glob('*.png'))
    assert [path.name for path in saved] == ['board_0.png', 'board_1.png']
    assert all(str(path) in printed for path in saved)
    # made again from the saved images, offline, it is the same calibration
    again = tmp_path / 'again.yaml'
    info = tmp_path / 'info.yaml'
    info.write_text(
        camera_info_text(dataclasses.replace(intrinsics, cx=320.0, cy=240.0), name='cam_high_optical_frame')
    )
    assert main(['calibrate', *map(str, saved), '--camera-info', str(info), '--out', str(again)]) == 0
    assert calibration_text(load_calibration(again)) == calibration_text(calibration)


def test_no_images_on_the_topic_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], simulator_camera_info: None
) -> None:
    argv = ['calibrate', '--from-topic', '/nobody/image_raw', '--camera-info-topic', TOPIC, '--count', '1']
    assert main([*argv, '--timeout', '2', '--out', str(tmp_path / 'cal.yaml')]) == 2
    error = capsys.readouterr().err.strip()
    assert (
        error
        == 'robofollow calibrate: error: not enough images on /nobody/image_raw within 2 s (is the camera publishing?)'
    )
    assert not (tmp_path / 'cal.yaml').exists()


def test_the_intrinsics_come_from_the_live_topic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], simulator_camera_info: None
) -> None:
    import cv2

    intrinsics, camera = cam_high(640, 480)
    board = load_markers('default').board
    image = render(
        intrinsics, camera, [TagInWorld(t.id, t.size, t.corners_world()) for t in board], rng=np.random.default_rng(0)
    )
    cv2.imwrite(str(tmp_path / 'board.png'), image)
    out = tmp_path / 'cal.yaml'
    argv = ['calibrate', str(tmp_path / 'board.png'), '--camera-info-topic', TOPIC, '--pixel-convention', 'corner']
    assert main([*argv, '--out', str(out), '--timeout', '60']) == 0, capsys.readouterr().err
    calibration = load_calibration(out)
    assert calibration.camera == 'cam_high'
    assert (calibration.intrinsics.cx, calibration.intrinsics.cy) == (319.5, 239.5)
    assert calibration.intrinsics.fx == intrinsics.fx
    assert pose_difference(calibration.pose, camera)[0] < 0.003


def test_no_message_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], domain: int) -> None:
    import cv2

    cv2.imwrite(str(tmp_path / 'board.png'), np.full((480, 640), 140, dtype=np.uint8))
    argv = ['calibrate', str(tmp_path / 'board.png'), '--camera-info-topic', '/nobody/camera_info', '--timeout', '1']
    assert main(argv) == 2
    assert (
        capsys.readouterr().err.strip()
        == 'robofollow calibrate: error: no CameraInfo on /nobody/camera_info within 1 s'
    )
