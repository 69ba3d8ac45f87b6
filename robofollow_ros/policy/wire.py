"""What travels to a remote policy: the three camera images and the 14-D state of an ``Observation``."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.base import ACTION_DIM
from robofollow_ros.policy.observation import CAMERAS, Observation


def observation_fields(observation: Any, *, backend: str) -> tuple[Mapping[str, np.ndarray], np.ndarray]:
    """The camera images and the float32 (14,) state of ``observation``, checked for sending."""
    images = getattr(observation, 'images', None) or {}
    missing = [camera for camera in CAMERAS if camera not in images]
    if missing:
        raise PolicyError(f'the {backend} policy needs camera images; the observation lacks {", ".join(missing)}')
    state = np.asarray(observation.state, dtype=np.float32).reshape(-1)
    if state.shape != (ACTION_DIM,):
        raise PolicyError(f'the state must have {ACTION_DIM} values, got {state.shape[0]}')
    return images, state


def wire_observation(images: Mapping[str, np.ndarray], state: np.ndarray) -> Observation:
    """The observation a served policy receives, as a user policy does in-process (read-only copies)."""
    return Observation.from_environment(SimpleNamespace(images=images, state=state))
