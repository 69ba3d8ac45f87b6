"""The published raw episode file ("robofollow-raw-v1", protocol §8.2): one HDF5 file per demonstration.

``joint_action/{left_arm, left_gripper, right_arm, right_gripper, vector}`` hold the observed state of every
recorded frame and ``observation/{head_camera, left_camera, right_camera}/rgb`` its JPEG images as fixed-width byte
strings, so the upstream converters read these files unchanged. Like the published collector, the RGB array goes to
``cv2.imencode`` as it is, so ``cv2.imdecode`` gives RGB back. ``action`` (N - 1 rows) adds the absolute targets that
were commanded, which the published files leave implicit (next frame's joints).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import cv2
import h5py
import numpy as np

from robofollow_ros.errors import DatasetError
from robofollow_ros.sim.capture import CapturedFrames
from robofollow_ros.state_layout import ROBOTWIN_CAMERAS

RAW_CAMERAS: dict[str, str] = ROBOTWIN_CAMERAS
"""Our camera names -> the raw layout's camera names."""

JPEG_QUALITY = 95


def encode_jpeg(image: np.ndarray) -> bytes:
    """JPEG bytes of an (H, W, 3) uint8 RGB image, channels passed through as the published collector does."""
    ok, buffer = cv2.imencode('.jpg', np.ascontiguousarray(image), [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:
        raise DatasetError('JPEG encoding failed')
    return buffer.tobytes()


def decode_jpeg(data: bytes) -> np.ndarray:
    """The (H, W, 3) uint8 RGB image of ``encode_jpeg`` bytes (trailing padding is ignored)."""
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise DatasetError('a camera frame is not a valid JPEG image')
    return image


def write_raw_episode(path: Path, frames: CapturedFrames, *, attrs: Mapping[str, Any]) -> Path:
    """Write one episode atomically (temporary file, then rename) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + '.tmp')
    states = frames.states
    with h5py.File(temporary, 'w') as file:
        joints = file.create_group('joint_action')
        joints['left_arm'] = states[:, 0:6]
        joints['left_gripper'] = states[:, 6]
        joints['right_arm'] = states[:, 7:13]
        joints['right_gripper'] = states[:, 13]
        joints['vector'] = states
        file['action'] = frames.actions
        file['time'] = frames.times
        observation = file.create_group('observation')
        for name, raw_name in RAW_CAMERAS.items():
            if name not in frames.images:
                continue
            encoded = [encode_jpeg(image) for image in frames.images[name]]
            width = max(len(item) for item in encoded)
            observation.create_group(raw_name)['rgb'] = np.array(encoded, dtype=f'S{width}')
        for key, value in attrs.items():
            file.attrs[key] = value
    os.replace(temporary, path)
    return path


def read_raw_episode(path: Path, *, images: bool = True) -> tuple[CapturedFrames, dict[str, Any]]:
    """The frames and file attributes of a raw episode file.

    Raises:
        DatasetError: the file is missing or not a robofollow-raw-v1 episode.
    """
    try:
        with h5py.File(path, 'r') as file:
            states = np.asarray(file['joint_action/vector'], dtype=np.float32)
            actions = np.asarray(file['action'], dtype=np.float32)
            times = np.asarray(file['time'], dtype=np.float64)
            decoded: dict[str, np.ndarray] = {}
            for name, raw_name in RAW_CAMERAS.items():
                key = f'observation/{raw_name}/rgb'
                if images and key in file:
                    decoded[name] = np.stack([decode_jpeg(item) for item in file[key][()]])
            attrs = {key: value.item() if hasattr(value, 'item') else value for key, value in file.attrs.items()}
    except (OSError, KeyError) as error:
        raise DatasetError(f'{path}: not a robofollow-raw-v1 episode file ({error})') from error
    return CapturedFrames(states=states, actions=actions, images=decoded, times=times), attrs
