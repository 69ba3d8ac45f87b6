"""What a robotwin-tcp ``predict`` carries (protocol §5.2): RoboTwin-style camera fields and joint vector.

``{"observation": {"head_camera": {"rgb": A}, "left_camera": {"rgb": A}, "right_camera": {"rgb": A}},
"joint_action": {"vector": A}, "instruction": str}`` with (h, w, 3) uint8 RGB images at their recorded
size and the 14-D state; the reply's ``res`` is the float32 [T, 14] chunk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.base import ACTION_DIM
from robofollow_ros.policy.wire import observation_fields
from robofollow_ros.state_layout import ROBOTWIN_CAMERAS

COMMANDS: tuple[str, ...] = ('reset', 'set_instruction', 'predict')
CAMERA_FIELDS: dict[str, str] = {field: camera for camera, field in ROBOTWIN_CAMERAS.items()}
"""RoboTwin observation field -> robofollow camera name."""


def predict_payload(observation: Any, instruction: str) -> dict[str, Any]:
    """The ``predict`` payload for an observation with ``images`` and ``state``."""
    images, state = observation_fields(observation, backend='robotwin-tcp')
    return {
        'observation': {field: {'rgb': np.asarray(images[camera])} for field, camera in CAMERA_FIELDS.items()},
        'joint_action': {'vector': state.astype(np.float64)},
        'instruction': instruction,
    }


def _image(observation: Mapping[str, Any], field: str) -> np.ndarray:
    entry = observation.get(field)
    image = entry.get('rgb') if isinstance(entry, Mapping) else None
    if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise PolicyError(f'observation.{field}.rgb must be an (h, w, 3) uint8 array')
    return image


def parse_predict_payload(payload: Any) -> tuple[dict[str, np.ndarray], np.ndarray, str | None]:
    """Images by robofollow camera name, the 14-D state and the instruction of a ``predict`` payload."""
    if not isinstance(payload, Mapping):
        raise PolicyError('the predict payload must be an object')
    observation = payload.get('observation')
    joint_action = payload.get('joint_action')
    if not isinstance(observation, Mapping) or not isinstance(joint_action, Mapping):
        raise PolicyError('the predict payload needs "observation" and "joint_action" objects')
    images = {camera: _image(observation, field) for field, camera in CAMERA_FIELDS.items()}
    try:
        state = np.asarray(joint_action.get('vector'), dtype=np.float32).reshape(-1)
    except (TypeError, ValueError):
        state = np.empty(0, dtype=np.float32)
    if state.shape != (ACTION_DIM,) or not np.isfinite(state).all():
        raise PolicyError(f'joint_action.vector must hold {ACTION_DIM} finite numbers')
    instruction = payload.get('instruction')
    if instruction is not None and not isinstance(instruction, str):
        raise PolicyError('"instruction" must be a string')
    return images, state, instruction
