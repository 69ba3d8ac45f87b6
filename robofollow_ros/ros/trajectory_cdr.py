"""``trajectory_msgs/JointTrajectory`` as CDR bytes, written and read without rclpy message objects.

A chunk crosses the graph as one JointTrajectory per arm for every policy query. Building the message as Python
objects (one ``JointTrajectoryPoint`` per row) and letting rclpy convert it cost the bridge ~150 µs per arm and the
sim ~85 µs to read it back; these bytes take ~15 µs either way (``docs/graph.md``). The layout is plain CDR, little
endian, the one rclpy writes (a test checks that rclpy reads these bytes as the message built field by field, and
that ``decode_trajectory`` reads what rclpy writes, velocities and all).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros.errors import GraphError
from robofollow_ros.referee.timeline import NS_PER_S

CDR_LITTLE_ENDIAN = b'\x00\x01\x00\x00'
_HEADER = len(CDR_LITTLE_ENDIAN)
_U32 = struct.Struct('<I')
_TIME = struct.Struct('<iI')
_DOUBLE = 8
_OTHER_ARRAYS = 3
"""velocities, accelerations and effort: written empty, skipped when read."""


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


class _Writer:
    def __init__(self) -> None:
        self.buffer = bytearray(CDR_LITTLE_ENDIAN)

    def align(self, size: int) -> None:
        self.buffer.extend(bytes(-(len(self.buffer) - _HEADER) % size))

    def u32(self, value: int) -> None:
        self.align(4)
        self.buffer.extend(_U32.pack(value))

    def time(self, stamp_ns: int) -> None:
        self.align(4)
        self.buffer.extend(_TIME.pack(*divmod(int(stamp_ns), NS_PER_S)))

    def string(self, text: str) -> None:
        encoded = text.encode()
        self.u32(len(encoded) + 1)
        self.buffer.extend(encoded)
        self.buffer.append(0)

    def doubles(self, values: np.ndarray) -> None:
        self.u32(len(values))
        if len(values):
            self.align(_DOUBLE)
            self.buffer.extend(np.ascontiguousarray(values, dtype='<f8').tobytes())


def encode_trajectory(
    names: Sequence[str], positions: np.ndarray, *, stamp_ns: int, row_seconds: float, frame_id: str = ''
) -> bytes:
    """A JointTrajectory whose point i holds ``positions[i]`` and is due ``(i + 1) * row_seconds`` after
    ``stamp_ns``; no points for an empty ``positions`` (the JointTrajectoryController's "stop and hold")."""
    rows = np.asarray(positions, dtype=np.float64).reshape(-1, len(names))
    writer = _Writer()
    writer.time(stamp_ns)
    writer.string(frame_id)
    writer.u32(len(names))
    for name in names:
        writer.string(name)
    writer.u32(len(rows))
    empty = np.zeros(0)
    for index, row in enumerate(rows):
        writer.doubles(row)
        for _ in range(_OTHER_ARRAYS):
            writer.doubles(empty)
        writer.time(round((index + 1) * row_seconds * NS_PER_S))
    return bytes(writer.buffer)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.at = _HEADER

    def align(self, size: int) -> None:
        self.at += -(self.at - _HEADER) % size

    def u32(self) -> int:
        self.align(4)
        (value,) = _U32.unpack_from(self.data, self.at)
        self.at += 4
        return value

    def time(self) -> int:
        self.align(4)
        sec, nanosec = _TIME.unpack_from(self.data, self.at)
        self.at += 8
        return sec * NS_PER_S + nanosec

    def count(self, size: int) -> int:
        value = self.u32()
        if value * size > len(self.data) - self.at:
            raise GraphError(f'a sequence of {value} elements runs past the end of the message')
        return value

    def string(self) -> str:
        length = self.count(1)
        if length == 0:
            return ''
        text = bytes(self.data[self.at : self.at + length - 1]).decode()
        self.at += length
        return text

    def _doubles(self) -> tuple[int, int]:
        length = self.count(_DOUBLE)
        if length:
            self.align(_DOUBLE)
            if self.at + length * _DOUBLE > len(self.data):
                raise GraphError('a float64 sequence runs past the end of the message')
        start = self.at
        self.at += length * _DOUBLE
        return start, length

    def doubles_into(self, out: np.ndarray) -> int:
        """Read a float64 sequence into ``out`` if it has ``len(out)`` values; returns its length."""
        start, length = self._doubles()
        if length == len(out):
            out[:] = _packed_doubles(length).unpack_from(self.data, start)
        return length

    def skip_doubles(self) -> None:
        self._doubles()


@functools.cache
def _packed_doubles(count: int) -> struct.Struct:
    return struct.Struct(f'<{count}d')


def decode_trajectory(data: bytes) -> TrajectoryRows:
    """Read a serialised JointTrajectory (any velocities, accelerations, efforts and durations are skipped).

    Raises:
        GraphError: not little-endian CDR, truncated or malformed bytes, or a point whose number of positions
            differs from the number of joint names.
    """
    if bytes(data[:2]) != CDR_LITTLE_ENDIAN[:2]:
        raise GraphError('a JointTrajectory must be little-endian CDR')
    reader = _Reader(data)
    try:
        stamp_ns = reader.time()
        reader.string()
        names = [reader.string() for _ in range(reader.count(4))]
        points = reader.count(4 * (2 + _OTHER_ARRAYS))
        rows = np.empty((points, len(names)))
        for index in range(points):
            if reader.doubles_into(rows[index]) != len(names):
                raise GraphError(f'trajectory points must have {len(names)} positions each')
            for _ in range(_OTHER_ARRAYS):
                reader.skip_doubles()
            reader.time()
    except (struct.error, UnicodeDecodeError) as error:
        raise GraphError(f'malformed JointTrajectory: {error}') from None
    return TrajectoryRows(stamp_ns=stamp_ns, names=names, positions=rows)
