"""``hold``: repeats the current joint state (the protocol's pipeline smoke-test policy)."""

from __future__ import annotations

from typing import Any

import numpy as np

HOLD_ROWS = 5


class HoldPolicy:
    """Keeps both arms where they are: returns the observed state ``HOLD_ROWS`` times."""

    needs_images = False

    def reset(self) -> None:
        """Nothing to forget."""

    def set_instruction(self, text: str) -> None:
        """Ignored."""

    def predict(self, observation: Any) -> np.ndarray:
        """Return the observed 14-D state repeated ``HOLD_ROWS`` times."""
        state = np.asarray(observation.state, dtype=np.float32)
        return np.repeat(state[None, :], HOLD_ROWS, axis=0)
