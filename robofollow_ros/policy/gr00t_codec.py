"""The GR00T N1.6 policy server's wire encoding: msgpack in which NumPy arrays travel as ``.npy`` bytes.

An array is ``{'__ndarray_class__': True, 'as_npy': <numpy.save bytes>}`` and a modality configuration
``{'__ModalityConfig_class__': True, 'as_json': {...}}`` (kept as that plain map here: only its keys are read).
Arrays are read with ``allow_pickle=False``, so nothing on this wire is ever unpickled; object dtypes are refused
when sending.
"""

from __future__ import annotations

import io
from typing import Any

import msgpack
import numpy as np

from robofollow_ros.errors import PolicyError

ARRAY_TAG = '__ndarray_class__'
MODALITY_TAG = '__ModalityConfig_class__'


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype.kind in 'OV':
            raise PolicyError(f'dtype {value.dtype.str!r} cannot travel over the GR00T wire')
        buffer = io.BytesIO()
        np.save(buffer, value, allow_pickle=False)
        return {ARRAY_TAG: True, 'as_npy': buffer.getvalue()}
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f'cannot encode {type(value).__name__} for the GR00T wire')


def _decode(value: dict[Any, Any]) -> Any:
    if ARRAY_TAG in value:
        try:
            return np.load(io.BytesIO(value['as_npy']), allow_pickle=False)
        except (KeyError, TypeError, ValueError, OSError) as error:
            raise PolicyError(f'a GR00T array could not be read: {error}') from None
    if MODALITY_TAG in value:
        return {MODALITY_TAG: True, 'as_json': value.get('as_json')}
    return value


def packb(message: Any) -> bytes:
    """``message`` as one GR00T frame."""
    return bytes(msgpack.packb(message, default=_encode, use_bin_type=True))


def unpackb(frame: bytes) -> Any:
    """One GR00T frame decoded.

    Raises:
        PolicyError: not msgpack, or an array that does not read.
    """
    try:
        return msgpack.unpackb(frame, object_hook=_decode, raw=False, strict_map_key=False)
    except (msgpack.UnpackException, ValueError, TypeError) as error:
        raise PolicyError(f'a GR00T frame is not msgpack: {error}') from None
