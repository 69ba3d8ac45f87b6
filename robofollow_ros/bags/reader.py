"""Reading an episode bag back into the referee's ``Trajectory`` (works without ROS installed).

Frames are the header stamps of the EE pose messages of both arms. Every other signal is zero-order held
(its latest sample at or before the frame). Frames before every required signal (both EE poses, both
grippers, every object pose) has a sample are dropped. Header stamps are the time base; the bag's log
(receive) times only order messages with equal stamps.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rosbags.typesys.store import Typestore

from robofollow_ros import topics
from robofollow_ros.bags.cdr import (
    decode_image,
    decode_joint_state,
    decode_json_object,
    decode_poses,
    default_typestore,
)
from robofollow_ros.bags.conventions import (
    GRIPPER_JOINTS,
    IMAGE,
    JOINT_NAMES,
    JOINT_STATE,
    MAX_GAP_S,
    NS_PER_S,
    POSE_STAMPED,
    STRING,
)
from robofollow_ros.bags.raw import RawBag, RawTopic
from robofollow_ros.bags.storage import read_raw
from robofollow_ros.bags.timeline import Signal, frame_times, gaps, hold, hold_or_nan
from robofollow_ros.benchmark.types import ARMS, Arm
from robofollow_ros.errors import BagError
from robofollow_ros.referee.trajectory import Trajectory


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
        meta: the /robofollow/episode JSON, plus ``recovered`` (what was repaired) and ``warnings`` when any.
        trajectory: the referee's input.
        joint_positions: (n, 14) ``JOINT_NAMES`` order, zero-order held; NaN for joints never (or not yet) seen.
        result: the last /robofollow/result JSON, or ``None``.
        cameras: camera name -> its images (only when asked for).
    """

    meta: dict[str, Any]
    trajectory: Trajectory
    joint_positions: np.ndarray
    result: dict[str, Any] | None
    cameras: dict[str, CameraStream] = field(default_factory=dict)


def read_episode_bag(path: str | Path, *, max_gap: float = MAX_GAP_S) -> tuple[dict[str, Any], Trajectory]:
    """Read an episode bag (directory, ``.mcap`` or ``.db3``) for scoring.

    Args:
        path: the bag directory or a single storage file.
        max_gap: silences of a required signal longer than this (seconds) go into ``Trajectory.gaps``.

    Returns:
        The episode meta data (``meta['recovered']`` is set when a damaged bag had to be repaired) and the
        trajectory.

    Raises:
        BagError: not a bag, unknown storage, no /robofollow/episode, no EE or gripper data, or a damaged
            bag with nothing usable left.
    """
    recording = load_episode(path, max_gap=max_gap)
    return recording.meta, recording.trajectory


def read_episode_result(path: str | Path) -> dict[str, Any] | None:
    """The last /robofollow/result record of a bag, ``None`` if it has none.

    Raises:
        BagError: not a bag, unknown storage, a result that is not a JSON object, or nothing readable.
    """
    raw = read_raw(path, wanted=lambda topic: topic == topics.RESULT)
    return _result(default_typestore(), raw, Path(path))


def load_episode(path: str | Path, *, images: bool = False, max_gap: float = MAX_GAP_S) -> EpisodeRecording:
    """Read everything of an episode bag: meta, trajectory, joint positions, result and optionally images.

    Args:
        path: the bag directory or a single storage file.
        images: also decode the camera images (``/<camera>/image_raw`` of ``topics.CAMERAS``).
        max_gap: silences of a required signal longer than this (seconds) go into ``Trajectory.gaps``.

    Raises:
        BagError: as ``read_episode_bag``.
    """
    image_topics = {topics.image_topic(camera): camera for camera in topics.CAMERAS} if images else {}
    raw = read_raw(path, wanted=lambda topic: _is_episode_topic(topic) or topic in image_topics)
    return _Assembler(Path(path), raw, default_typestore(), max_gap=max_gap).recording(image_topics)


def _is_episode_topic(topic: str) -> bool:
    return (
        topic in (topics.EPISODE, topics.RESULT, topics.JOINT_STATES)
        or topic.startswith(topics.EE_POSE_PREFIX)
        or topics.object_name_from_topic(topic) is not None
    )


def _typed(raw: RawBag, topic: str, msgtype: str, path: Path) -> RawTopic | None:
    entry = raw.topics.get(topic)
    if entry is not None and entry.msgtype != msgtype:
        raise BagError(f'{path}: {topic} has type {entry.msgtype}, expected {msgtype}')
    return entry if entry else None


def _result(typestore: Typestore, raw: RawBag, path: Path) -> dict[str, Any] | None:
    entry = _typed(raw, topics.RESULT, STRING, path)
    if entry is None:
        return None
    last = max(range(len(entry)), key=lambda i: (entry.log_ns[i], i))
    return decode_json_object(typestore, entry.data[last], topic=topics.RESULT)


class _Assembler:
    def __init__(self, path: Path, raw: RawBag, typestore: Typestore, *, max_gap: float) -> None:
        self.path = path
        self.raw = raw
        self.typestore = typestore
        self.max_gap_ns = round(max_gap * NS_PER_S)
        self.warnings: list[str] = []

    def recording(self, image_topics: dict[str, str]) -> EpisodeRecording:
        meta = self.meta()
        ee = {arm: self.ee(arm) for arm in ARMS}
        joints = self.joints()
        grip = {arm: self.gripper(arm, joints) for arm in ARMS}
        objects = self.objects()
        required = [*(ee[arm][0] for arm in ARMS), *grip.values(), *(pose for pose, _ in objects.values())]
        frames = frame_times([ee[arm][0] for arm in ARMS], required)
        if frames.size == 0:
            latest = max(required, key=lambda signal: signal.first_ns)
            raise self.error(
                f'no EE pose after every required signal has appeared '
                f'({latest.name} starts at {latest.first_ns / NS_PER_S:.3f} s)'
            )
        trajectory = Trajectory(
            t=frames / NS_PER_S,
            ee={arm: hold(ee[arm][0], frames) for arm in ARMS},
            grip={arm: hold(grip[arm], frames) for arm in ARMS},
            obj_pos={name: hold(pose, frames) for name, (pose, _) in objects.items()},
            ee_quat={arm: hold(ee[arm][1], frames) for arm in ARMS},
            obj_quat={name: hold(quat, frames) for name, (_, quat) in objects.items()},
            gaps=gaps(required, frames, max_gap_ns=self.max_gap_ns),
            frames_are_rows=meta.get('frames_are_rows') is True,
        )
        joint_positions = np.stack([hold_or_nan(joints.get(name), frames) for name in JOINT_NAMES], axis=1)
        cameras = {camera: stream for topic, camera in image_topics.items() if (stream := self.camera(topic))}
        if self.raw.recovered:
            meta['recovered'] = self.raw.recovered
        if self.warnings:
            meta['warnings'] = self.warnings
        return EpisodeRecording(
            meta, trajectory, joint_positions, _result(self.typestore, self.raw, self.path), cameras
        )

    def typed(self, topic: str, msgtype: str) -> RawTopic | None:
        return _typed(self.raw, topic, msgtype, self.path)

    def error(self, problem: str) -> BagError:
        if self.raw.recovered:
            return BagError(f'{self.path}: damaged bag, nothing usable is left: {problem} [{self.raw.recovered}]')
        return BagError(f'{self.path}: {problem}')

    def meta(self) -> dict[str, Any]:
        entry = self.typed(topics.EPISODE, STRING)
        if entry is None:
            raise self.error(f'no {topics.EPISODE} message, so it is not an episode bag')
        first = min(range(len(entry)), key=lambda i: (entry.log_ns[i], i))
        meta = decode_json_object(self.typestore, entry.data[first], topic=topics.EPISODE)
        if len({bytes(data) for data in entry.data}) > 1:
            self.warnings.append(f'{len(entry)} different {topics.EPISODE} messages; the first one is used')
        return meta

    def poses(self, topic: str) -> tuple[Signal, Signal] | None:
        entry = self.typed(topic, POSE_STAMPED)
        if entry is None:
            return None
        series = decode_poses(self.typestore, entry.data, topic=topic)
        if series.frames - {topics.WORLD_FRAME}:
            frames = ', '.join(sorted(series.frames))
            self.warnings.append(f'{topic} is in frame {frames}, expected {topics.WORLD_FRAME}; used as is')
        log_ns = np.asarray(entry.log_ns, dtype=np.int64)
        position = Signal.sorted(topic, series.stamp_ns, series.position, log_ns=log_ns)
        quat = Signal.sorted(topic, series.stamp_ns, series.quat, log_ns=log_ns)
        return position, quat

    def ee(self, arm: Arm) -> tuple[Signal, Signal]:
        topic = topics.ee_pose_topic(arm)
        signals = self.poses(topic)
        if signals is None:
            raise self.error(f'no EE pose data for the {arm} arm ({topic})')
        return signals

    def objects(self) -> dict[str, tuple[Signal, Signal]]:
        found: dict[str, tuple[Signal, Signal]] = {}
        for topic in sorted(self.raw.topics):
            name = topics.object_name_from_topic(topic)
            if name is None:
                continue
            signals = self.poses(topic)
            if signals is None:
                self.warnings.append(f'{topic} has no messages; object {name} left out')
            else:
                found[name] = signals
        return found

    def joints(self) -> dict[str, Signal]:
        entry = self.typed(topics.JOINT_STATES, JOINT_STATE)
        if entry is None:
            return {}
        stamps: dict[str, list[int]] = defaultdict(list)
        logs: dict[str, list[int]] = defaultdict(list)
        values: dict[str, list[float]] = defaultdict(list)
        for data, log_ns in zip(entry.data, entry.log_ns, strict=True):
            sample = decode_joint_state(self.typestore, data, topic=topics.JOINT_STATES)
            for name, position in zip(sample.names, sample.position, strict=False):
                stamps[name].append(sample.stamp_ns)
                logs[name].append(log_ns)
                values[name].append(float(position))
        return {
            name: Signal.sorted(
                f'{topics.JOINT_STATES}[{name}]',
                np.array(stamps[name]),
                np.array(values[name]),
                log_ns=np.array(logs[name]),
            )
            for name in stamps
        }

    def gripper(self, arm: Arm, joints: dict[str, Signal]) -> Signal:
        signal = joints.get(GRIPPER_JOINTS[arm])
        if signal is None:
            raise self.error(f'no gripper data for the {arm} arm ({GRIPPER_JOINTS[arm]} in {topics.JOINT_STATES})')
        return signal

    def camera(self, topic: str) -> CameraStream | None:
        entry = self.typed(topic, IMAGE)
        if entry is None:
            return None
        decoded = [decode_image(self.typestore, data, topic=topic) for data in entry.data]
        order = sorted(range(len(decoded)), key=lambda i: decoded[i][0])
        return CameraStream(
            np.array([decoded[i][0] for i in order], dtype=np.int64) / NS_PER_S, [decoded[i][1] for i in order]
        )
