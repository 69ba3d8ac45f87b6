"""Offscreen rendering of the cell's cameras, created lazily in the thread that renders (the EGL rule)."""

from __future__ import annotations

import contextlib
import threading

import mujoco
import numpy as np

from robofollow_ros.errors import SimulationError
from robofollow_ros.sim.constants import IMAGE_HEIGHT, IMAGE_WIDTH
from robofollow_ros.state_layout import CAMERAS


class CameraRig:
    """Renders RGB images of named cameras of one model; one ``mujoco.Renderer`` per rendering thread."""

    def __init__(
        self,
        model: mujoco.MjModel,
        *,
        width: int = IMAGE_WIDTH,
        height: int = IMAGE_HEIGHT,
        cameras: tuple[str, ...] = CAMERAS,
    ) -> None:
        self.model = model
        self.width = width
        self.height = height
        self.cameras = cameras
        self._camera_ids = {name: model.camera(name).id for name in cameras}
        self._renderers: dict[int, mujoco.Renderer] = {}
        self._lock = threading.Lock()

    def _renderer(self) -> mujoco.Renderer:
        key = threading.get_ident()
        renderer = self._renderers.get(key)
        if renderer is None:
            try:
                renderer = mujoco.Renderer(self.model, height=self.height, width=self.width)
            except Exception as exc:  # backend errors come as RuntimeError/ValueError/AttributeError
                raise SimulationError(
                    f'cannot create an offscreen renderer ({exc}); set MUJOCO_GL=egl or MUJOCO_GL=osmesa '
                    'and install the EGL or OSMesa libraries'
                ) from exc
            with self._lock:
                self._renderers[key] = renderer
        return renderer

    def render(self, data: mujoco.MjData) -> dict[str, np.ndarray]:
        """One (height, width, 3) uint8 RGB image per camera for the state in ``data``."""
        renderer = self._renderer()
        images: dict[str, np.ndarray] = {}
        for name, camera in self._camera_ids.items():
            renderer.update_scene(data, camera=camera)
            images[name] = renderer.render().copy()
        return images

    def close(self) -> None:
        """Release every renderer (best effort for renderers owned by other threads)."""
        with self._lock:
            renderers = list(self._renderers.values())
            self._renderers.clear()
        for renderer in renderers:
            with contextlib.suppress(Exception):
                renderer.close()
