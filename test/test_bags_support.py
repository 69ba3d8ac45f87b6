"""Shared helpers of the bag tests: synthetic episodes and raw bags written straight through rosbags."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from robofollow_ros.referee.trajectory import Trajectory

TS = get_typestore(Stores.ROS2_KILTED)
SPEC = 'robofollow_interfaces/msg/EpisodeSpec'
SPEC_TS = get_typestore(Stores.ROS2_KILTED)
SPEC_TS.register(
    get_types_from_msg(
        (Path(__file__).resolve().parents[1] / 'robofollow_interfaces' / 'msg' / 'EpisodeSpec.msg').read_text(), SPEC
    )
)
"""A typestore that knows the EpisodeSpec from its .msg file (independent of the code under test)."""
STRING = 'std_msgs/msg/String'
POSE = 'geometry_msgs/msg/PoseStamped'
JOINTS = 'sensor_msgs/msg/JointState'
IMAGE = 'sensor_msgs/msg/Image'
META = {
    'task_id': 'S1_L0_pick_red_sphere',
    'level': 'L0',
    'layout': 'default',
    'seed': 1042,
    'round': 0,
    'arm': 'right',
    'instruction': 'pick up the red sphere',
    'variant': 'corrected',
}
OBJECTS = ('red_sphere', 'blue_bowl', 'yellow_block_1')


def unit_quats(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 4) random unit quaternions (w, x, y, z)."""
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def synthetic_trajectory(n: int = 120, *, dt: float = 0.02, t0: float = 5.0, seed: int = 0) -> Trajectory:
    """A trajectory whose every column changes at every frame (so a held value is never equal by chance)."""
    rng = np.random.default_rng(seed)
    return Trajectory(
        t=t0 + dt * np.arange(n),
        ee={arm: rng.normal(size=(n, 3)) for arm in ('left', 'right')},
        grip={arm: rng.random(n) for arm in ('left', 'right')},
        obj_pos={name: rng.normal(size=(n, 3)) for name in OBJECTS},
        ee_quat={arm: unit_quats(rng, n) for arm in ('left', 'right')},
        obj_quat={name: unit_quats(rng, n) for name in OBJECTS},
    )


def time_msg(stamp_ns: int):
    return TS.types['builtin_interfaces/msg/Time'](sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)


def header(stamp_ns: int, frame: str = 'world'):
    return TS.types['std_msgs/msg/Header'](stamp=time_msg(stamp_ns), frame_id=frame)


def pose_cdr(stamp_ns: int, xyz, wxyz=(1.0, 0.0, 0.0, 0.0), frame: str = 'world') -> bytes:
    """CDR of a PoseStamped built directly with the rosbags typestore (independent of the code under test)."""
    types = TS.types
    pose = types['geometry_msgs/msg/Pose'](
        position=types['geometry_msgs/msg/Point'](x=float(xyz[0]), y=float(xyz[1]), z=float(xyz[2])),
        orientation=types['geometry_msgs/msg/Quaternion'](
            w=float(wxyz[0]), x=float(wxyz[1]), y=float(wxyz[2]), z=float(wxyz[3])
        ),
    )
    return bytes(TS.serialize_cdr(types[POSE](header=header(stamp_ns, frame), pose=pose), POSE))


def joints_cdr(stamp_ns: int, names: list[str], position: list[float]) -> bytes:
    empty = np.zeros(0)
    msg = TS.types[JOINTS](
        header=header(stamp_ns, ''), name=names, position=np.array(position, float), velocity=empty, effort=empty
    )
    return bytes(TS.serialize_cdr(msg, JOINTS))


def string_cdr(text: str) -> bytes:
    return bytes(TS.serialize_cdr(TS.types[STRING](data=text), STRING))


def spec_cdr(*, version: int = 1, **fields) -> bytes:
    """CDR of an EpisodeSpec (fields not given are empty or 0)."""
    kind = SPEC_TS.types[SPEC]
    defaults = {name: 0 if name in ('seed', 'round') else '' for name in kind.__dataclass_fields__ if name != 'version'}
    return bytes(SPEC_TS.serialize_cdr(kind(version=version, **{**defaults, **fields}), SPEC))


def write_raw_bag(
    path: Path, messages: Iterable[tuple[str, str, int, bytes]], *, storage: StoragePlugin = StoragePlugin.MCAP
) -> Path:
    """Write (topic, msgtype, log time ns, cdr) tuples as a rosbag2, in the order given."""
    with Writer(path, version=9, storage_plugin=storage) as writer:
        connections = {}
        for topic, msgtype, log_ns, data in messages:
            if topic not in connections:
                connections[topic] = writer.add_connection(topic, msgtype, typestore=SPEC_TS)
            writer.write(connections[topic], log_ns, data)
    return path
