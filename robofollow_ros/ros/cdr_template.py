"""``CdrTemplate``: a message serialised once, whose stamp and float64 fields are patched in place for each publish.

The sim publishes about 14 messages for every executed row. Building each as a Python message object and letting
rclpy convert it cost about 2.5 times what publishing patched CDR bytes costs (``docs/graph.md``), and those
publishes are on the critical path of every synchronous episode.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from rclpy.serialization import serialize_message

from robofollow_ros.errors import GraphError
from robofollow_ros.state_layout import Numbers
from robofollow_ros.units import NS_PER_S

_PROBE_STAMP_NS = 0x1234_5678 * NS_PER_S + 0x0BAD_CAFE
_STAMP = struct.Struct('<iI')


class CdrTemplate:
    """Little-endian CDR bytes of one message shape with a header stamp and ``count`` consecutive float64 fields.

    Args:
        build: makes the message from a stamp (ns) and ``count`` values; called once, with probe values, to find
            where the stamp and the values sit in the serialised bytes.
        count: how many float64 values ``fill`` patches.

    Raises:
        GraphError: the probe stamp or values cannot be found in the serialised message (``build`` does not put
            them in as one stamp and one run of float64 fields).
    """

    def __init__(self, build: Callable[[int, Sequence[float]], Any], *, count: int) -> None:
        probe = [1.0 + (index + 1) / 1024 for index in range(count)]
        data = serialize_message(build(_PROBE_STAMP_NS, probe))
        self.values = struct.Struct(f'<{count}d')
        self.stamp_at = data.find(_STAMP.pack(*divmod(_PROBE_STAMP_NS, NS_PER_S)))
        self.values_at = data.find(self.values.pack(*probe)) if count else 0
        if self.stamp_at < 0 or self.values_at < 0:
            raise GraphError('a CDR template must hold its stamp and its float64 values as they were given')
        self.buffer = bytearray(data)

    def fill(self, stamp_ns: int, values: Numbers = ()) -> bytes:
        """The serialised message with ``stamp_ns`` and ``values`` (``count`` floats) patched in."""
        _STAMP.pack_into(self.buffer, self.stamp_at, *divmod(int(stamp_ns), NS_PER_S))
        if self.values.size:
            self.values.pack_into(self.buffer, self.values_at, *_floats(values))
        return bytes(self.buffer)


class FrameMessages:
    """The per-row messages of the sim as CDR bytes: ``/clock``, ``/joint_states`` and PoseStamped.

    Args:
        joint_names: the names ``/joint_states`` carries, in the order of the state values.
        frame_id: the frame of every pose.
    """

    def __init__(self, *, joint_names: Sequence[str], frame_id: str) -> None:
        from rosgraph_msgs.msg import Clock

        from robofollow_ros.ros.messages import joint_state_message, pose_message, to_time

        names = list(joint_names)
        self._clock = CdrTemplate(lambda stamp, _: Clock(clock=to_time(stamp)), count=0)
        self._joints = CdrTemplate(
            lambda stamp, values: joint_state_message(names, values, stamp_ns=stamp), count=len(names)
        )
        # PoseStamped holds x, y, z, then the quaternion as x, y, z, w.
        self._pose = CdrTemplate(
            lambda stamp, v: pose_message(v[:3], (v[6], *v[3:6]), stamp_ns=stamp, frame_id=frame_id), count=7
        )

    def clock(self, stamp_ns: int) -> bytes:
        """A ``rosgraph_msgs/Clock`` at ``stamp_ns``."""
        return self._clock.fill(stamp_ns)

    def joint_state(self, stamp_ns: int, positions: Numbers) -> bytes:
        """A ``sensor_msgs/JointState`` with positions only."""
        return self._joints.fill(stamp_ns, positions)

    def pose(self, stamp_ns: int, position: Numbers, quat: Numbers) -> bytes:
        """A ``geometry_msgs/PoseStamped`` from a position and a (w, x, y, z) quaternion."""
        w, x, y, z = _floats(quat)
        return self._pose.fill(stamp_ns, (*_floats(position), x, y, z, w))


def _floats(values: Numbers) -> Sequence[float]:
    """Python floats: struct packs them in about half the time numpy scalars take (every row, ~10 messages)."""
    return values.tolist() if isinstance(values, np.ndarray) else values
