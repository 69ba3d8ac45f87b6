"""``robofollow calibrate``: a camera's pose in the world from images of the table board, frozen into YAML."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from robofollow_ros.errors import CalibrationError

HELP = 'camera extrinsic from images of the table board, frozen into a YAML file'
DESCRIPTION = """\
Solve a fixed camera's pose in the world from one or more images of the table board (the board tags of the
marker configuration, config/markers/<name>.yaml), with its intrinsics from a CameraInfo YAML file (as
camera_info_manager or cameracalibrator write it) or from one message of a live CameraInfo topic, and write both
into one YAML file the tracker reads (docs/real-cell.md, "Calibrating the camera"). The images are files, or
--from-topic takes --count of them from the running camera (saved beside the output, so the same calibration can
be made again from them), with the CameraInfo beside that topic unless one is given. Refused in one line (exit 2),
and nothing written, when fewer than --min-tags board tags are seen or the board fits worse than --max-rms pixels.

Pixel convention: a CameraInfo from an OpenCV calibration (ROS camera_calibration) has the centre of pixel (0, 0)
at (0, 0): centre. The simulator's CameraInfo writes cx = W/2 (pixel (0, 0) spans [0, 1]): corner. The default,
auto, takes a principal point of exactly (W/2, H/2) for corner and says so; give --pixel-convention to decide. The
written file is always in OpenCV's convention. A camera name read from a CameraInfo's frame id loses its
"_optical_frame" (cam_high_optical_frame is camera cam_high).

examples:
  robofollow calibrate board.png --camera-info cam_high.yaml --out cam_high_calibration.yaml
  robofollow calibrate b1.png b2.png b3.png --camera-info sim_cam_high.yaml --pixel-convention corner
  robofollow calibrate board.png --camera-info-topic /cam_high/camera_info   intrinsics from the running driver
  robofollow calibrate --from-topic /cam_high/image_raw    images and intrinsics from the running camera
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``robofollow calibrate``."""
    parser.add_argument(
        'images', nargs='*', metavar='IMAGE', help='images of the board (PNG, JPEG, ...) from the camera'
    )
    parser.add_argument(
        '--from-topic', metavar='TOPIC', help='take the images from this live image topic instead (needs ROS 2)'
    )
    parser.add_argument('--count', type=int, default=3, help='images to take with --from-topic (default 3)')
    parser.add_argument('--every', type=float, default=1.0, help='seconds between them at least (default 1)')
    source = parser.add_mutually_exclusive_group()
    source.add_argument('--camera-info', metavar='YAML', help="the camera's CameraInfo YAML file")
    source.add_argument(
        '--camera-info-topic', metavar='TOPIC', help='read one CameraInfo from this live topic instead (needs ROS 2)'
    )
    parser.add_argument(
        '--timeout', type=float, default=10.0, help='seconds to wait for a live CameraInfo, and per image (10)'
    )
    parser.add_argument(
        '--pixel-convention',
        choices=('auto', 'centre', 'corner'),
        default='auto',
        help='of the CameraInfo: centre (OpenCV, ROS camera_calibration), corner (the simulator, cx = W/2) or auto '
        '(default: corner for cx, cy exactly W/2, H/2)',
    )
    parser.add_argument('--camera', help="the camera's name (default: camera_name of the CameraInfo, else cam_high)")
    parser.add_argument('--markers', default='default', help='marker configuration: name or .yaml path (its board)')
    parser.add_argument('--out', help='the calibration file to write (default: <camera>_calibration.yaml)')
    parser.add_argument('--min-tags', type=int, default=3, help='board tags that must be seen (default 3, at least 2)')
    parser.add_argument('--max-rms', type=float, default=1.5, help='largest RMS reprojection error, px (default 1.5)')


def read_image(path: str) -> Any:
    """The image at ``path`` in grey.

    Raises:
        CalibrationError: no such file, a file that cannot be read (the reason, e.g. permission denied), or not an
            image OpenCV can decode (with the decoder's complaint, e.g. ``libpng error: IHDR: CRC error``).
    """
    import numpy as np

    file = Path(path)
    if not file.is_file():
        raise CalibrationError(f'cannot read image {path}: {"not a file" if file.exists() else "no such file"}')
    try:
        data = np.frombuffer(file.read_bytes(), dtype=np.uint8)
    except OSError as error:
        raise CalibrationError(f'cannot read image {path}: {error.strerror or error}') from None
    image, complaint = _decode_quietly(data) if data.size else (None, 'an empty file')
    if image is None:
        raise CalibrationError(
            f'cannot read image {path}: not an image OpenCV can decode' + (f' ({complaint})' if complaint else '')
        )
    return image


def _decode_quietly(data: Any) -> tuple[Any, str]:
    """``cv2.imdecode`` of ``data`` in grey, and the last line its native decoders wrote on stderr meanwhile (libpng
    prints ``libpng error: ...`` there itself): caught in a file, so that the terminal shows only our own line.

    File descriptor 2 is redirected while it decodes; the command line reads its images before starting any thread.
    """
    import cv2

    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as caught:
            os.dup2(caught.fileno(), 2)
            try:
                image = cv2.imdecode(data, cv2.IMREAD_GRAYSCALE)
            finally:
                os.dup2(saved, 2)
            caught.seek(0)
            said = caught.read(4096).decode('utf-8', errors='replace').strip().splitlines()
    finally:
        os.close(saved)
    return image, said[-1].strip() if said else ''


def _ask_once(question: str, topic: str, *options: str, timeout_s: float) -> str:
    """What ``ros.ask_once`` printed for ``question`` about ``topic``, asked in its own process (the command line
    never imports rclpy).

    Raises:
        CalibrationError: nothing within ``timeout_s``, or the reader failed (its last line of stderr).
    """
    import subprocess

    if timeout_s <= 0.0:
        raise CalibrationError(f'--timeout must be positive, got {timeout_s:g}')
    command = [sys.executable, '-m', 'robofollow_ros.ros.ask_once', question, topic, '--timeout', str(timeout_s)]
    # rclpy's start-up and shutdown take seconds on a loaded machine: allow a minute beyond the wait.
    done = subprocess.run([*command, *options], capture_output=True, text=True, timeout=timeout_s + 60.0, check=False)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise CalibrationError(lines[-1] if lines else f'the {question} reader exited with status {done.returncode}')
    return done.stdout


def live_images(topic: str, *, count: int, every_s: float, timeout_s: float, folder: Path) -> list[str]:
    """Paths of ``count`` images of the live ``topic``, saved as PNG files in ``folder``.

    Raises:
        CalibrationError: fewer within ``timeout_s`` per image, or the reader failed.
    """
    if count < 1 or every_s < 0.0:
        raise CalibrationError(f'--count must be at least 1 and --every not negative, got {count} and {every_s:g}')
    options = ('--count', str(count), '--every', str(every_s), '--folder', str(folder))
    return _ask_once('images', topic, *options, timeout_s=timeout_s * count).split()


def live_camera_info(topic: str, *, timeout_s: float) -> object:
    """The parsed YAML document of one CameraInfo from ``topic`` (``_ask_once``).

    Raises:
        CalibrationError: no message within ``timeout_s``, or the reader failed (its last line of stderr).
    """
    import yaml

    from robofollow_ros.textfiles import parse_yaml, yaml_problem

    text = _ask_once('camera_info', topic, timeout_s=timeout_s)
    try:
        return parse_yaml(text)
    except yaml.YAMLError as error:
        raise CalibrationError(f'the CameraInfo of {topic} is not valid YAML ({yaml_problem(error)})') from None


def run(args: argparse.Namespace) -> int:
    """Calibrate, print the error and the camera's place, write the file."""
    import numpy as np

    from robofollow_ros.topics import camera_info_topic_of_image
    from robofollow_ros.tracking.board_images import calibrate_from_images
    from robofollow_ros.tracking.camera_info import load_camera_info, parse_camera_info
    from robofollow_ros.tracking.extrinsic_file import CalibrationQuality, CameraCalibration, save_calibration
    from robofollow_ros.tracking.markers import load_markers

    if args.max_rms <= 0.0:
        raise CalibrationError(f'--max-rms must be positive, got {args.max_rms}')
    if bool(args.images) == bool(args.from_topic):
        raise CalibrationError('give the board images as files or --from-topic TOPIC, one of the two')
    info_topic = args.camera_info_topic
    if args.from_topic and args.camera_info is None and info_topic is None:
        info_topic = camera_info_topic_of_image(args.from_topic)
    if args.camera_info is None and info_topic is None:
        raise CalibrationError('give the intrinsics: --camera-info YAML or --camera-info-topic TOPIC')
    # Image files first: a bad file is refused before waiting for a CameraInfo.
    paths = list(args.images)
    images = [read_image(path) for path in paths]
    if info_topic is not None:
        document = live_camera_info(info_topic, timeout_s=args.timeout)
        info = parse_camera_info(document, source=info_topic, convention=args.pixel_convention)
    else:
        info = load_camera_info(args.camera_info, convention=args.pixel_convention)
    camera = args.camera or info.name or 'cam_high'
    out = Path(args.out or f'{camera}_calibration.yaml')
    if args.from_topic:
        folder = out.with_name(f'{out.stem}_board_images')
        paths = live_images(
            args.from_topic, count=args.count, every_s=args.every, timeout_s=args.timeout, folder=folder
        )
        images = [read_image(path) for path in paths]
    board = load_markers(args.markers).board
    result = calibrate_from_images(images, board, info.intrinsics, min_tags=args.min_tags, max_rms_px=args.max_rms)
    extrinsic = result.extrinsic
    calibration = CameraCalibration(
        camera=camera,
        intrinsics=info.intrinsics,
        pose=extrinsic.camera,
        quality=CalibrationQuality(
            rms_px=extrinsic.rms_px, max_px=extrinsic.max_px, board_tags=extrinsic.tag_ids, images=len(images)
        ),
    )
    save_calibration(calibration, out)
    k = info.intrinsics
    print(f"intrinsics: pixel convention {info.convention} (written as OpenCV's: cx {k.cx:g}, cy {k.cy:g})")
    for path, seen in zip(paths, result.seen, strict=True):
        print(f'{path}: board tags {" ".join(map(str, seen)) or "none"} ({len(seen)} of {len(board)})')
    print(
        f'board fit: {len(extrinsic.tag_ids)} tags, reprojection RMS {extrinsic.rms_px:.2f} px, '
        f'worst corner {extrinsic.max_px:.2f} px'
        + (f'; images agree within {result.spread_mm:.1f} mm' if len(images) > 1 else '')
    )
    x, y, z = (float(v) for v in extrinsic.camera.position)
    view = extrinsic.camera.rotation[:, 2]
    down = float(np.degrees(np.arcsin(-view[2])))
    print(f'{camera}: optical centre ({x:+.3f}, {y:+.3f}, {z:+.3f}) m in the world, looking {down:.1f}° below level')
    print(f'wrote {out}')
    return 0
