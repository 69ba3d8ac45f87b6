"""CDR encoding and decoding of the few message types an episode bag holds.

Encoding goes through a rosbags typestore. Decoding PoseStamped, by far the most frequent message, reads
the fixed CDR layout of whole batches with numpy (one pass per distinct message length); every other type,
and any pose message whose layout is unusual, goes through the typestore's generated deserializers, called
so that trailing bytes after the message are tolerated: rmw_fastrtps serializes e.g. a JointState with
empty velocity/effort into a buffer 8 bytes longer than the message, which ``Typestore.deserialize_cdr``
rejects ("CDR message size mismatch") although ROS 2 itself reads it.
"""

from __future__ import annotations

import functools
import json
import struct
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rosbags.serde import SerdeError
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from robofollow_ros.bags.conventions import IMAGE, IMAGE_ENCODING, JOINT_STATE, NS_PER_S, POSE_STAMPED, STRING
from robofollow_ros.errors import BagError
from robofollow_ros.interfaces import (
    EPISODE_SPEC,
    EPISODE_SPEC_FIELDS,
    RESULT,
    VERSIONS,
    driver_message_definitions,
    message_definitions,
    record_of_result,
    result_fields,
)
from robofollow_ros.state_layout import Numbers

ENCAPSULATION_SIZE = 4
CDR_LITTLE_ENDIAN = 1
POSE_DOUBLES = 7
SEC_OFFSET = 4
NANOSEC_OFFSET = 8
STRING_LENGTH_OFFSET = 12
STRING_OFFSET = 16
POSITION_COLUMNS = [0, 1, 2]
QUAT_WXYZ_COLUMNS = [6, 3, 4, 5]
"""Pose doubles are x, y, z, qx, qy, qz, qw on the wire; quaternions are returned (w, x, y, z)."""


@functools.cache
def typestore_for(store: Stores) -> Typestore:
    """The rosbags typestore of a ROS distribution with the ``robofollow_interfaces`` messages registered from
    their ``.msg`` files when these are found (``interfaces.definitions_folder``), and the real drivers' command
    messages installed here (``interfaces.driver_message_definitions``: a bag of a real cell holds its arm
    commands); cached."""
    typestore = get_typestore(store)
    types: dict[str, Any] = {}
    for name, text in {**driver_message_definitions(), **message_definitions()}.items():
        types.update(get_types_from_msg(text, name))
    typestore.register(types)
    return typestore


def default_typestore() -> Typestore:
    """The typestore used to decode bags: ROS 2 Kilted (these message types are equal in every ROS 2 release)."""
    return typestore_for(Stores.ROS2_KILTED)


def warm_decoders() -> None:
    """Build the default typestore and its JointState and PoseStamped decoders now: the first use costs tens of
    milliseconds, which a node would otherwise pay in its first episode."""
    store = default_typestore()
    decode_joint_state(store, bytes(encode_joint_state(store, 0, ['joint'], np.zeros(1))), topic='warm-up')
    decode_poses(store, [bytes(encode_pose(store, 0, 'world', (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)))], topic='warm-up')


@dataclass(frozen=True)
class PoseSeries:
    """Decoded PoseStamped messages, in message order.

    Attributes:
        stamp_ns: (k,) header stamps, nanoseconds.
        position: (k, 3) metres.
        quat: (k, 4) orientations (w, x, y, z).
        frames: the distinct ``header.frame_id`` values met.
    """

    stamp_ns: np.ndarray
    position: np.ndarray
    quat: np.ndarray
    frames: frozenset[str]


@dataclass(frozen=True)
class JointSample:
    """One decoded JointState message."""

    stamp_ns: int
    names: list[str]
    position: np.ndarray


def _stamp(typestore: Typestore, stamp_ns: int) -> Any:
    sec, nanosec = divmod(int(stamp_ns), NS_PER_S)
    return typestore.types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec)


def _header(typestore: Typestore, stamp_ns: int, frame: str) -> Any:
    return typestore.types['std_msgs/msg/Header'](stamp=_stamp(typestore, stamp_ns), frame_id=frame)


def encode_string(typestore: Typestore, text: str) -> memoryview:
    """CDR of a std_msgs/String."""
    return typestore.serialize_cdr(typestore.types[STRING](data=text), STRING)


def encode_pose(typestore: Typestore, stamp_ns: int, frame: str, position: Numbers, quat_wxyz: Numbers) -> memoryview:
    """CDR of a geometry_msgs/PoseStamped; ``quat_wxyz`` is (w, x, y, z)."""
    types = typestore.types
    w, x, y, z = (float(v) for v in quat_wxyz)
    pose = types['geometry_msgs/msg/Pose'](
        position=types['geometry_msgs/msg/Point'](x=float(position[0]), y=float(position[1]), z=float(position[2])),
        orientation=types['geometry_msgs/msg/Quaternion'](x=x, y=y, z=z, w=w),
    )
    return typestore.serialize_cdr(
        types[POSE_STAMPED](header=_header(typestore, stamp_ns, frame), pose=pose), POSE_STAMPED
    )


def encode_joint_state(typestore: Typestore, stamp_ns: int, names: Sequence[str], position: np.ndarray) -> memoryview:
    """CDR of a sensor_msgs/JointState with positions only (no velocity or effort)."""
    empty = np.zeros(0, dtype=np.float64)
    message = typestore.types[JOINT_STATE](
        header=_header(typestore, stamp_ns, ''),
        name=list(names),
        position=np.asarray(position, dtype=np.float64),
        velocity=empty,
        effort=empty,
    )
    return typestore.serialize_cdr(message, JOINT_STATE)


def encode_image(typestore: Typestore, stamp_ns: int, frame: str, pixels: np.ndarray) -> memoryview:
    """CDR of a sensor_msgs/Image (rgb8) from an (h, w, 3) uint8 array."""
    height, width, _ = pixels.shape
    message = typestore.types[IMAGE](
        header=_header(typestore, stamp_ns, frame),
        height=height,
        width=width,
        encoding=IMAGE_ENCODING,
        is_bigendian=0,
        step=width * 3,
        data=np.ascontiguousarray(pixels, dtype=np.uint8).reshape(-1),
    )
    return typestore.serialize_cdr(message, IMAGE)


def deserialize(typestore: Typestore, data: bytes, msgtype: str, *, topic: str) -> Any:
    """Deserialize one CDR message, ignoring bytes after its end.

    Raises:
        BagError: unknown encapsulation or a message that does not decode as ``msgtype``.
    """
    if len(data) < ENCAPSULATION_SIZE or data[0] != 0 or data[1] not in (0, CDR_LITTLE_ENDIAN):
        raise BagError(f'{topic}: message is not plain CDR (encapsulation {bytes(data[:2]).hex()})')
    msgdef = typestore.get_msgdef(msgtype)
    decode = msgdef.deserialize_cdr_le if data[1] == CDR_LITTLE_ENDIAN else msgdef.deserialize_cdr_be
    try:
        message, _ = decode(data[ENCAPSULATION_SIZE:], 0, msgdef.cls, typestore)
    except (struct.error, UnicodeDecodeError, ValueError, IndexError, SerdeError) as err:
        raise BagError(f'{topic}: message does not decode as {msgtype} ({err})') from None
    return message


def decode_string(typestore: Typestore, data: bytes, *, topic: str) -> str:
    """Text of a std_msgs/String."""
    return str(deserialize(typestore, data, STRING, topic=topic).data)


def encode_result(typestore: Typestore, record: dict[str, Any]) -> memoryview:
    """CDR of the ``robofollow_interfaces/msg/Result`` of a result record.

    Raises:
        BagError: the record cannot be stored as JSON, or the typestore lacks the message (definitions not found).
    """
    if RESULT not in typestore.types:
        raise BagError(f'{RESULT} is unknown here: the robofollow_interfaces .msg files were not found')
    try:
        fields = result_fields(record)
    except ValueError as err:
        raise BagError(f'result cannot be stored as JSON: {err}') from None
    types = typestore.types
    fields['stages'] = [types['robofollow_interfaces/msg/Stage'](**stage) for stage in fields['stages']]
    fields['adjustments'] = [types['robofollow_interfaces/msg/Adjustment'](**item) for item in fields['adjustments']]
    return typestore.serialize_cdr(types[RESULT](**fields), RESULT)


def decode_result(typestore: Typestore, data: bytes, *, topic: str) -> dict[str, Any]:
    """The result record of a ``robofollow_interfaces/msg/Result``.

    Raises:
        BagError: another version, its ``record_json`` is not a JSON object, or the definitions were not found.
    """
    if RESULT not in typestore.types:
        raise BagError(f'{topic}: {RESULT} is unknown here: the robofollow_interfaces .msg files were not found')
    message = deserialize(typestore, data, RESULT, topic=topic)
    try:
        return record_of_result(message.version, message.record_json)
    except ValueError as err:
        raise BagError(f'{topic}: {err}') from None


def encode_episode_spec(typestore: Typestore, fields: dict[str, Any]) -> memoryview:
    """CDR of a ``robofollow_interfaces/msg/EpisodeSpec`` with these field values (``EPISODE_SPEC_FIELDS``, all of
    them; ``version`` is this code's).

    Raises:
        BagError: the typestore lacks the message (definitions not found).
    """
    if EPISODE_SPEC not in typestore.types:
        raise BagError(f'{EPISODE_SPEC} is unknown here: the robofollow_interfaces .msg files were not found')
    message = typestore.types[EPISODE_SPEC](version=VERSIONS[EPISODE_SPEC], **fields)
    return typestore.serialize_cdr(message, EPISODE_SPEC)


def decode_episode_spec(typestore: Typestore, data: bytes, *, topic: str) -> dict[str, Any]:
    """The field values (``EPISODE_SPEC_FIELDS``) of a ``robofollow_interfaces/msg/EpisodeSpec``.

    Raises:
        BagError: another version, a message that does not decode, or the definitions were not found.
    """
    if EPISODE_SPEC not in typestore.types:
        raise BagError(f'{topic}: {EPISODE_SPEC} is unknown here: the robofollow_interfaces .msg files were not found')
    message = deserialize(typestore, data, EPISODE_SPEC, topic=topic)
    if message.version != VERSIONS[EPISODE_SPEC]:
        raise BagError(
            f'{topic}: EpisodeSpec version {message.version} is not {VERSIONS[EPISODE_SPEC]}, the one this code reads'
        )
    return {name: kind(getattr(message, name)) for name, kind in EPISODE_SPEC_FIELDS.items()}


def decode_json_object(typestore: Typestore, data: bytes, *, topic: str) -> dict[str, Any]:
    """A std_msgs/String holding a JSON object, as a dict.

    Raises:
        BagError: the text is not a JSON object.
    """
    text = decode_string(typestore, data, topic=topic)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise BagError(f'{topic}: message is not JSON ({err.msg} at character {err.pos})') from None
    if not isinstance(value, dict):
        raise BagError(f'{topic}: message is JSON but not an object ({text[:60]!r})')
    return value


def decode_joint_state(typestore: Typestore, data: bytes, *, topic: str) -> JointSample:
    """Stamp, names and positions of a sensor_msgs/JointState."""
    message = deserialize(typestore, data, JOINT_STATE, topic=topic)
    stamp = message.header.stamp
    return JointSample(
        stamp.sec * NS_PER_S + stamp.nanosec, list(message.name), np.asarray(message.position, np.float64)
    )


def decode_image(typestore: Typestore, data: bytes, *, topic: str) -> tuple[int, np.ndarray]:
    """Stamp and (h, w, 3) uint8 RGB pixels of a sensor_msgs/Image (rgb8 or bgr8).

    Raises:
        BagError: another encoding, or a data size that does not match the header.
    """
    message = deserialize(typestore, data, IMAGE, topic=topic)
    stamp = message.header.stamp
    if message.encoding not in ('rgb8', 'bgr8'):
        raise BagError(f'{topic}: image encoding {message.encoding!r} is not supported (rgb8, bgr8)')
    height, width, step = int(message.height), int(message.width), int(message.step)
    raw = np.asarray(message.data, dtype=np.uint8)
    if step < width * 3 or raw.size != height * step:
        raise BagError(f'{topic}: image data has {raw.size} bytes, expected {height} rows of {step}')
    pixels = raw.reshape(height, step)[:, : width * 3].reshape(height, width, 3)
    if message.encoding == 'bgr8':
        pixels = pixels[:, :, ::-1]
    return stamp.sec * NS_PER_S + stamp.nanosec, np.ascontiguousarray(pixels)


def decode_poses(typestore: Typestore, messages: Sequence[bytes], *, topic: str) -> PoseSeries:
    """Decode a batch of geometry_msgs/PoseStamped CDR messages.

    Little-endian messages are read straight from their bytes, grouped by length and frame-id length;
    anything else falls back to the typestore. The result keeps the order of ``messages``.
    """
    count = len(messages)
    stamp_ns = np.empty(count, dtype=np.int64)
    values = np.empty((count, POSE_DOUBLES), dtype=np.float64)
    frames: set[str] = set()
    groups: dict[tuple[int, bytes], list[int]] = defaultdict(list)
    for index, data in enumerate(messages):
        if len(data) > STRING_OFFSET and data[1] == CDR_LITTLE_ENDIAN:
            groups[(len(data), bytes(data[STRING_LENGTH_OFFSET:STRING_OFFSET]))].append(index)
        else:
            stamp_ns[index], values[index], frame = _decode_pose_slow(typestore, data, topic)
            frames.add(frame)
    for (length, string_length), indices in groups.items():
        frame_end = STRING_OFFSET + int.from_bytes(string_length, 'little')
        doubles = ENCAPSULATION_SIZE + -(-(frame_end - ENCAPSULATION_SIZE) // 8) * 8
        if doubles + 8 * POSE_DOUBLES > length:
            for index in indices:
                stamp_ns[index], values[index], frame = _decode_pose_slow(typestore, messages[index], topic)
                frames.add(frame)
            continue
        block = np.frombuffer(b''.join(messages[i] for i in indices), dtype=np.uint8).reshape(len(indices), length)
        sec = block[:, SEC_OFFSET:NANOSEC_OFFSET].copy().view('<i4').ravel().astype(np.int64)
        nanosec = block[:, NANOSEC_OFFSET:STRING_LENGTH_OFFSET].copy().view('<u4').ravel().astype(np.int64)
        stamp_ns[indices] = sec * NS_PER_S + nanosec
        values[indices] = block[:, doubles : doubles + 8 * POSE_DOUBLES].copy().view('<f8')
        names = block[:, STRING_OFFSET : frame_end - 1]
        names = names[:1] if (names == names[0]).all() else np.unique(names, axis=0)
        frames.update(bytes(name).decode(errors='replace') for name in names)
    return PoseSeries(stamp_ns, values[:, POSITION_COLUMNS], values[:, QUAT_WXYZ_COLUMNS], frozenset(frames))


def _decode_pose_slow(typestore: Typestore, data: bytes, topic: str) -> tuple[int, np.ndarray, str]:
    message = deserialize(typestore, data, POSE_STAMPED, topic=topic)
    position, orientation, stamp = message.pose.position, message.pose.orientation, message.header.stamp
    row = np.array(
        [position.x, position.y, position.z, orientation.x, orientation.y, orientation.z, orientation.w],
        dtype=np.float64,
    )
    return stamp.sec * NS_PER_S + stamp.nanosec, row, str(message.header.frame_id)


_HEADER_STAMP = struct.Struct('<iI')
_HEADER_STAMP_BE = struct.Struct('>iI')
CDR_HEADER_BYTES = 4


def header_stamp_ns(data: bytes) -> int:
    """The header stamp of a CDR message that starts with ``std_msgs/Header`` (no full decoding)."""
    layout = _HEADER_STAMP if len(data) > 1 and data[1] == CDR_LITTLE_ENDIAN else _HEADER_STAMP_BE
    sec, nanosec = layout.unpack_from(data, CDR_HEADER_BYTES)
    return sec * NS_PER_S + nanosec
