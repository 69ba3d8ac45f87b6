"""``Observation``: the only thing a user policy sees of the robot, as on a real cell.

Three camera images and the 14-D joint state, nothing else: no object poses, no TCP poses, no task truth.
The instruction arrives separately through ``Policy.set_instruction``. Built-in reference policies that need
the scene's ground truth get it through the privileged channel of ``robofollow_ros.evaluation.environment``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from robofollow_ros.state_layout import CAMERAS, STATE_DIM

__all__ = ['CAMERAS', 'STATE_DIM', 'Observation']


@dataclass(frozen=True)
class Observation:
    """What a policy receives before each query.

    Attributes:
        images: camera name (``cam_high``, ``cam_left_wrist``, ``cam_right_wrist``) -> (H, W, 3) uint8 RGB;
            empty for a policy that declares ``needs_images = False``.
        state: float32 (14,) ``[left q1..q6, left gripper, right q1..q6, right gripper]``, joint positions in
            radians, grippers normalised (1 open, 0 closed).
    """

    images: Mapping[str, np.ndarray]
    state: np.ndarray

    @classmethod
    def from_environment(cls, observation: Any) -> Observation:
        """Keep only the images and the state of an environment's observation (copies, read-only).

        Whatever else the environment reports (object or TCP poses, simulated time) is dropped here, so a
        user policy cannot reach it.
        """
        images = {}
        for name, pixels in dict(getattr(observation, 'images', None) or {}).items():
            image = np.array(pixels, dtype=np.uint8, copy=True)
            image.flags.writeable = False
            images[str(name)] = image
        state = np.array(observation.state, dtype=np.float32, copy=True).reshape(STATE_DIM)
        state.flags.writeable = False
        return cls(images=MappingProxyType(images), state=state)
