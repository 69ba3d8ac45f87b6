"""The published RoboFollow remote-policy wire (protocol §5.2): length-prefixed UTF-8 JSON over TCP.

A frame is a 4-byte big-endian unsigned length in (0, 128 MiB] followed by that many bytes of JSON. NumPy
arrays anywhere in a message travel as ``{"__numpy_array__": true, "data": base64 of the C-order bytes,
"dtype": name, "shape": [...]}``; NumPy scalars become plain JSON numbers and booleans.
"""

from __future__ import annotations

import base64
import binascii
import json
import socket
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from robofollow_ros.errors import PolicyError

ARRAY_TAG = '__numpy_array__'
HEADER = struct.Struct('>I')
MAX_FRAME_BYTES = 128 * 1024 * 1024
REFUSED_KINDS = frozenset('VOc')


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype.kind in REFUSED_KINDS:
            raise TypeError(f'dtype {value.dtype.name} cannot travel over the robotwin-tcp wire')
        return {
            ARRAY_TAG: True,
            'data': base64.b64encode(value.tobytes()).decode('ascii'),
            'dtype': value.dtype.name,
            'shape': list(value.shape),
        }
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f'cannot encode {type(value).__name__} as JSON')


def _decode(value: dict[str, Any]) -> Any:
    if value.get(ARRAY_TAG) is not True:
        return value
    try:
        dtype = np.dtype(value['dtype'])
        if dtype.kind in REFUSED_KINDS:
            raise PolicyError(f'dtype {dtype.name} cannot travel over the robotwin-tcp wire')
        data = base64.b64decode(value['data'], validate=True)
        shape = tuple(int(size) for size in value['shape'])
        return np.frombuffer(data, dtype=dtype).reshape(shape)
    except PolicyError:
        raise
    except (KeyError, TypeError, ValueError, binascii.Error) as error:
        raise PolicyError(f'malformed array in a robotwin-tcp message: {error}') from error


def encode_message(message: Any) -> bytes:
    """``message`` as one frame: length header and JSON body."""
    try:
        body = json.dumps(message, default=_encode, allow_nan=False, separators=(',', ':')).encode('utf-8')
    except (TypeError, ValueError) as error:
        raise PolicyError(f'cannot encode a robotwin-tcp message: {error}') from error
    if len(body) > MAX_FRAME_BYTES:
        raise PolicyError(f'message of {len(body)} bytes exceeds the {MAX_FRAME_BYTES}-byte frame limit')
    return HEADER.pack(len(body)) + body


def decode_message(body: bytes) -> Any:
    """The JSON value of a frame body, arrays restored (read-only views of the decoded bytes)."""
    try:
        return json.loads(body.decode('utf-8'), object_hook=_decode)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PolicyError(f'not a UTF-8 JSON robotwin-tcp message: {error}') from error


def _receive_up_to(sock: socket.socket, size: int) -> bytes:
    """``size`` bytes, or fewer if the peer closed the connection first."""
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(min(size - len(chunks), 1 << 20))
        if not chunk:
            break
        chunks += chunk
    return bytes(chunks)


def read_frame(
    sock: socket.socket, *, max_bytes: int = MAX_FRAME_BYTES, reserve: Callable[[int], None] | None = None
) -> bytes | None:
    """The next frame body from ``sock``; ``None`` when the peer closed the connection between frames.

    ``reserve``, if given, is called with the announced length before the body is read (a server takes it
    from its memory budget there, or raises to refuse the frame unread).

    Raises:
        PolicyError: the announced length is 0 or above ``max_bytes`` (the body is left unread, so the
            stream cannot be resynchronised), or the connection closed in the middle of a frame.
    """
    header = _receive_up_to(sock, HEADER.size)
    if not header:
        return None
    if len(header) < HEADER.size:
        raise PolicyError(f'connection closed after {len(header)} bytes of a frame header')
    (size,) = HEADER.unpack(header)
    if not 0 < size <= max_bytes:
        raise PolicyError(f'frame length {size} is outside (0, {max_bytes}]')
    if reserve is not None:
        reserve(size)
    body = _receive_up_to(sock, size)
    if len(body) < size:
        raise PolicyError(f'connection closed after {HEADER.size + len(body)} of {HEADER.size + size} frame bytes')
    return body
