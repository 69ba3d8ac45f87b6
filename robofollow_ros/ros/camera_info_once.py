"""One CameraInfo from a live topic, printed as a camera_info_manager YAML document (for ``robofollow calibrate
--camera-info-topic``, which runs this module as its own process: the command line never imports rclpy).

``python -m robofollow_ros.ros.camera_info_once /cam_high/camera_info --timeout 10`` prints the first message
heard and exits 0, or says in one line on stderr that none came and exits 2. The subscription is best effort, so it
hears reliable and best-effort publishers alike.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import yaml

EXIT_NO_MESSAGE = 2


def camera_info_document(message: Any) -> dict[str, Any]:
    """A sensor_msgs/CameraInfo as camera_info_manager writes it to YAML (``camera_name`` is the frame id)."""

    def matrix(rows: int, cols: int, values: Sequence[float]) -> dict[str, Any]:
        return {'rows': rows, 'cols': cols, 'data': [float(v) for v in values]}

    distortion = list(message.d)
    return {
        'image_width': int(message.width),
        'image_height': int(message.height),
        'camera_name': str(message.header.frame_id),
        'camera_matrix': matrix(3, 3, message.k),
        'distortion_model': str(message.distortion_model),
        'distortion_coefficients': matrix(1, len(distortion), distortion),
        'rectification_matrix': matrix(3, 3, message.r),
        'projection_matrix': matrix(3, 4, message.p),
    }


def read_one(topic: str, *, timeout_s: float) -> Any | None:
    """The first CameraInfo on ``topic`` within ``timeout_s`` seconds, or None."""
    from rclpy.task import Future
    from sensor_msgs.msg import CameraInfo

    from robofollow_ros.ros import qos
    from robofollow_ros.ros.runtime import one_shot_node

    with one_shot_node('robofollow_calibrate_camera_info') as (node, executor):
        heard: Future = Future()

        def take(message: CameraInfo) -> None:
            if not heard.done():
                heard.set_result(message)

        node.create_subscription(CameraInfo, topic, take, qos.SENSOR)
        executor.spin_until_future_complete(heard, timeout_sec=timeout_s)
        return heard.result() if heard.done() else None


def main(argv: Sequence[str] | None = None) -> int:
    """Print one CameraInfo of the topic as YAML; exit 2 when none came in time."""
    parser = argparse.ArgumentParser(prog='camera_info_once', description=__doc__)
    parser.add_argument('topic', help='the CameraInfo topic, e.g. /cam_high/camera_info')
    parser.add_argument('--timeout', type=float, default=10.0, help='seconds to wait (default 10)')
    args = parser.parse_args(argv)
    message = read_one(args.topic, timeout_s=args.timeout)
    if message is None:
        print(f'no CameraInfo on {args.topic} within {args.timeout:g} s', file=sys.stderr)
        return EXIT_NO_MESSAGE
    sys.stdout.write(yaml.safe_dump(camera_info_document(message), sort_keys=False))
    return 0


if __name__ == '__main__':
    sys.exit(main())
