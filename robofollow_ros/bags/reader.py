"""Reading an episode bag back into the referee's ``Trajectory`` (works without ROS installed).

Frames are the header stamps of the EE pose messages of both arms. Every other signal is zero-order held
(its latest sample at or before the frame). Frames before every required signal (both EE poses, both
grippers, every object pose) has a sample are dropped. Header stamps are the time base; the bag's log
(receive) times only order messages with equal stamps. Joint states are mapped to the 14-D layout by name: the
joint names of the robot the episode names (``robot`` in /robofollow/episode), of any registered robot, or the
generic ``left_joint1`` .. ``left_gripper`` of bags recorded before joints were named after the robot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rosbags.typesys.store import Typestore

from robofollow_ros import topics
from robofollow_ros.bags.cdr import (
    decode_episode_spec,
    decode_image,
    decode_joint_state,
    decode_json_object,
    decode_poses,
    decode_result,
    default_typestore,
)
from robofollow_ros.bags.conventions import (
    IMAGE,
    JOINT_STATE,
    MAX_GAP_S,
    NS_PER_S,
    POSE_STAMPED,
    STRING,
)
from robofollow_ros.bags.episode_meta import join_meta
from robofollow_ros.bags.raw import RawBag, RawTopic
from robofollow_ros.bags.storage import read_raw
from robofollow_ros.errors import BagError, TrajectoryError
from robofollow_ros.interfaces import EPISODE_SPEC, RESULT
from robofollow_ros.referee.builder import TrajectoryBuilder
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.robot.description import known_joint_layouts
from robofollow_ros.state_layout import CAMERAS, JointLayout

EPISODE_TOPIC, EPISODE_META_TOPIC, RESULT_TOPIC, EE_POSE_PREFIX = (
    topics.resolve(name) for name in (topics.EPISODE, topics.EPISODE_META, topics.RESULT, topics.EE_POSE_PREFIX)
)
"""The names bags carry (``topics.resolve``: the root namespace's, whatever namespace the recorder ran in)."""
JOINT_STATE_TOPICS = (topics.resolve(topics.CELL_JOINT_STATES), topics.resolve(topics.JOINT_STATES))
"""Where a bag's joint states are, first found first: a real cell records the cell's state (ee_pose's, in the URDF's
names and the policy's units) beside nothing else; the simulated graph records the sim's ``/joint_states``."""


@dataclass(frozen=True)
class CameraStream:
    """Images of one camera in stamp order.

    Attributes:
        t: (k,) header stamps, seconds.
        images: k arrays (h, w, 3) uint8 RGB.
    """

    t: np.ndarray
    images: list[np.ndarray]


@dataclass(frozen=True)
class EpisodeRecording:
    """Everything an episode bag holds, on the frame timeline.

    Attributes:
        meta: the episode's meta data (the typed /robofollow/episode and /robofollow/episode_meta, or the JSON
            /robofollow/episode of bags written before the typed interfaces), plus ``recovered`` (what was
            repaired) and ``warnings`` when any.
        trajectory: the referee's input.
        joint_positions: (n, 14) in the 14-D layout (grippers normalised), zero-order held; NaN for joints never
            (or not yet) seen.
        joints: the joint layout /joint_states was read with (whose names the bag carries).
        result: the last /robofollow/result JSON, or ``None``.
        cameras: camera name -> its images (only when asked for).
    """

    meta: dict[str, Any]
    trajectory: Trajectory
    joint_positions: np.ndarray
    result: dict[str, Any] | None
    joints: JointLayout
    cameras: dict[str, CameraStream] = field(default_factory=dict)


def read_episode_bag(
    path: str | Path, *, max_gap: float = MAX_GAP_S, object_poses: str = topics.OBJECT_POSE_PREFIX
) -> tuple[dict[str, Any], Trajectory]:
    """Read an episode bag (directory, ``.mcap`` or ``.db3``) for scoring.

    Args:
        path: the bag directory or a single storage file.
        max_gap: silences of a required signal longer than this (seconds) go into ``Trajectory.gaps``.
        object_poses: the prefix of the object pose topics to read: ``topics.TRUTH_POSE_PREFIX`` scores a
            tracked episode from the simulation truth fake hardware published beside the tracker.

    Returns:
        The episode meta data (``meta['recovered']`` is set when a damaged bag had to be repaired) and the
        trajectory.

    Raises:
        BagError: not a bag, unknown storage, no /robofollow/episode, no EE or gripper data, or a damaged
            bag with nothing usable left.
    """
    recording = load_episode(path, max_gap=max_gap, object_poses=object_poses)
    return recording.meta, recording.trajectory


def read_episode_meta(path: str | Path) -> dict[str, Any]:
    """The meta data of an episode bag alone (``read_episode_bag``'s first value), none of its samples read: what a
    tool needs to know which profile or task a bag is of.

    Raises:
        BagError: not a bag, unknown storage, no /robofollow/episode, or a meta message that cannot be read.
    """
    raw = read_raw(path, wanted=lambda topic: topic in (EPISODE_TOPIC, EPISODE_META_TOPIC))
    return _Assembler(Path(path), raw, default_typestore(), max_gap=MAX_GAP_S).meta()


def read_episode_result(path: str | Path) -> dict[str, Any] | None:
    """The last /robofollow/result record of a bag, ``None`` if it has none.

    Raises:
        BagError: not a bag, unknown storage, a result that is not a JSON object, or nothing readable.
    """
    raw = read_raw(path, wanted=lambda topic: topic == RESULT_TOPIC)
    return _result(default_typestore(), raw, Path(path))


def load_episode(
    path: str | Path, *, images: bool = False, max_gap: float = MAX_GAP_S, object_poses: str = topics.OBJECT_POSE_PREFIX
) -> EpisodeRecording:
    """Read everything of an episode bag: meta, trajectory, joint positions, result and optionally images.

    Args:
        path: the bag directory or a single storage file.
        images: also decode the camera images (``/<camera>/image_raw`` of ``CAMERAS``).
        max_gap: silences of a required signal longer than this (seconds) go into ``Trajectory.gaps``.
        object_poses: the prefix of the object pose topics to read (as ``read_episode_bag``).

    Raises:
        BagError: as ``read_episode_bag``.
    """
    image_topics = {topics.resolve(topics.image_topic(camera)): camera for camera in CAMERAS} if images else {}
    if object_poses == topics.OBJECT_POSE_PREFIX:
        raw = read_raw(path, wanted=lambda topic: _is_episode_topic(topic) or topic in image_topics)
    else:
        raw = _other_object_poses(path, object_poses, image_topics)
    return _Assembler(Path(path), raw, default_typestore(), max_gap=max_gap).recording(image_topics)


def _other_object_poses(path: str | Path, prefix: str, image_topics: dict[str, str]) -> RawBag:
    """The bag's episode topics with the object poses of ``prefix`` under the object pose topics' names."""

    def name(topic: str) -> str | None:
        return topics.object_name_from_topic(topic, prefix=prefix)

    def wanted(topic: str) -> bool:
        if topics.object_name_from_topic(topic) is not None:
            return False
        return name(topic) is not None or _is_episode_topic(topic) or topic in image_topics

    raw = read_raw(path, wanted=wanted)
    renamed = {}
    for topic, entry in raw.topics.items():
        found = name(topic)
        renamed[topics.resolve(topics.object_pose_topic(found)) if found is not None else topic] = entry
    if not any(topics.object_name_from_topic(topic) is not None for topic in renamed):
        raise BagError(f'{path}: no object poses under {prefix}')
    return RawBag(storage=raw.storage, topics=renamed, recovered=raw.recovered)


def _is_episode_topic(topic: str) -> bool:
    return (
        topic in (EPISODE_TOPIC, EPISODE_META_TOPIC, RESULT_TOPIC, *JOINT_STATE_TOPICS)
        or topic.startswith(EE_POSE_PREFIX)
        or topics.object_name_from_topic(topic) is not None
    )


def _typed(raw: RawBag, topic: str, msgtype: str, path: Path) -> RawTopic | None:
    entry = raw.topics.get(topic)
    if entry is not None and entry.msgtype != msgtype:
        raise BagError(f'{path}: {topic} has type {entry.msgtype}, expected {msgtype}')
    return entry if entry else None


def _result(typestore: Typestore, raw: RawBag, path: Path) -> dict[str, Any] | None:
    # A typed Result since robofollow_interfaces; JSON in a std_msgs/String in bags written before.
    entry = raw.topics.get(RESULT_TOPIC)
    if not entry:
        return None
    if entry.msgtype not in (RESULT, STRING):
        raise BagError(f'{path}: {RESULT_TOPIC} has type {entry.msgtype}, expected {RESULT} or {STRING}')
    last = max(range(len(entry)), key=lambda i: (entry.log_ns[i], i))
    if entry.msgtype == RESULT:
        return decode_result(typestore, entry.data[last], topic=RESULT_TOPIC)
    return decode_json_object(typestore, entry.data[last], topic=RESULT_TOPIC)


def _first(entry: RawTopic) -> int:
    return min(range(len(entry)), key=lambda i: (entry.log_ns[i], i))


class _Assembler:
    def __init__(self, path: Path, raw: RawBag, typestore: Typestore, *, max_gap: float) -> None:
        self.path = path
        self.raw = raw
        self.typestore = typestore
        self.max_gap_ns = round(max_gap * NS_PER_S)
        self.warnings: list[str] = []

    def recording(self, image_topics: dict[str, str]) -> EpisodeRecording:
        meta = self.meta()
        robot = meta.get('robot')
        builder = TrajectoryBuilder(
            layouts=known_joint_layouts(robot if isinstance(robot, str) else None), max_gap=self.max_gap_ns / NS_PER_S
        )
        for topic in sorted(self.raw.topics):
            if topic.startswith(EE_POSE_PREFIX) or topics.object_name_from_topic(topic) is not None:
                self.add_poses(builder, topic)
        self.add_joints(builder)
        try:
            built = builder.build(frames_are_rows=meta.get('frames_are_rows') is True)
        except TrajectoryError as error:
            raise self.error(str(error)) from None
        cameras = {camera: stream for topic, camera in image_topics.items() if (stream := self.camera(topic))}
        if self.raw.recovered:
            meta['recovered'] = self.raw.recovered
        if self.warnings:
            meta['warnings'] = self.warnings
        return EpisodeRecording(
            meta,
            built.trajectory,
            built.joint_positions,
            _result(self.typestore, self.raw, self.path),
            built.joints,
            cameras,
        )

    def typed(self, topic: str, msgtype: str) -> RawTopic | None:
        return _typed(self.raw, topic, msgtype, self.path)

    def error(self, problem: str) -> BagError:
        if self.raw.recovered:
            return BagError(f'{self.path}: damaged bag, nothing usable is left: {problem} [{self.raw.recovered}]')
        return BagError(f'{self.path}: {problem}')

    def meta(self) -> dict[str, Any]:
        # A typed EpisodeSpec (and the rest on /robofollow/episode_meta) since robofollow_interfaces; JSON in a
        # std_msgs/String in bags written before.
        entry = self.raw.topics.get(EPISODE_TOPIC)
        if not entry:
            raise self.error(f'no {EPISODE_TOPIC} message, so it is not an episode bag')
        if entry.msgtype not in (EPISODE_SPEC, STRING):
            raise self.error(f'{EPISODE_TOPIC} has type {entry.msgtype}, expected {EPISODE_SPEC} or {STRING}')
        if len({bytes(data) for data in entry.data}) > 1:
            self.warnings.append(f'{len(entry)} different {EPISODE_TOPIC} messages; the first one is used')
        first = entry.data[_first(entry)]
        if entry.msgtype == STRING:
            return decode_json_object(self.typestore, first, topic=EPISODE_TOPIC)
        fields = decode_episode_spec(self.typestore, first, topic=EPISODE_TOPIC)
        companion = self.typed(EPISODE_META_TOPIC, STRING)
        if companion is None:
            return join_meta(fields, None)
        extra = decode_json_object(self.typestore, companion.data[_first(companion)], topic=EPISODE_META_TOPIC)
        try:
            return join_meta(fields, extra)
        except BagError as error:
            raise self.error(f'{EPISODE_META_TOPIC}: {error}') from None

    def add_poses(self, builder: TrajectoryBuilder, topic: str) -> None:
        entry = self.typed(topic, POSE_STAMPED)
        if entry is None:
            if topics.object_name_from_topic(topic) is not None:
                self.warnings.append(f'{topic} has no messages; object {topics.object_name_from_topic(topic)} left out')
            return
        series = decode_poses(self.typestore, entry.data, topic=topic)
        if series.frames - {topics.WORLD_FRAME}:
            frames = ', '.join(sorted(series.frames))
            self.warnings.append(f'{topic} is in frame {frames}, expected {topics.WORLD_FRAME}; used as is')
        builder.add_poses(topic, series.stamp_ns, series.position, series.quat, log_ns=np.asarray(entry.log_ns))

    def add_joints(self, builder: TrajectoryBuilder) -> None:
        found = [(topic, entry) for topic in JOINT_STATE_TOPICS if (entry := self.typed(topic, JOINT_STATE))]
        if not found:
            return
        topic, entry = found[0]
        for data, log_ns in zip(entry.data, entry.log_ns, strict=True):
            sample = decode_joint_state(self.typestore, data, topic=topic)
            builder.add_joint_state(sample.stamp_ns, sample.names, sample.position, log_ns=log_ns)

    def camera(self, topic: str) -> CameraStream | None:
        entry = self.typed(topic, IMAGE)
        if entry is None:
            return None
        decoded = [decode_image(self.typestore, data, topic=topic) for data in entry.data]
        order = sorted(range(len(decoded)), key=lambda i: decoded[i][0])
        return CameraStream(
            np.array([decoded[i][0] for i in order], dtype=np.int64) / NS_PER_S, [decoded[i][1] for i in order]
        )
