"""The real-time policy bridge with slow image callbacks, for ``test_stop_behind_images.py``.

``python -m slow_image_bridge --ros-args ...`` runs ``policy_bridge.main`` with every image callback sleeping
``IMAGE_SECONDS`` before it stores the image: the bridge's executor thread is then always busy with images (each of
the three cameras has one waiting), as a loaded machine makes it. Each callback's start is noted, one line, in the
file named by ``SLOW_IMAGE_LOG`` (when set). ``slow_image_bridge:looking`` is a policy that wants the cameras, so
that the bridge subscribes them.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

IMAGE_SECONDS = 2.0
LOG_VARIABLE = 'SLOW_IMAGE_LOG'


class Looking:
    """Wants images; holds still (never asked here: no episode runs)."""

    needs_images = True

    def reset(self) -> None:
        pass

    def set_instruction(self, text: str) -> None:
        pass

    def predict(self, observation: Any) -> np.ndarray:
        return np.tile(np.asarray(observation.state, dtype=np.float64), (3, 1))


def looking() -> Looking:
    """The factory the bridge loads (``slow_image_bridge:looking``)."""
    return Looking()


def main() -> int:
    from robofollow_ros.nodes import policy_bridge

    original = policy_bridge.PolicyBridge.on_image
    log = os.environ.get(LOG_VARIABLE)

    def slow(self: Any, camera: str, message: Any) -> None:
        if log:
            with open(log, 'a', encoding='utf-8') as file:
                file.write(f'{camera} {time.monotonic():.3f}\n')
        time.sleep(IMAGE_SECONDS)
        original(self, camera, message)

    policy_bridge.PolicyBridge.on_image = slow  # type: ignore[method-assign]
    return policy_bridge.main()


if __name__ == '__main__':
    raise SystemExit(main())
