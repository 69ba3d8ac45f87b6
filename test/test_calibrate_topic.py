"""``robofollow calibrate --camera-info-topic``: the intrinsics from one CameraInfo of a live topic (read by
``ros.ask_once`` in its own process over real DDS, private domain), and one line with exit 2 when none
comes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import rclpy
from graph_helpers import PROFILE, ros_domain, spinning
from rclpy.context import Context
from sensor_msgs.msg import CameraInfo

from robofollow_ros.cli import main
from robofollow_ros.ros import qos
from robofollow_ros.tracking.calibration import pose_difference
from robofollow_ros.tracking.extrinsic_file import load_calibration
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


@pytest.fixture
def simulator_camera_info(domain: int) -> Iterator[None]:
    """cam_high's CameraInfo as the simulator states it (cx = W/2), published at 20 Hz best effort."""
    intrinsics, _ = cam_high(640, 480)
    message = CameraInfo(width=640, height=480, distortion_model='plumb_bob', d=[0.0] * 5)
    message.k = [intrinsics.fx, 0.0, 320.0, 0.0, intrinsics.fy, 240.0, 0.0, 0.0, 1.0]
    message.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    message.p = [intrinsics.fx, 0.0, 320.0, 0.0, 0.0, intrinsics.fy, 240.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    message.header.frame_id = 'cam_high'
    context = Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node('camera_info_publisher', context=context)
    publisher = node.create_publisher(CameraInfo, TOPIC, qos.SENSOR)
    node.create_timer(0.05, lambda: publisher.publish(message))
    with spinning(context, node):
        yield


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
