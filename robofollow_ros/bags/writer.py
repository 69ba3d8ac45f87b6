"""Writing an evaluation episode as a rosbag2 (MCAP or SQLite3) through rosbags.

Message order: the episode message (the typed ``EpisodeSpec``, then on /robofollow/episode_meta what the spec does not
hold: ``bags/episode_meta.py``) at the first frame time (then, for a registered robot, its URDF on
/robot_description, transient local like the episode, so that RViz and Foxglove draw the arms from the bag alone);
then frame by frame the camera images, the joint states, the object poses and last the EE poses (so a frame whose EE
pose was recorded has all its other signals recorded too, even in a bag cut short); the result record at the last
frame time. Log times equal header stamps.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rosbags.interfaces import Connection, Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores
from rosbags.typesys.store import Typestore

from robofollow_ros import topics
from robofollow_ros.bags.cdr import (
    encode_episode_spec,
    encode_image,
    encode_joint_state,
    encode_pose,
    encode_result,
    encode_string,
    typestore_for,
)
from robofollow_ros.bags.conventions import (
    IMAGE,
    JOINT_STATE,
    MARKER_ARRAY,
    NS_PER_S,
    POSE_STAMPED,
    ROSBAG2_VERSION,
    STORAGES,
    STRING,
    Storage,
)
from robofollow_ros.bags.episode_meta import split_meta
from robofollow_ros.bags.markers import encode_scene_markers
from robofollow_ros.benchmark.types import ARMS, Arm, Layout
from robofollow_ros.errors import BagError, TrajectoryError
from robofollow_ros.interfaces import EPISODE_SPEC, RESULT
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.robot.description import joint_layout, load_robot
from robofollow_ros.state_layout import ACTION_DIM, GENERIC_LAYOUT, GRIP_INDEX, JointLayout
from robofollow_ros.textfiles import partial_path

IDENTITY_QUAT = (1.0, 0.0, 0.0, 0.0)
GRIPPER_TOLERANCE = 1e-9
MAX_STAMP_S = 2**31 - 1
NAME_PATTERN = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
PLUGINS = {'mcap': StoragePlugin.MCAP, 'sqlite3': StoragePlugin.SQLITE3}
_DEFAULT_DURATION = QosTime(0, 0)
LATCHED_QOS = Qos(
    QosHistory.KEEP_LAST,
    1,
    QosReliability.RELIABLE,
    QosDurability.TRANSIENT_LOCAL,
    _DEFAULT_DURATION,
    _DEFAULT_DURATION,
    QosLiveliness.AUTOMATIC,
    _DEFAULT_DURATION,
    False,
)
"""Offered QoS recorded for /robofollow/episode, /robofollow/episode_meta and /robot_description so that
``ros2 bag play`` republishes them transient-local."""


def write_episode_bag(
    path: str | Path,
    *,
    meta: Mapping[str, Any],
    trajectory: Trajectory,
    joint_positions: np.ndarray | None = None,
    images: Mapping[str, Sequence[np.ndarray | None]] | None = None,
    result: Mapping[str, Any] | None = None,
    storage: Storage = 'mcap',
    typestore: Stores | Typestore = Stores.ROS2_KILTED,
    joints: JointLayout | None = None,
    layout: Layout | None = None,
) -> Path:
    """Write one episode as a new rosbag2 directory.

    Args:
        path: bag directory to create; it must not exist.
        meta: episode description (task_id, level, layout, seed, round, arm, instruction, variant, robot, any
            other JSON value), with ``"frames_are_rows": true`` added when the trajectory's frames are executed
            action rows: its spec fields as the typed ``EpisodeSpec`` on /robofollow/episode, the rest as JSON on
            /robofollow/episode_meta (``bags/episode_meta.py``); ``read_episode_bag`` returns it unchanged.
        trajectory: frames to record; ``t`` (seconds, >= 0) becomes the header stamps. Missing orientations
            (``ee_quat`` / ``obj_quat`` entries) are written as the identity quaternion.
        joint_positions: (n, 14) states in the 14-D layout, grippers normalised (1 open, 0 closed) and equal to
            ``trajectory.grip``. Without it /joint_states carries only the gripper joints, so the bag still
            scores but cannot be replayed joint by joint.
        images: camera name -> n entries, each an (h, w, 3) uint8 RGB array or ``None`` where that frame has
            no image; written as /<camera>/image_raw (rgb8).
        result: the result record, stored as a ``robofollow_interfaces/msg/Result`` (its typed fields and the record
            as ``record_json``) on /robofollow/result at the last frame time.
        storage: ``mcap`` or ``sqlite3``.
        typestore: ROS distribution (or typestore) whose message definitions are embedded.
        joints: names and gripper scale of /joint_states (default: the layout of the robot ``meta['robot']``
            names; without one, ``state_layout.GENERIC_LAYOUT``, the names of bags made before joints were named
            after the robot).
        layout: the scene layout of the episode: its objects are also written as a ``visualization_msgs/MarkerArray``
            on /robofollow/scene_markers at every frame (shapes, sizes and colours for RViz and Foxglove).

    The bag is written inside a hidden temporary folder next to ``path`` and moved to ``path`` when complete,
    so a process killed while writing never leaves a partial bag at ``path``.

    Returns:
        The bag directory.

    Raises:
        BagError: unknown storage, existing path, meta/result that cannot be stored as JSON, or the interface
            definitions are not found.
        TrajectoryError: malformed trajectory, joint positions or images.
        SimulationError: ``meta['robot']`` is not a registered robot.
    """
    bag = Path(path)
    if storage not in STORAGES:
        raise BagError(f'unknown storage {storage!r} (supported: {", ".join(STORAGES)})')
    if bag.exists():
        raise BagError(f'{bag}: already exists; a bag is never overwritten')
    frames_ns = _frame_stamps(trajectory)
    if joints is None:
        joints = GENERIC_LAYOUT if meta.get('robot') is None else joint_layout(str(meta['robot']))
    joint_names, joint_rows = _joint_rows(trajectory, joint_positions, joints)
    cameras = _camera_images(images, len(frames_ns))
    rows = {'frames_are_rows': True} if trajectory.frames_are_rows else {}
    full_meta = {**_mapping(meta, what='meta'), **rows}
    split_meta(full_meta)  # refused before anything is written
    if result is not None:
        _json(_mapping(result, what='result'), what='result')  # refused before anything is written
    store = typestore_for(typestore) if isinstance(typestore, Stores) else typestore
    n = len(frames_ns)
    ee_quat = {arm: _quats(trajectory.ee_quat.get(arm), n, f'trajectory.ee_quat[{arm!r}]') for arm in ARMS}
    obj_quat = {
        name: _quats(trajectory.obj_quat.get(name), n, f'trajectory.obj_quat[{name!r}]') for name in trajectory.obj_pos
    }

    staging = partial_path(bag)
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    inner = staging / bag.name
    try:
        with EpisodeBagWriter(
            inner, meta=full_meta, stamp_ns=int(frames_ns[0]), storage=storage, typestore=store
        ) as out:
            if meta.get('robot') is not None:
                urdf = load_robot(str(meta['robot'])).spec.urdf_text()
                out.write_robot_description(urdf, stamp_ns=int(frames_ns[0]))
            for i, stamp in enumerate(frames_ns.tolist()):
                objects = {name: (trajectory.obj_pos[name][i], obj_quat[name][i]) for name in trajectory.obj_pos}
                if layout is not None:
                    positions = {name: pose[0] for name, pose in objects.items()}
                    quats = {name: pose[1] for name, pose in objects.items()}
                    markers = encode_scene_markers(store, layout, positions, quats, stamp_ns=stamp)
                    out.write_raw(topics.SCENE_MARKERS, MARKER_ARRAY, stamp, markers)
                out.write_frame(
                    stamp,
                    images={camera: frames[i] for camera, frames in cameras.items()},
                    joints=(joint_names, joint_rows[i]),
                    objects=objects,
                    ee={arm: (trajectory.ee[arm][i], ee_quat[arm][i]) for arm in ARMS},
                )
            if result is not None:
                out.write_result(result, stamp_ns=int(frames_ns[-1]))
        os.replace(inner, bag)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return bag


class EpisodeBagWriter:
    """Writes one episode bag message by message (the recorder node streams into it; the batch writer loops).

    The episode messages are written first. Everything written is in the file as soon as the storage flushes it;
    a writer that is killed leaves a bag that ``read_episode_bag`` recovers (``docs/bags.md``).

    Args:
        path: bag directory to create; it must not exist.
        meta: the episode's meta data (``write_episode_bag``), written as the ``EpisodeSpec`` on /robofollow/episode
            and the rest on /robofollow/episode_meta.
        stamp_ns: log time of the episode messages.
        storage: ``mcap`` or ``sqlite3``.
        typestore: ROS distribution (or typestore) whose message definitions are embedded.

    Raises:
        BagError: unknown storage, existing path, meta that cannot be stored as JSON, or the interface definitions
            are not found.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        meta: Mapping[str, Any],
        stamp_ns: int,
        storage: Storage = 'mcap',
        typestore: Stores | Typestore = Stores.ROS2_KILTED,
    ) -> None:
        self.path = Path(path)
        if storage not in STORAGES:
            raise BagError(f'unknown storage {storage!r} (supported: {", ".join(STORAGES)})')
        if self.path.exists():
            raise BagError(f'{self.path}: already exists; a bag is never overwritten')
        self.typestore = typestore_for(typestore) if isinstance(typestore, Stores) else typestore
        fields, extra = split_meta(meta)
        spec = encode_episode_spec(self.typestore, fields)
        self._writer = Writer(self.path, version=ROSBAG2_VERSION, storage_plugin=PLUGINS[storage])
        self._writer.open()
        self._connections: dict[str, Connection] = {}
        episode = self._connection(topics.EPISODE, EPISODE_SPEC, offered_qos_profiles=[LATCHED_QOS])
        self._writer.write(episode, int(stamp_ns), spec)
        companion = self._connection(topics.EPISODE_META, STRING, offered_qos_profiles=[LATCHED_QOS])
        self._writer.write(companion, int(stamp_ns), encode_string(self.typestore, extra))

    def _connection(self, topic: str, msgtype: str, **qos: Any) -> Connection:
        topic = topics.resolve(topic)  # a bag names every topic as in the root namespace (``topics``)
        connection = self._connections.get(topic)
        if connection is None:
            connection = self._writer.add_connection(topic, msgtype, typestore=self.typestore, **qos)
            self._connections[topic] = connection
        elif connection.msgtype != msgtype:
            raise BagError(f'{topic} was written as {connection.msgtype}, not {msgtype}')
        return connection

    def write_robot_description(self, urdf: str, *, stamp_ns: int) -> None:
        """Write the robot's URDF on /robot_description (recorded transient local, like robot_state_publisher's)."""
        connection = self._connection(topics.ROBOT_DESCRIPTION, STRING, offered_qos_profiles=[LATCHED_QOS])
        self._writer.write(connection, int(stamp_ns), encode_string(self.typestore, urdf))

    def write_raw(self, topic: str, msgtype: str, log_ns: int, data: bytes | memoryview) -> None:
        """Write one CDR-serialised message of type ``msgtype`` (e.g. ``sensor_msgs/msg/Image``) as received."""
        self._writer.write(self._connection(topic, msgtype), int(log_ns), bytes(data))

    def write_frame(
        self,
        stamp_ns: int,
        *,
        ee: Mapping[Arm, tuple[np.ndarray, np.ndarray]],
        joints: tuple[Sequence[str], np.ndarray],
        objects: Mapping[str, tuple[np.ndarray, np.ndarray]],
        images: Mapping[str, np.ndarray | None] | None = None,
    ) -> None:
        """Write one trajectory frame: images, joint states, object poses, then the EE poses (see module doc).

        Poses are (position (3,), quaternion w, x, y, z) in the world frame.
        """
        store = self.typestore
        for camera, pixels in (images or {}).items():
            if pixels is not None:
                message = encode_image(store, stamp_ns, topics.camera_frame(camera), pixels)
                self._writer.write(self._connection(topics.image_topic(camera), IMAGE), stamp_ns, message)
        names, positions = joints
        message = encode_joint_state(store, stamp_ns, tuple(names), positions)
        self._writer.write(self._connection(topics.JOINT_STATES, JOINT_STATE), stamp_ns, message)
        for name, (position, quat) in objects.items():
            message = encode_pose(store, stamp_ns, topics.WORLD_FRAME, position, quat)
            self._writer.write(self._connection(topics.object_pose_topic(name), POSE_STAMPED), stamp_ns, message)
        for arm, (position, quat) in ee.items():
            message = encode_pose(store, stamp_ns, topics.WORLD_FRAME, position, quat)
            self._writer.write(self._connection(topics.ee_pose_topic(arm), POSE_STAMPED), stamp_ns, message)

    def write_result(self, record: Mapping[str, Any], *, stamp_ns: int) -> None:
        """Write the result record on /robofollow/result as the graph's typed ``robofollow_interfaces/msg/Result``.

        Raises:
            BagError: the record cannot be stored as JSON, or the interface definitions are not found.
        """
        message = encode_result(self.typestore, dict(record))
        self._writer.write(self._connection(topics.RESULT, RESULT), int(stamp_ns), message)

    def close(self) -> None:
        """Finish the bag (storage index and metadata.yaml)."""
        self._writer.close()

    def __enter__(self) -> EpisodeBagWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _mapping(value: Mapping[str, Any], *, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise BagError(f'{what} must be a mapping, got {type(value).__name__}')
    return value


def _json(value: Mapping[str, Any], *, what: str) -> str:
    try:
        return json.dumps(dict(value), allow_nan=False)
    except (TypeError, ValueError) as err:
        raise BagError(f'{what} cannot be stored as JSON: {err}') from None


def _array(value: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.shape != shape:
        raise TrajectoryError(f'{what} has shape {array.shape}, expected {shape}')
    if not np.isfinite(array).all():
        raise TrajectoryError(f'{what} holds non-finite values')
    return array


def _frame_stamps(trajectory: Trajectory) -> np.ndarray:
    t = np.asarray(trajectory.t, dtype=np.float64)
    if t.ndim != 1 or t.size == 0:
        raise TrajectoryError(f'trajectory.t must be a non-empty 1-D array, got shape {t.shape}')
    n = t.shape[0]
    _array(t, (n,), 'trajectory.t')
    if t[0] < 0 or t[-1] > MAX_STAMP_S:
        raise TrajectoryError(f'trajectory.t must lie in [0, {MAX_STAMP_S}] s to fit a ROS time stamp')
    stamps = np.round(t * NS_PER_S).astype(np.int64)
    if (np.diff(stamps) <= 0).any():
        raise TrajectoryError('trajectory.t must be strictly increasing (at nanosecond resolution)')
    for arm in ARMS:
        if arm not in trajectory.ee or arm not in trajectory.grip:
            raise TrajectoryError(f'trajectory has no ee/grip entry for the {arm} arm')
        _array(trajectory.ee[arm], (n, 3), f'trajectory.ee[{arm!r}]')
        _array(trajectory.grip[arm], (n,), f'trajectory.grip[{arm!r}]')
    for name, position in trajectory.obj_pos.items():
        if not NAME_PATTERN.fullmatch(name):
            raise TrajectoryError(f'object name {name!r} cannot be part of a topic name')
        _array(position, (n, 3), f'trajectory.obj_pos[{name!r}]')
    if unknown := set(trajectory.obj_quat) - set(trajectory.obj_pos):
        raise TrajectoryError(f'trajectory.obj_quat names objects without positions: {sorted(unknown)}')
    return stamps


def _quats(value: Any, n: int, what: str) -> np.ndarray:
    if value is None or np.size(value) == 0:
        return np.tile(IDENTITY_QUAT, (n, 1))
    return _array(value, (n, 4), what)


def _joint_rows(
    trajectory: Trajectory, joint_positions: np.ndarray | None, layout: JointLayout
) -> tuple[tuple[str, ...], np.ndarray]:
    n = len(trajectory)
    grippers = np.stack([np.asarray(trajectory.grip[arm], dtype=np.float64) for arm in ARMS], axis=1)
    columns = [GRIP_INDEX[arm] for arm in ARMS]
    if joint_positions is None:
        states = np.zeros((n, ACTION_DIM))
        states[:, columns] = grippers
        carried = {*layout.grippers.values(), *(name for names in layout.gripper_mimics.values() for name in names)}
        kept = [i for i, name in enumerate(layout.published_names) if name in carried]
        return tuple(layout.published_names[i] for i in kept), np.ascontiguousarray(layout.to_joints(states)[:, kept])
    states = _array(joint_positions, (n, ACTION_DIM), 'joint_positions')
    if not np.allclose(states[:, columns], grippers, rtol=0.0, atol=GRIPPER_TOLERANCE):
        raise TrajectoryError('joint_positions gripper columns differ from trajectory.grip')
    return layout.published_names, layout.to_joints(states)


def _camera_images(
    images: Mapping[str, Sequence[np.ndarray | None]] | None, n: int
) -> dict[str, Sequence[np.ndarray | None]]:
    if not images:
        return {}
    for camera, frames in images.items():
        if not NAME_PATTERN.fullmatch(camera):
            raise TrajectoryError(f'camera name {camera!r} cannot be part of a topic name')
        if len(frames) != n:
            raise TrajectoryError(f'images[{camera!r}] has {len(frames)} entries, expected one per frame ({n})')
        for i, pixels in enumerate(frames):
            if pixels is None:
                continue
            if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] != 3:
                raise TrajectoryError(
                    f'images[{camera!r}][{i}] must be (h, w, 3) uint8 RGB, got {pixels.shape} {pixels.dtype}'
                )
    return dict(images)
