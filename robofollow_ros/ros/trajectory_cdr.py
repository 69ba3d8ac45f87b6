"""``trajectory_msgs/JointTrajectory`` as CDR bytes, through the rosbags typestore rather than rclpy message objects.

A chunk crosses the graph as one JointTrajectory per arm for every policy query. Building the message as rclpy
objects (one ``JointTrajectoryPoint`` per row) and letting rclpy convert it cost the bridge ~150 µs per arm and the
sim ~85 µs to read it back; the typestore's generated code takes ~55 and ~65 µs for a 10-row chunk
(``docs/graph.md``). The bytes are the ones rclpy writes (a test checks that rclpy reads them as the message built
field by field, and that ``decode_trajectory`` reads what rclpy writes, velocities and all).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros.bags.cdr import CDR_LITTLE_ENDIAN, default_typestore, deserialize
from robofollow_ros.errors import BagError, GraphError
from robofollow_ros.referee.timeline import NS_PER_S

JOINT_TRAJECTORY = 'trajectory_msgs/msg/JointTrajectory'


@dataclass(frozen=True)
class TrajectoryRows:
    """What the sim needs of a JointTrajectory.

    Attributes:
        stamp_ns: ``header.stamp``.
        names: ``joint_names``.
        positions: (T, len(names)) float64, one row per point.
    """

    stamp_ns: int
    names: list[str]
    positions: np.ndarray


def encode_trajectory(
    names: Sequence[str], positions: np.ndarray, *, stamp_ns: int, row_seconds: float, frame_id: str = ''
) -> bytes:
    """A JointTrajectory whose point i holds ``positions[i]`` and is due ``(i + 1) * row_seconds`` after
    ``stamp_ns``; no points for an empty ``positions`` (the JointTrajectoryController's "stop and hold")."""
    store = default_typestore()
    types = store.types
    time, duration = types['builtin_interfaces/msg/Time'], types['builtin_interfaces/msg/Duration']
    point, empty = types['trajectory_msgs/msg/JointTrajectoryPoint'], np.zeros(0)
    rows = np.asarray(positions, dtype=np.float64).reshape(-1, len(names))
    message = types[JOINT_TRAJECTORY](
        header=types['std_msgs/msg/Header'](stamp=time(*divmod(int(stamp_ns), NS_PER_S)), frame_id=frame_id),
        joint_names=list(names),
        points=[
            point(
                positions=row,
                velocities=empty,
                accelerations=empty,
                effort=empty,
                time_from_start=duration(*divmod(round((index + 1) * row_seconds * NS_PER_S), NS_PER_S)),
            )
            for index, row in enumerate(rows)
        ],
    )
    return bytes(store.serialize_cdr(message, JOINT_TRAJECTORY))


def warm_trajectory_codec() -> None:
    """Build the typestore and its JointTrajectory code now: the first encode and decode cost ~130 ms, which a node
    would otherwise pay in the middle of its first episode."""
    decode_trajectory(encode_trajectory(['joint'], np.zeros((1, 1)), stamp_ns=0, row_seconds=0.1))


def decode_trajectory(data: bytes) -> TrajectoryRows:
    """Read a serialised JointTrajectory (any velocities, accelerations, efforts and durations are skipped).

    Raises:
        GraphError: not little-endian CDR, truncated or malformed bytes, or a point whose number of positions
            differs from the number of joint names.
    """
    if len(data) < 2 or data[1] != CDR_LITTLE_ENDIAN:
        raise GraphError('a JointTrajectory must be little-endian CDR')
    try:
        message = deserialize(default_typestore(), data, JOINT_TRAJECTORY, topic='JointTrajectory')
    except BagError as error:
        raise GraphError(f'malformed {error}') from None
    names = list(message.joint_names)
    if any(len(point.positions) != len(names) for point in message.points):
        raise GraphError(f'trajectory points must have {len(names)} positions each')
    positions = np.array([point.positions for point in message.points], dtype=np.float64).reshape(-1, len(names))
    return TrajectoryRows(
        stamp_ns=message.header.stamp.sec * NS_PER_S + message.header.stamp.nanosec, names=names, positions=positions
    )
