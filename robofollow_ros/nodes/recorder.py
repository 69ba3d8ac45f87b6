"""``recorder`` node: one rosbag2 per episode (``out/episodes/<task>__rNN``), written through rosbags.

Messages are written as received (CDR, no decoding) into an ``EpisodeBagWriter``: joint states (the robot's joint
names; /robofollow/episode_meta names the ``robot``), object and TCP poses, the scene markers, the result, and with
``images: true`` the camera images and CameraInfo; the latest ``/robot_description`` opens every bag, so RViz and
Foxglove show the cell from the bag alone. Only messages stamped from the episode's reset on go into its bag; the
bag is closed when the episode's result arrives. A bag is written as ``OUT/episodes/.<stem>.partial-<pid>/<stem>``
and moved to ``OUT/episodes/<stem>`` when complete, so its files carry the same names as an in-process bag's
(``<stem>/<stem>.mcap``, ``metadata.yaml`` naming it). A recorder killed mid-episode leaves a hidden bag that
``robofollow score`` recovers (``docs/bags.md``) and the next run removes. Each published bag is announced on
``/robofollow/recorded`` (its episode id), which the evaluator waits for before it names the bag in the record.

The node reacts to arrivals: a bag is finished by the callback of its result or of the TCP pose or joint state that
completes it (whichever comes last); a timer only bounds the wait for frames that never come
(``END_TIMEOUT_SECONDS``).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.serialization import serialize_message
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import String
from visualization_msgs.msg import MarkerArray

from robofollow_ros import topics
from robofollow_ros.bags.cdr import default_typestore, header_stamp_ns
from robofollow_ros.bags.conventions import IMAGE, JOINT_STATE, MARKER_ARRAY, POSE_STAMPED
from robofollow_ros.bags.writer import EpisodeBagWriter
from robofollow_ros.errors import GraphError, RoboFollowError
from robofollow_ros.evaluation.episode_files import EPISODES_DIR, episode_stem
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.realcell.drivers import message_class
from robofollow_ros.robot.profiles import arm_command_topics
from robofollow_ros.robot.specs import DEFAULT_ROBOT, get_robot_spec
from robofollow_ros.ros import qos
from robofollow_ros.ros.messages import from_time
from robofollow_ros.ros.protocol import (
    EpisodeEnd,
    EpisodeEndMessage,
    EpisodeSpecMessage,
    ResultMessage,
    SimStatus,
    SimStatusMessage,
    StatusEvent,
    record_from_result,
)
from robofollow_ros.ros.runtime import Timeout, param, read_episode, read_report, remember, run_node
from robofollow_ros.state_layout import CAMERAS
from robofollow_ros.textfiles import partial_path

CAMERA_INFO = 'sensor_msgs/msg/CameraInfo'
KEEP_OPEN = 3
END_TIMEOUT_SECONDS = 5.0
TIMER_SLACK_SECONDS = 0.05
"""A result counts as ``END_TIMEOUT_SECONDS`` old this much early when the timeout's timer fires (timer granularity)."""
MAX_WAITING = 20000
"""Messages kept while their episode's spec or reset is still on its way (a few episodes' worth)."""


@dataclass
class _OpenBag:
    spec: EpisodeSpec
    writer: EpisodeBagWriter
    path: Path
    due: frozenset[str]
    """The topics whose frames must reach the episode's end before the bag is published (``topics.frame_topics``)."""
    start_ns: int | None = None
    frame_ns: dict[str, int] = field(default_factory=dict)
    """The latest stamp written of each TCP pose, object pose and joint-state topic."""
    result: dict[str, Any] | None = None
    result_seen: float = 0.0
    end_ns: int | None = None


class RecorderNode(Node):
    """Writes episode bags.

    Messages of consecutive episodes may arrive interleaved across topics (a result after the next episode's
    spec), so a bag stays open until its own result arrives, and each message goes to the open bag whose
    episode began last at or before its stamp.
    """

    def __init__(self) -> None:
        super().__init__('recorder')
        self.out = (
            Path(str(param(self, 'out', 'runs/graph', description='run folder; bags go to OUT/episodes')))
            / EPISODES_DIR
        )
        self.storage = str(param(self, 'storage', 'mcap', description='bag storage: mcap or sqlite3'))
        self.robot = get_robot_spec(
            str(param(self, 'robot', DEFAULT_ROBOT, description='robot named in each bag (robot.specs)'))
        ).name
        self.bags: dict[str, _OpenBag] = {}
        self.finished: dict[str, bool] = {}
        self.waiting: list[tuple[str, str, bytes, int | None]] = []
        self.resets: dict[str, int] = {}
        self.create_subscription(EpisodeSpecMessage, topics.EPISODE, self.on_episode, qos.LATCHED_READER)
        self.create_subscription(SimStatusMessage, topics.SIM_STATUS, self.on_status, qos.EVENTS)
        self.create_subscription(ResultMessage, topics.RESULT, self.on_result, qos.EVENTS)
        self.create_subscription(EpisodeEndMessage, topics.EPISODE_END, self.on_end, qos.EVENTS)
        self.recorded_pub = self.create_publisher(String, topics.RECORDED, qos.EVENTS)
        self.description: str | None = None
        self.create_subscription(String, topics.ROBOT_DESCRIPTION, self.on_description, qos.LATCHED)
        self.create_subscription(MarkerArray, topics.SCENE_MARKERS, self.on_markers, qos.MARKERS)
        self.joint_states = str(
            param(
                self,
                'joint_states',
                topics.JOINT_STATES,
                description='joint states with the URDF names (real cell: robofollow/joint_states from ee_pose)',
            )
        )
        self.pose_source = str(
            param(self, 'pose_source', 'sim', description='where object poses come from (mocap: best-effort readers)')
        )
        self._raw(JointState, self.joint_states, JOINT_STATE, qos.STATE)
        pose_profiles = qos.object_pose_readers(qos.STATE, pose_source=self.pose_source)
        for topic in topics.pose_topics():
            self._raw(PoseStamped, topic, POSE_STAMPED, pose_profiles.get(topic, qos.STATE))
        for name in topics.all_object_names():  # fake hardware's truth beside a tracker (publish_truth_poses)
            self._raw(PoseStamped, topics.truth_pose_topic(name), POSE_STAMPED, qos.STATE)
        self.robot_profile = str(
            param(self, 'robot_profile', '', description="a real cell's robot profile: its arm commands are recorded")
        )
        for topic, msgtype in arm_command_topics(self.robot_profile).items():
            self._command(topic, msgtype)
        if bool(param(self, 'images', False, description='record the camera images and CameraInfo')):
            for camera in CAMERAS:
                self._raw(Image, topics.image_topic(camera), IMAGE, qos.SENSOR)
                self._raw(CameraInfo, topics.camera_info_topic(camera), CAMERA_INFO, qos.SENSOR)
        self.end_timer = Timeout(self, END_TIMEOUT_SECONDS, self.on_end_timeout)

    def _raw(self, kind: type, topic: str, msgtype: str, profile: QoSProfile) -> None:
        self.create_subscription(kind, topic, lambda data: self.on_message(topic, msgtype, data), profile, raw=True)

    def _command(self, topic: str, msgtype: str) -> None:
        """Record the arm commands on ``topic`` stamped with their arrival (a JointTrajectory's stamp zero means
        "now", and a driver's group command has no header), when this environment can read and write the type."""
        if msgtype not in default_typestore().fielddefs:
            self.get_logger().warning(f'{topic} is not recorded: no definition of {msgtype} is installed')
            return
        try:
            kind = message_class(msgtype)
        except GraphError as error:
            self.get_logger().warning(f'{topic} is not recorded: {error}')
            return
        self.create_subscription(
            kind,
            topic,
            lambda data: self.on_message(topic, msgtype, data, stamp=self.get_clock().now().nanoseconds),
            qos.ARM_COMMANDS,
            raw=True,
        )

    def on_episode(self, message: EpisodeSpecMessage) -> None:
        spec = read_episode(self, message)
        if spec is None:
            return
        if spec.episode_id in self.bags or spec.episode_id in self.finished:
            return  # a spec delivered again (latched history) must not open a second, never finished bag
        while len(self.bags) >= KEEP_OPEN:
            self.finish(next(iter(self.bags)), publish=False)
        bag = self.open_bag(spec, start_ns=self.resets.get(spec.episode_id))
        if bag is not None:
            self.bags[spec.episode_id] = bag
            self.flush()

    def open_bag(self, spec: EpisodeSpec, *, start_ns: int | None) -> _OpenBag | None:
        """A new bag for ``spec`` in its staging folder (emptied first), or ``None`` after logging why not."""
        path = self.out / episode_stem(spec.task_id, spec.round)
        staging = partial_path(path)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        meta = {**spec.to_dict(), 'robot': self.robot, 'frames_are_rows': True}
        if self.robot_profile:
            meta['robot_profile'] = self.robot_profile  # whose topics and units the arm commands are in
        try:
            writer = EpisodeBagWriter(
                staging / path.name,
                meta=meta,
                stamp_ns=time.time_ns(),
                storage=self.storage,  # type: ignore[arg-type]
            )
        except RoboFollowError as error:
            shutil.rmtree(staging, ignore_errors=True)
            self.get_logger().error(f'cannot record {spec.task_id}: {error}')
            return None
        if self.description is not None:
            writer.write_robot_description(self.description, stamp_ns=time.time_ns())
        due = topics.frame_topics(
            spec.resolve()[1].object_names,
            joint_states=self.joint_states,
            objects_every_frame=self.pose_source == 'sim',
        )
        return _OpenBag(spec, writer, path, due, start_ns)

    def on_description(self, message: String) -> None:
        self.description = message.data
        for bag in self.bags.values():
            bag.writer.write_robot_description(message.data, stamp_ns=time.time_ns())
        self.try_finish()

    def description_awaited(self) -> bool:
        """A publisher of the robot description is known but its latched URDF has not arrived (a reliable sample
        lost on a busy machine is sent again only at the writer's next heartbeat)."""
        return self.description is None and self.count_publishers(topics.ROBOT_DESCRIPTION) > 0

    def on_markers(self, message: MarkerArray) -> None:
        if message.markers:
            data = serialize_message(message)
            self.on_message(topics.SCENE_MARKERS, MARKER_ARRAY, data, stamp=from_time(message.markers[0].header.stamp))

    def on_status(self, message: SimStatusMessage) -> None:
        status = read_report(self, SimStatus.from_message, message, topic=topics.SIM_STATUS)
        if status is None or status.event is not StatusEvent.RESET:
            return
        remember(self.resets, status.episode_id, status.stamp_ns)
        bag = self.bags.get(status.episode_id)
        if bag is None:
            return
        if bag.start_ns is not None and bag.start_ns != status.stamp_ns:
            bag = self.restart(bag, start_ns=status.stamp_ns)
            if bag is None:
                return
        bag.start_ns = status.stamp_ns
        self.flush()

    def restart(self, bag: _OpenBag, *, start_ns: int) -> _OpenBag | None:
        """A bag begun again from a later reset of its episode (the evaluator calls the reset again when an
        answer is lost, and every node follows the latest reset): the frames of the earlier reset are dropped."""
        episode_id = bag.spec.episode_id
        self.get_logger().info(f'{bag.spec.task_id} was reset again: its bag starts over from the latest reset')
        bag.writer.close()
        del self.bags[episode_id]
        fresh = self.open_bag(bag.spec, start_ns=start_ns)
        if fresh is not None:
            self.bags[episode_id] = fresh
        return fresh

    def flush(self) -> None:
        """Write the messages that waited for their episode's spec and reset."""
        waiting, self.waiting = self.waiting, []
        for topic, msgtype, data, stamp in waiting:
            self.on_message(topic, msgtype, data, stamp=stamp)

    def on_message(self, topic: str, msgtype: str, data: bytes, *, stamp: int | None = None) -> None:
        """Write a message to the bag of its episode (by ``stamp``, default its header stamp)."""
        if not self.bags or any(bag.start_ns is None for bag in self.bags.values()):
            self.waiting.append((topic, msgtype, data, stamp))
            del self.waiting[:-MAX_WAITING]
            return
        stamp = header_stamp_ns(data) if stamp is None else stamp
        started = [bag for bag in self.bags.values() if bag.start_ns is not None and bag.start_ns <= stamp]
        if started:
            target = max(started, key=lambda bag: bag.start_ns or 0)
            if topic.startswith((topics.EE_POSE_PREFIX, topics.OBJECT_POSE_PREFIX)) or topic == self.joint_states:
                target.frame_ns[topic] = max(stamp, target.frame_ns.get(topic, stamp))
            # A real cell publishes on after an episode's end (and lays out the next one before its reset stamp):
            # what is stamped after the end belongs to no episode.
            if target.end_ns is None or stamp <= target.end_ns:
                target.writer.write_raw(topic, msgtype, time.time_ns(), data)
            if topic in target.frame_ns and target.result is not None and stamp >= (target.end_ns or 0):
                self.try_finish()

    def on_end(self, message: EpisodeEndMessage) -> None:
        end = read_report(self, EpisodeEnd.from_message, message, topic=topics.EPISODE_END)
        bag = None if end is None else self.bags.get(end.episode_id)
        if bag is not None and end is not None:
            bag.end_ns = end.end_stamp_ns

    def on_result(self, message: ResultMessage) -> None:
        record = read_report(self, record_from_result, message, topic=topics.RESULT)
        if record is None:
            return
        episode_id = record.pop('episode_id', None)
        bag = self.bags.get(episode_id)
        if bag is not None:
            bag.end_ns = int(record.pop('end_stamp_ns', 0))
            bag.result, bag.result_seen = record, time.monotonic()
            self.try_finish()
            if episode_id in self.bags and not self.end_timer.running():
                self.end_timer.start()

    def on_end_timeout(self) -> None:
        """The oldest waiting result is ``END_TIMEOUT_SECONDS`` old: publish its bag with what is in (the countdown
        restarts while results wait)."""
        self.try_finish(slack=TIMER_SLACK_SECONDS)
        if any(bag.result is not None for bag in self.bags.values()):
            self.end_timer.start()

    def try_finish(self, *, slack: float = 0.0) -> None:
        """Publish every bag whose result is in once its frames up to the result's end stamp are written
        (``topics.frame_topics``; a reader matched late gets the frames it missed, ``qos.STATE``) and the robot
        description a known publisher holds is in (or ``END_TIMEOUT_SECONDS`` after its result arrived with what is
        written)."""
        for episode_id, bag in list(self.bags.items()):
            if bag.result is None:
                continue
            complete = (
                all(bag.frame_ns.get(topic, -1) >= (bag.end_ns or 0) for topic in bag.due)
                and not self.description_awaited()
            )
            if complete or time.monotonic() + slack - bag.result_seen >= END_TIMEOUT_SECONDS:
                bag.writer.write_result(bag.result, stamp_ns=time.time_ns())
                self.finish(episode_id, publish=True)

    def finish(self, episode_id: str, *, publish: bool) -> None:
        """Close a bag; a complete episode's bag is moved to its final name (an abandoned one stays hidden, where
        ``robofollow score`` can still read it and the next run's clean-up removes it; one of an episode that
        never started holds nothing of it and is removed)."""
        bag = self.bags.pop(episode_id)
        remember(self.finished, episode_id, True)
        bag.writer.close()
        staging = bag.writer.path.parent
        if publish:
            if bag.path.exists():
                shutil.rmtree(bag.path)
            os.replace(bag.writer.path, bag.path)
            shutil.rmtree(staging, ignore_errors=True)
            self.get_logger().info(f'recorded {bag.path}')
            if self.context.ok():  # not when close() publishes the last bags at shutdown
                self.recorded_pub.publish(String(data=episode_id))
        elif bag.start_ns is None:
            shutil.rmtree(staging, ignore_errors=True)

    def close(self) -> None:
        """At shutdown: publish the bags whose result is in, close the others (see ``finish``)."""
        for episode_id, bag in list(self.bags.items()):
            if bag.result is not None:
                bag.writer.write_result(bag.result, stamp_ns=time.time_ns())
            self.finish(episode_id, publish=bag.result is not None)


def main(args: list[str] | None = None) -> int:
    """Run the recorder node until shutdown."""
    return run_node(RecorderNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
