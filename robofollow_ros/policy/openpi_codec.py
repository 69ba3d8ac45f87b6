"""The openpi wire encoding: msgpack in which NumPy arrays and scalars travel as tagged maps.

An array is ``{b'__ndarray__': True, b'data': C-order bytes, b'dtype': dtype.str, b'shape': shape}`` and a
NumPy scalar ``{b'__npgeneric__': True, b'data': value, b'dtype': dtype.str}``, as openpi_client's
``msgpack_numpy`` writes them, so frames are byte-compatible with openpi servers and clients. Object, void
and complex dtypes are refused both ways: nothing on this wire is ever unpickled.
"""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from robofollow_ros.errors import PolicyError

ARRAY_TAG = b'__ndarray__'
SCALAR_TAG = b'__npgeneric__'
REFUSED_KINDS = frozenset('VOc')


def _refuse(dtype: np.dtype) -> None:
    if dtype.kind in REFUSED_KINDS:
        raise PolicyError(f'dtype {dtype.str!r} cannot travel over the openpi wire')


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        _refuse(value.dtype)
        return {ARRAY_TAG: True, b'data': value.tobytes(), b'dtype': value.dtype.str, b'shape': value.shape}
    if isinstance(value, np.generic):
        _refuse(value.dtype)
        return {SCALAR_TAG: True, b'data': value.item(), b'dtype': value.dtype.str}
    raise TypeError(f'cannot encode {type(value).__name__} for the openpi wire')


def _decode(value: dict[Any, Any]) -> Any:
    if ARRAY_TAG in value:
        try:
            dtype = np.dtype(value[b'dtype'])
            _refuse(dtype)
            shape = tuple(int(size) for size in value[b'shape'])
            return np.ndarray(buffer=value[b'data'], dtype=dtype, shape=shape)
        except PolicyError:
            raise
        except (KeyError, TypeError, ValueError) as error:
            raise PolicyError(f'malformed array on the openpi wire: {error}') from error
    if SCALAR_TAG in value:
        try:
            dtype = np.dtype(value[b'dtype'])
            _refuse(dtype)
            return dtype.type(value[b'data'])
        except PolicyError:
            raise
        except (KeyError, TypeError, ValueError) as error:
            raise PolicyError(f'malformed scalar on the openpi wire: {error}') from error
    return value


def packb(value: Any) -> bytes:
    """Encode ``value`` (dicts, lists, strings, numbers, NumPy arrays and scalars) as one openpi frame."""
    try:
        return msgpack.packb(value, default=_encode)
    except (TypeError, ValueError, OverflowError) as error:
        raise PolicyError(f'cannot encode an openpi frame: {error}') from error


def unpackb(frame: bytes) -> Any:
    """Decode one openpi frame; arrays come back read-only, viewing the frame's bytes."""
    try:
        return msgpack.unpackb(frame, object_hook=_decode)
    except PolicyError:
        raise
    except (msgpack.UnpackException, ValueError, TypeError) as error:
        raise PolicyError(f'not an openpi msgpack frame: {error}') from error
