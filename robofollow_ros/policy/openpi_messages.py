"""What the openpi ALOHA policy exchanges: the observation dict it reads and the ``actions`` it returns.

Request: ``{'images': {'cam_high' | 'cam_left_wrist' | 'cam_right_wrist': uint8 (3, 224, 224)},
'state': float32 (14,), 'prompt': str}``. Reply: ``{'actions': float [T, 14], ...}`` (openpi adds timing
entries, which are ignored). ``cam_high`` is the one camera openpi's ALOHA inputs require.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.base import ACTION_DIM, validate_chunk
from robofollow_ros.policy.observation import CAMERAS
from robofollow_ros.policy.openpi_images import OPENPI_IMAGE_SIZE, from_openpi, to_openpi
from robofollow_ros.policy.wire import observation_fields
from robofollow_ros.state_layout import HEAD_CAMERA

REQUIRED_CAMERA = HEAD_CAMERA


def observation_request(observation: Any, prompt: str, *, image_size: int = OPENPI_IMAGE_SIZE) -> dict[str, Any]:
    """The openpi request for an observation with ``images`` (h, w, 3) and a 14-D ``state``."""
    images, state = observation_fields(observation, backend='openpi')
    return {
        'images': {camera: to_openpi(images[camera], size=image_size) for camera in CAMERAS},
        'state': state,
        'prompt': prompt,
    }


def actions_from_reply(reply: Any) -> np.ndarray:
    """The validated float32 [T, 14] chunk of an openpi reply."""
    if not isinstance(reply, Mapping) or 'actions' not in reply:
        keys = sorted(map(str, reply)) if isinstance(reply, Mapping) else type(reply).__name__
        raise PolicyError(f'the openpi reply has no "actions" (got {keys})')
    return validate_chunk(reply['actions'])


@dataclass(frozen=True)
class WireObservation:
    """An openpi request as a served policy reads it."""

    images: dict[str, np.ndarray]
    state: np.ndarray
    prompt: str


def parse_request(request: Any) -> WireObservation:
    """Check an openpi ALOHA request and return its images (h, w, 3), state and prompt."""
    if not isinstance(request, Mapping):
        raise PolicyError(f'an openpi request must be a map, got {type(request).__name__}')
    unknown = sorted(str(key) for key in request if key not in ('images', 'state', 'prompt'))
    if unknown:
        raise PolicyError(f'unknown keys in the openpi request: {", ".join(unknown)}')
    images = request.get('images')
    if not isinstance(images, Mapping) or REQUIRED_CAMERA not in images:
        raise PolicyError(f'the openpi request needs "images" with at least {REQUIRED_CAMERA!r}')
    strange = sorted(str(name) for name in images if name not in CAMERAS)
    if strange:
        raise PolicyError(f'unknown camera names: {", ".join(strange)} (expected {", ".join(CAMERAS)})')
    try:
        state = np.asarray(request.get('state', ()), dtype=np.float32).reshape(-1)
    except (TypeError, ValueError):
        state = np.empty(0, dtype=np.float32)
    if state.shape != (ACTION_DIM,) or not np.isfinite(state).all():
        raise PolicyError(f'"state" must hold {ACTION_DIM} finite numbers')
    prompt = request.get('prompt', '')
    if not isinstance(prompt, str):
        raise PolicyError('"prompt" must be a string')
    return WireObservation(
        images={str(name): from_openpi(image) for name, image in images.items()}, state=state, prompt=prompt
    )
