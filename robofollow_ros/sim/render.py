"""Offscreen rendering of the cell's cameras, created lazily in the thread that renders (the EGL rule)."""

from __future__ import annotations

import contextlib
import math
import threading

import mujoco
import numpy as np

from robofollow_ros.errors import SimulationError
from robofollow_ros.sim.constants import IMAGE_HEIGHT, IMAGE_WIDTH
from robofollow_ros.state_layout import CAMERAS


class CameraRig:
    """Renders RGB images of named cameras of one model; one ``mujoco.Renderer`` per rendering thread.

    With ``hulls`` mesh geoms are drawn as their convex hulls (the shapes MuJoCo collides with): far fewer
    triangles, which is what a software rasteriser pays for. With a ``render_model`` (the same cell with lighter
    meshes, ``CellModel.render_model``) the cameras draw that model. Either way the scene is posed from the
    simulated ``data``'s joint positions (and the simulated model's body placements, where static items are placed)
    in the rendering thread's own scratch data, cameras included: the simulation is only read, and the cameras sit
    where the last recorded frame has them (after a step MuJoCo's own camera poses lag the bodies by that step).
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        *,
        width: int = IMAGE_WIDTH,
        height: int = IMAGE_HEIGHT,
        cameras: tuple[str, ...] = CAMERAS,
        hulls: bool = False,
        render_model: mujoco.MjModel | None = None,
    ) -> None:
        self.sim_model = model
        self.model = model if render_model is None else render_model
        if self.model is not model and (self.model.nq, self.model.nbody) != (model.nq, model.nbody):
            raise SimulationError('the render model differs from the simulated one in more than mesh geometry')
        self.scene_option = mujoco.MjvOption()
        self.scene_option.flags[mujoco.mjtVisFlag.mjVIS_CONVEXHULL] = hulls
        self.width = width
        self.height = height
        self.cameras = cameras
        self._camera_ids = {name: model.camera(name).id for name in cameras}
        self._renderers: dict[int, tuple[mujoco.Renderer, mujoco.MjData]] = {}
        self._lock = threading.Lock()

    def _renderer(self) -> tuple[mujoco.Renderer, mujoco.MjData]:
        key = threading.get_ident()
        entry = self._renderers.get(key)
        if entry is None:
            try:
                renderer = mujoco.Renderer(self.model, height=self.height, width=self.width)
            except Exception as exc:  # backend errors come as RuntimeError/ValueError/AttributeError
                raise SimulationError(
                    f'cannot create an offscreen renderer ({exc}); set MUJOCO_GL=egl or MUJOCO_GL=osmesa '
                    'and install the EGL or OSMesa libraries'
                ) from exc
            entry = (renderer, mujoco.MjData(self.model))
            with self._lock:
                self._renderers[key] = entry
        return entry

    def _posed(self, data: mujoco.MjData, scratch: mujoco.MjData) -> mujoco.MjData:
        if self.model is not self.sim_model:
            self.model.body_pos[:] = self.sim_model.body_pos
            self.model.body_quat[:] = self.sim_model.body_quat
        scratch.qpos[:] = data.qpos
        scratch.mocap_pos[:] = data.mocap_pos
        scratch.mocap_quat[:] = data.mocap_quat
        scratch.time = data.time
        mujoco.mj_kinematics(self.model, scratch)
        mujoco.mj_camlight(self.model, scratch)
        return scratch

    def render(self, data: mujoco.MjData) -> dict[str, np.ndarray]:
        """One (height, width, 3) uint8 RGB image per camera for the state in ``data`` (of the simulated model)."""
        renderer, scratch = self._renderer()
        posed = self._posed(data, scratch)
        images: dict[str, np.ndarray] = {}
        for name, camera in self._camera_ids.items():
            renderer.update_scene(posed, camera=camera, scene_option=self.scene_option)
            # ``render()`` without ``out`` fills a new array every call: nothing to copy.
            images[name] = renderer.render()
        return images

    def close(self) -> None:
        """Release every renderer (best effort for renderers owned by other threads)."""
        with self._lock:
            renderers = [renderer for renderer, _ in self._renderers.values()]
            self._renderers.clear()
        for renderer in renderers:
            with contextlib.suppress(Exception):
                renderer.close()


def camera_matrix(
    model: mujoco.MjModel, camera: str, *, width: int = IMAGE_WIDTH, height: int = IMAGE_HEIGHT
) -> np.ndarray:
    """The 3x3 pinhole intrinsics K of a MuJoCo camera rendered at ``width`` x ``height`` (square pixels, centred
    principal point), as a ``sensor_msgs/CameraInfo`` for that image must state them."""
    fovy = math.radians(float(model.cam_fovy[model.camera(camera).id]))
    focal = 0.5 * height / math.tan(0.5 * fovy)
    return np.array([[focal, 0.0, 0.5 * width], [0.0, focal, 0.5 * height], [0.0, 0.0, 1.0]])


def project(data: mujoco.MjData, camera_id: int, k: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Pixel coordinates (N, 2) (u right, v down) of world ``points`` (N, 3) in a camera with intrinsics ``k``."""
    rel = (np.asarray(points, dtype=np.float64) - data.cam_xpos[camera_id]) @ data.cam_xmat[camera_id].reshape(3, 3)
    depth = -rel[:, 2]
    u = k[0, 2] + k[0, 0] * rel[:, 0] / depth
    v = k[1, 2] - k[1, 1] * rel[:, 1] / depth
    return np.stack([u, v], axis=1)
