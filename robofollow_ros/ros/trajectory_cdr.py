"""``trajectory_msgs/JointTrajectory`` as CDR bytes, through the rosbags typestore rather than rclpy message objects.

A chunk crosses the graph as one JointTrajectory per arm for every policy query. Building the message as rclpy
objects (one ``JointTrajectoryPoint`` per row) and letting rclpy convert it cost the bridge ~150 µs per arm and the
sim ~85 µs to read it back; the typestore's generated code takes ~55 and ~65 µs for a 10-row chunk
(``docs/graph.md``). The bytes are the ones rclpy writes (a test checks that rclpy reads them as the message built
field by field, and that ``decode_trajectory`` reads what rclpy writes, velocities and all).

The messages follow the ros2_control JointTrajectoryController's interface (``safety/jtc.py``): ``header.stamp``
zero ("start now"), point i due ``(i + 1)`` row periods from then. Which observation a chunk answers travels
beside them, in a ``ChunkTicket`` that names each arm's message by ``trajectory_digest`` (``ros/protocol.py``): a
digest of its content, since rclpy leaves padding bytes of the CDR it writes uninitialised (the bytes of one message
differ from one serialisation to the next).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros.bags.cdr import CDR_LITTLE_ENDIAN, default_typestore, deserialize
from robofollow_ros.errors import BagError, GraphError
from robofollow_ros.units import NS_PER_S

JOINT_TRAJECTORY = 'trajectory_msgs/msg/JointTrajectory'


@dataclass(frozen=True)
class TrajectoryRows:
    """What the sim needs of a JointTrajectory.

    Attributes:
        stamp_ns: ``header.stamp``.
        names: ``joint_names``.
        positions: (T, len(names)) float64, one row per point.
        times_ns: (T,) int64, each point's ``time_from_start``.
    """

    stamp_ns: int
    names: list[str]
    positions: np.ndarray
    times_ns: np.ndarray

    def digest(self) -> int:
        """``trajectory_digest`` of these rows."""
        return trajectory_digest(self.names, self.positions, self.times_ns)


def row_times_ns(rows: int, row_seconds: float) -> np.ndarray:
    """``time_from_start`` of ``rows`` points one row period apart, the first one period from the start (ns)."""
    return np.array([round((index + 1) * row_seconds * NS_PER_S) for index in range(rows)], dtype=np.int64)


def trajectory_digest(names: Sequence[str], positions: np.ndarray, times_ns: np.ndarray) -> int:
    """The 64-bit digest (BLAKE2b) of a trajectory's joint names, positions (as float64) and point times, by which a
    ``ChunkTicket`` names the commands it covers: equal digests mean the same command."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update('\0'.join(names).encode())
    digest.update(np.ascontiguousarray(positions, dtype='<f8').tobytes())
    digest.update(np.ascontiguousarray(times_ns, dtype='<i8').tobytes())
    return int.from_bytes(digest.digest(), 'little')


def encode_trajectory(names: Sequence[str], positions: np.ndarray, *, row_seconds: float, frame_id: str = '') -> bytes:
    """A JointTrajectory that starts when it arrives (``header.stamp`` zero) and whose point i holds ``positions[i]``,
    due ``(i + 1) * row_seconds`` from then. ``positions`` must have a row: a JointTrajectoryController rejects an
    empty trajectory (ros2_controllers#902), so a hold is one row at the measured position.

    Raises:
        GraphError: no rows, or a ``row_seconds`` that is not positive.
    """
    store = default_typestore()
    types = store.types
    time, duration = types['builtin_interfaces/msg/Time'], types['builtin_interfaces/msg/Duration']
    point, empty = types['trajectory_msgs/msg/JointTrajectoryPoint'], np.zeros(0)
    rows = np.asarray(positions, dtype=np.float64).reshape(-1, len(names))
    if not len(rows) or not row_seconds > 0:
        raise GraphError(
            f'a JointTrajectory needs at least one row and a positive row period ({len(rows)} rows, {row_seconds} s)'
        )
    message = types[JOINT_TRAJECTORY](
        header=types['std_msgs/msg/Header'](stamp=time(0, 0), frame_id=frame_id),
        joint_names=list(names),
        points=[
            point(
                positions=row,
                velocities=empty,
                accelerations=empty,
                effort=empty,
                time_from_start=duration(*divmod(int(due_ns), NS_PER_S)),
            )
            for row, due_ns in zip(rows, row_times_ns(len(rows), row_seconds), strict=True)
        ],
    )
    return bytes(store.serialize_cdr(message, JOINT_TRAJECTORY))


def warm_trajectory_codec() -> None:
    """Build the typestore and its JointTrajectory code now: the first encode and decode cost ~130 ms, which a node
    would otherwise pay in the middle of its first episode."""
    decode_trajectory(encode_trajectory(['joint'], np.zeros((1, 1)), row_seconds=0.1))


def decode_trajectory(data: bytes) -> TrajectoryRows:
    """Read a serialised JointTrajectory (any velocities, accelerations and efforts are skipped).

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
    times_ns = np.array(
        [point.time_from_start.sec * NS_PER_S + point.time_from_start.nanosec for point in message.points],
        dtype=np.int64,
    )
    return TrajectoryRows(
        stamp_ns=message.header.stamp.sec * NS_PER_S + message.header.stamp.nanosec,
        names=names,
        positions=positions,
        times_ns=times_ns,
    )
