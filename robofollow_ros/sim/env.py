"""``CellEnv``: the simulated cell as an episode environment (reset, execute action rows, observe, trajectory).

Evaluation is synchronous (docs/cell.md §4): simulated time advances only inside ``execute``; one trajectory frame is
recorded at reset and after every executed action row (protocol §4.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import mujoco
import numpy as np

from robofollow_ros.benchmark.types import ARMS, Arm, Layout, ObjectSpec, Task
from robofollow_ros.cell_observation import CellObservation
from robofollow_ros.errors import SimulationError
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.robot.description import RobotDescription, load_robot
from robofollow_ros.robot.specs import DEFAULT_ROBOT
from robofollow_ros.sim.constants import IMAGE_HEIGHT, IMAGE_WIDTH
from robofollow_ros.sim.executor import JointExecutor
from robofollow_ros.sim.kinematics import Kinematics
from robofollow_ros.sim.markers import cell_markers
from robofollow_ros.sim.model import CellModel
from robofollow_ros.sim.physics import finger_opening, object_pose, set_arm_joints, tcp_pose
from robofollow_ros.sim.render import CameraRig
from robofollow_ros.sim.spawn import spawn
from robofollow_ros.sim.trajectory_frames import FrameRecorder, RecordedFrame
from robofollow_ros.state_layout import ARM_SLICE, GRIP_INDEX
from robofollow_ros.tracking.markers import load_markers

MODEL_CACHE_SIZE = 4


def _model_key(layout: Layout) -> tuple[tuple[str, ObjectSpec], ...]:
    return tuple(sorted(((p.name, p.spec) for p in layout.placements), key=lambda item: item[0]))


class CellEnv:
    """The MuJoCo dual-arm cell.

    Args:
        render: whether observations include camera images unless a call says otherwise.
        width, height: image size in pixels (default 320x240, protocol §1.3).
        robot: registered robot name (``robot.specs``), e.g. ``primitive`` or ``aloha``.
        visual_hulls: draw mesh geoms as their convex hulls in camera images (default: the robot's setting);
            faster software rendering of the ALOHA's meshes at the cost of blockier arms.
        light_meshes: cameras draw the robot's lighter meshes where it has them (default; ``CellModel.render_model``);
            False draws the meshes the physics uses.
        markers: draw the ArUco tags of this marker configuration (a name in ``config/markers`` or a path) on the
            objects and the table (``sim.markers``; issue 21); None (default) draws none. Drawn only: the physics
            is the same either way. Tracking wants cam_high at 640x480 or more (``width``, ``height``).

    Raises:
        SimulationError: unknown robot.
        MarkerConfigError: the marker configuration cannot be loaded.
    """

    def __init__(
        self,
        *,
        render: bool = True,
        width: int = IMAGE_WIDTH,
        height: int = IMAGE_HEIGHT,
        robot: str = DEFAULT_ROBOT,
        visual_hulls: bool | None = None,
        light_meshes: bool = True,
        markers: str | None = None,
    ) -> None:
        self.robot: RobotDescription = load_robot(robot)
        self.marker_config = load_markers(markers) if markers is not None else None
        self.visual_hulls = self.robot.spec.visual_hulls if visual_hulls is None else visual_hulls
        self.light_meshes = light_meshes
        self.render_default = render
        self.width = width
        self.height = height
        self._models: dict[tuple[tuple[str, ObjectSpec], ...], CellModel] = {}
        self._rigs: dict[int, CameraRig] = {}
        self._kinematics: dict[int, Kinematics] = {}
        self.cell: CellModel | None = None
        self.data: mujoco.MjData | None = None
        self.executor: JointExecutor | None = None
        self.recorder: FrameRecorder | None = None
        self.task: Task | None = None
        self.layout: Layout | None = None
        self.seed: int | None = None
        self._t0 = 0.0

    def preload(self) -> None:
        """Compile the robot alone once, so that MuJoCo holds its meshes: the first ``reset`` then builds its scene
        in ~25 ms instead of ~85 (ALOHA). For runners that time their episodes, before the first one."""
        CellModel.build((), robot=self.robot)

    def _model_for(self, layout: Layout) -> CellModel:
        key = _model_key(layout)
        cell = self._models.get(key)
        if cell is None:
            if len(self._models) >= MODEL_CACHE_SIZE:
                oldest_key = next(iter(self._models))
                self._forget(self._models.pop(oldest_key))
            tags = None
            if self.marker_config is not None:
                tags = cell_markers(self.marker_config, scene=layout.scene, objects=(p.name for p in layout.placements))
            cell = CellModel.build(
                (p.spec for p in sorted(layout.placements, key=lambda p: p.name)), robot=self.robot, markers=tags
            )
            self._models[key] = cell
        return cell

    def _forget(self, cell: CellModel) -> None:
        rig = self._rigs.pop(id(cell), None)
        if rig is not None:
            rig.close()
        self._kinematics.pop(id(cell), None)

    def reset(
        self,
        task: Task,
        *,
        seed: int,
        layout: Layout | None = None,
        positions: Mapping[str, tuple[float, float]] | None = None,
        images: bool | None = None,
    ) -> CellObservation:
        """Build (or re-lay) the scene of ``task`` and return the initial observation (trajectory frame 0).

        Same task, layout and seed give the same initial state bit for bit. The compiled model is reused when
        the layout's set of objects is unchanged.

        Args:
            task: the task; its ``layout`` names the layout when ``layout`` is not given.
            seed: trial seed; drives the object-position perturbation (protocol §1.7).
            layout: the layout to build (default: ``registry.layout_of(task)``).
            positions: perturbed xy per item, overriding ``registry.perturbed_positions(layout, seed=seed)``.
            images: render camera images (default: the ``render`` given to the constructor).

        Raises:
            SimulationError: the scene cannot be built or spawned.
        """
        if layout is None:
            from robofollow_ros.benchmark import registry

            layout = registry.layout_of(task)
        if positions is None:
            from robofollow_ros.benchmark import registry

            positions = registry.perturbed_positions(layout, seed=seed)
        cell = self._model_for(layout)
        if self.cell is not cell:
            self.data = mujoco.MjData(cell.model)
            self.cell = cell
        data = self.data
        assert data is not None
        mujoco.mj_resetData(cell.model, data)
        home = self.robot.home_state()
        for arm in ARMS:
            set_arm_joints(cell, data, arm, home[ARM_SLICE[arm]], home[GRIP_INDEX[arm]])
        self.executor = JointExecutor(cell, data)
        self.executor.hold(home)
        spawn(cell, data, layout, positions)
        mujoco.mj_forward(cell.model, data)
        self.task, self.layout, self.seed = task, layout, seed
        self._t0 = float(data.time)
        self.recorder = FrameRecorder(cell, data, t0=self._t0)
        self.recorder.record(self.executor.grip)
        return self.observe(images=images)

    def _require(self) -> tuple[CellModel, mujoco.MjData, JointExecutor, FrameRecorder]:
        if self.cell is None or self.data is None or self.executor is None or self.recorder is None:
            raise SimulationError('the environment has not been reset')
        return self.cell, self.data, self.executor, self.recorder

    def execute(
        self, actions: np.ndarray, *, images: bool | None = None, on_row: Callable[[], None] | None = None
    ) -> CellObservation:
        """Execute every row of an action chunk (T, 14), recording one trajectory frame per row.

        ``on_row`` is called after each row's frame is recorded (the sim node publishes the frame from it).

        Raises:
            PolicyError: the chunk has the wrong shape or non-finite values (nothing moves).
            SimulationError: the environment has not been reset.
        """
        from robofollow_ros.policy.base import validate_chunk

        chunk = validate_chunk(actions).astype(np.float64)
        _, _, executor, recorder = self._require()
        for row in chunk:
            executor.execute_row(row)
            recorder.record(executor.grip)
            if on_row is not None:
                on_row()
        return self.observe(images=images)

    def observe(self, *, images: bool | None = None) -> CellObservation:
        """The current observation; camera images are rendered only when ``images`` (or the default) is true."""
        cell, data, executor, _ = self._require()
        want_images = self.render_default if images is None else images
        rendered = self._rig(cell).render(data) if want_images else {}
        ee_pos: dict[Arm, np.ndarray] = {}
        ee_quat: dict[Arm, np.ndarray] = {}
        for arm in ARMS:
            ee_pos[arm], ee_quat[arm] = tcp_pose(cell, data, arm)
        object_pos: dict[str, np.ndarray] = {}
        object_quat: dict[str, np.ndarray] = {}
        for name in cell.object_names:
            object_pos[name], object_quat[name] = object_pose(cell, data, name)
        return CellObservation(
            images=rendered,
            state=executor.state(),
            time=float(data.time) - self._t0,
            ee_pos=ee_pos,
            ee_quat=ee_quat,
            object_pos=object_pos,
            object_quat=object_quat,
            finger_opening={arm: finger_opening(cell, data, arm) for arm in ARMS},
            robot=self.robot.name,
        )

    def _rig(self, cell: CellModel) -> CameraRig:
        rig = self._rigs.get(id(cell))
        if rig is None:
            rig = CameraRig(
                cell.model,
                width=self.width,
                height=self.height,
                hulls=self.visual_hulls,
                render_model=cell.render_model() if self.light_meshes else None,
            )
            self._rigs[id(cell)] = rig
        return rig

    @property
    def kinematics(self) -> Kinematics:
        """FK/IK on the current model (its own scratch data; the simulation is not touched)."""
        cell, _, _, _ = self._require()
        kin = self._kinematics.get(id(cell))
        if kin is None:
            kin = Kinematics(cell)
            self._kinematics[id(cell)] = kin
        return kin

    def state(self) -> np.ndarray:
        """The current 14-D state (measured joints, commanded grips)."""
        return self._require()[2].state()

    def latest_frame(self) -> RecordedFrame:
        """The trajectory frame recorded last (after the reset, or after the last executed row)."""
        return self._require()[3].latest()

    def trajectory(self) -> Trajectory:
        """Every frame recorded since the last reset (t = simulated seconds from the episode start)."""
        return self._require()[3].trajectory()

    def close(self) -> None:
        """Release renderers and models."""
        for cell in list(self._models.values()):
            self._forget(cell)
        self._models.clear()
        self.cell = self.data = self.executor = self.recorder = None

    def __enter__(self) -> CellEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
