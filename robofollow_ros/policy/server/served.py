"""The policy behind a server: what a wire request turns into, one request at a time (``batching``: several)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.base import validate_chunk
from robofollow_ros.policy.wire import wire_observation


class ServedPolicy:
    """Wraps a user policy for a server: serialises calls and validates every chunk before it leaves."""

    def __init__(self, policy: Any, *, name: str) -> None:
        self.policy = policy
        self.name = name
        self._instruction: str | None = None
        self._lock = threading.Lock()

    def session(self) -> ServedPolicy:
        """What one connection talks to: the one policy itself (its calls are serialised; a new connection's
        ``reset`` starts a new episode of the one instance)."""
        return self

    def reset(self) -> None:
        """Start a new episode."""
        with self._lock:
            self.policy.reset()
            self._instruction = None

    def set_instruction(self, text: object) -> None:
        """Set the episode's instruction (a wire's payload, refused unless it is a string)."""
        if not isinstance(text, str):
            raise PolicyError(f'the instruction must be a string, got {type(text).__name__}')
        with self._lock:
            self.policy.set_instruction(text)
            self._instruction = text

    def predict(self, images: Mapping[str, np.ndarray], state: np.ndarray, instruction: str | None) -> np.ndarray:
        """The validated float32 [T, 14] chunk for one observation.

        ``instruction`` (openpi's ``prompt``, sent with every observation) is passed to the policy with
        ``set_instruction`` whenever it differs from the current one.
        """
        with self._lock:
            if instruction is not None and instruction != self._instruction:
                self.policy.set_instruction(instruction)
                self._instruction = instruction
            return validate_chunk(self.policy.predict(wire_observation(images, state)))

    def close(self) -> None:
        """Release the policy's resources."""
        close = getattr(self.policy, 'close', None)
        if close is not None:
            close()
