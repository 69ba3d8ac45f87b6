"""``recorder`` node: one rosbag2 per episode (``out/episodes/<task>__rNN``), written through rosbags.

Messages are written as received (CDR, no decoding) into an ``EpisodeBagWriter``: joint states, object and TCP
poses, the result, and with ``images: true`` the camera images and CameraInfo. Only messages stamped from the
episode's reset on go into its bag; the bag is closed when the episode's result arrives. A recorder killed
mid-episode leaves a bag that ``robofollow score`` recovers (``docs/bags.md``).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import time
from pathlib import Path

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import String

from robofollow_ros import topics
from robofollow_ros.bags.conventions import IMAGE, JOINT_STATE, POSE_STAMPED
from robofollow_ros.bags.writer import EpisodeBagWriter
from robofollow_ros.benchmark.types import ARMS
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.recording import EPISODES_DIR, episode_stem
from robofollow_ros.graph.protocol import SimStatus
from robofollow_ros.nodes.sim import all_object_names
from robofollow_ros.ros import qos
from robofollow_ros.ros.runtime import param, run_node
from robofollow_ros.state_layout import CAMERAS
from robofollow_ros.textfiles import partial_path

CAMERA_INFO = 'sensor_msgs/msg/CameraInfo'
_STAMP = struct.Struct('<iI')
_CDR_HEADER = 4
KEEP_EPISODES = 16
MAX_WAITING = 20000
"""Messages kept while their episode's spec or reset is still on its way (a few episodes' worth)."""


def header_stamp_ns(data: bytes) -> int:
    """Header stamp of a CDR (little-endian) message that starts with ``std_msgs/Header``."""
    sec, nanosec = _STAMP.unpack_from(data, _CDR_HEADER)
    return sec * 1_000_000_000 + nanosec


class RecorderNode(Node):
    """Writes episode bags."""

    def __init__(self) -> None:
        super().__init__('recorder')
        self.out = Path(str(param(self, 'out', 'runs/graph'))) / EPISODES_DIR
        self.storage = str(param(self, 'storage', 'mcap'))
        self.spec: EpisodeSpec | None = None
        self.start_ns: int | None = None
        self.bag: EpisodeBagWriter | None = None
        self.path: Path | None = None
        self.waiting: list[tuple[str, str, bytes]] = []
        self.resets: dict[str, int] = {}
        self.create_subscription(String, topics.EPISODE, self.on_episode, qos.LATCHED)
        self.create_subscription(String, topics.SIM_STATUS, self.on_status, qos.EVENTS)
        self.create_subscription(String, topics.RESULT, self.on_result, qos.EVENTS)
        self._raw(JointState, topics.JOINT_STATES, JOINT_STATE, qos.STATE)
        for topic in [topics.ee_pose_topic(arm) for arm in ARMS] + [
            topics.object_pose_topic(name) for name in all_object_names()
        ]:
            self._raw(PoseStamped, topic, POSE_STAMPED, qos.STATE)
        if bool(param(self, 'images', False)):
            for camera in CAMERAS:
                self._raw(Image, topics.image_topic(camera), IMAGE, qos.SENSOR)
                self._raw(CameraInfo, topics.camera_info_topic(camera), CAMERA_INFO, qos.SENSOR)

    def _raw(self, kind: type, topic: str, msgtype: str, profile: object) -> None:
        self.create_subscription(kind, topic, lambda data: self.on_message(topic, msgtype, data), profile, raw=True)

    def on_episode(self, message: String) -> None:
        try:
            spec = EpisodeSpec.from_json(message.data)
        except RoboFollowError as error:
            self.get_logger().error(f'ignored {topics.EPISODE}: {error}')
            return
        if self.spec is not None and spec.episode_id == self.spec.episode_id:
            return
        self.finish()
        self.spec, self.start_ns = spec, self.resets.get(spec.episode_id)
        self.path = self.out / episode_stem(spec.task_id, spec.round)
        self.out.mkdir(parents=True, exist_ok=True)
        staging = partial_path(self.path)
        shutil.rmtree(staging, ignore_errors=True)
        meta = json.dumps({**spec.to_dict(), 'frames_are_rows': True})
        try:
            self.bag = EpisodeBagWriter(staging, meta_json=meta, stamp_ns=time.time_ns(), storage=self.storage)  # type: ignore[arg-type]
        except RoboFollowError as error:
            self.get_logger().error(f'cannot record {spec.task_id}: {error}')
            self.bag = None
        if self.start_ns is not None:
            self.flush()

    def on_status(self, message: String) -> None:
        try:
            status = SimStatus.from_json(message.data)
        except RoboFollowError:
            return
        if status.event != 'reset':
            return
        self.resets[status.episode_id] = status.stamp_ns
        while len(self.resets) > KEEP_EPISODES:
            self.resets.pop(next(iter(self.resets)))
        if self.spec is not None and status.episode_id == self.spec.episode_id:
            self.start_ns = status.stamp_ns
            self.flush()

    def flush(self) -> None:
        """Write the messages that came before their episode's spec and reset were both known."""
        waiting, self.waiting = self.waiting, []
        for topic, msgtype, data in waiting:
            self.on_message(topic, msgtype, data)

    def on_message(self, topic: str, msgtype: str, data: bytes) -> None:
        if self.bag is None or self.start_ns is None:
            self.waiting.append((topic, msgtype, data))
            del self.waiting[:-MAX_WAITING]
            return
        if header_stamp_ns(data) >= self.start_ns:
            self.bag.write_raw(topic, msgtype, time.time_ns(), data)

    def on_result(self, message: String) -> None:
        try:
            record = json.loads(message.data)
        except ValueError:
            return
        if self.bag is None or self.spec is None or record.get('episode_id') != self.spec.episode_id:
            return
        record.pop('episode_id', None)
        self.bag.write_result(record, stamp_ns=time.time_ns())
        self.finish(publish=True)

    def finish(self, *, publish: bool = False) -> None:
        """Close the open bag; a complete episode's bag is moved to its final name (an abandoned one stays
        hidden, where ``robofollow score`` can still read it and the next run's clean-up removes it)."""
        bag, self.bag = self.bag, None
        if bag is None:
            return
        bag.close()
        if publish and self.path is not None:
            if self.path.exists():
                shutil.rmtree(self.path)
            os.replace(bag.path, self.path)
            self.get_logger().info(f'recorded {self.path}')

    def close(self) -> None:
        self.finish()


def main(args: list[str] | None = None) -> int:
    """Run the recorder node until shutdown."""
    return run_node(RecorderNode, args, threads=1)


if __name__ == '__main__':
    raise SystemExit(main())
