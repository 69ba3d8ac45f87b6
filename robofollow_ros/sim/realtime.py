"""The simulated cell as real hardware: stepped one control period per tick of a wall-clock loop (fake hardware).

``RealTimeCell`` wraps ``CellEnv``: ``reset`` lays out an episode's objects (the benchmark's spawn, at the
protocol's physics step) and puts the arms at a home pose; ``step`` applies a 14-D setpoint to the position servos
(with its velocity as feed-forward, as the executor does) and advances the physics by exactly one control period.
The physics step is the protocol's 4 ms, shortened where that does not divide the period (100 Hz: 3 steps of
3.33 ms), so that simulated time and the controller's clock agree tick for tick.

``ControlLoop`` calls a tick function at a fixed rate on the wall clock (``time.monotonic``), each tick scheduled
at ``start + k * period``. A late tick runs at once; when the loop falls more than ``max_lag`` periods behind
(a reset holding the simulation, an overloaded machine) it drops the missed ticks instead of racing to catch up,
so the simulation then runs behind the wall clock: ``LoopStats`` measures both (tick lateness and the real-time
factor, simulated seconds per wall second).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import mujoco
import numpy as np

from robofollow_ros.benchmark.types import ARMS, Layout, Task
from robofollow_ros.errors import SimulationError
from robofollow_ros.sim.constants import TIMESTEP
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.model import CellModel
from robofollow_ros.sim.physics import finger_opening, object_pose, set_arm_joints
from robofollow_ros.sim.render import CameraRig
from robofollow_ros.state_layout import ARM_SLICE, CAMERAS, GRIP_INDEX, STATE_DIM


def empty_layout(scene: int) -> Layout:
    """A layout of ``scene`` with no objects: the bare table the fake hardware starts with."""
    return Layout(name='empty', scene=scene, placements=())


class RealTimeCell:
    """The MuJoCo cell advanced one control period at a time.

    Args:
        robot: registered robot of the simulated cell (``robot.specs``).
        control_period: seconds per ``step``.
        width, height: camera image size (``camera_rig``'s default).
        markers: draw the ArUco tags of this marker configuration on the objects and the table (``CellEnv``'s
            ``markers``; issue 21), or none.

    Not thread-safe: the caller serialises ``reset``, ``step`` and the reads (the fake hardware holds one lock).
    """

    def __init__(
        self, *, robot: str, control_period: float, width: int, height: int, markers: str | None = None
    ) -> None:
        if not control_period > 0.0:
            raise SimulationError(f'control period must be positive, got {control_period}')
        self.env = CellEnv(render=False, width=width, height=height, robot=robot, markers=markers)
        self.env.preload()
        self.control_period = control_period
        self.substeps = max(1, math.ceil(control_period / TIMESTEP - 1e-9))
        self.timestep = control_period / self.substeps
        self.steps = 0

    @property
    def cell(self) -> CellModel:
        """The current model (after a reset)."""
        if self.env.cell is None:
            raise SimulationError('the cell has not been reset')
        return self.env.cell

    @property
    def data(self) -> mujoco.MjData:
        """The current simulation state (after a reset)."""
        if self.env.data is None:
            raise SimulationError('the cell has not been reset')
        return self.env.data

    def reset(self, task: Task, *, seed: int, layout: Layout, home: np.ndarray) -> None:
        """Lay out ``layout``'s objects as the benchmark does for ``task`` and ``seed``, then put both arms at the
        14-D ``home`` (joints in rad, grippers 0..1) at rest.

        Raises:
            SimulationError: the scene cannot be built or spawned.
        """
        if self.env.cell is not None:
            # The spawn's settling counts protocol steps: a cached model must not keep the control timestep.
            self.env.cell.model.opt.timestep = TIMESTEP
        self.env.reset(task, seed=seed, layout=layout, images=False)
        cell, data = self.cell, self.data
        home = np.asarray(home, dtype=np.float64)
        for arm in ARMS:
            set_arm_joints(cell, data, arm, home[ARM_SLICE[arm]], float(np.clip(home[GRIP_INDEX[arm]], 0.0, 1.0)))
        cell.model.opt.timestep = self.timestep
        self._command(home, np.zeros(STATE_DIM))
        mujoco.mj_forward(cell.model, data)
        self.steps = 0

    def _command(self, position: np.ndarray, velocity: np.ndarray) -> None:
        cell, ctrl = self.cell, self.data.ctrl
        for arm in ARMS:
            index, spec = cell.arms[arm], cell.robot.arms[arm]
            ctrl[index.pos_actuators] = np.clip(position[ARM_SLICE[arm]], spec.lower, spec.upper)
            ctrl[index.vel_actuators] = velocity[ARM_SLICE[arm]]
            ctrl[index.finger_actuators] = float(np.clip(position[GRIP_INDEX[arm]], 0.0, 1.0)) * index.finger_travel

    def step(self, position: np.ndarray, velocity: np.ndarray) -> None:
        """Hold the servos at the 14-D setpoint ``position`` (``velocity`` as feed-forward) for one control period."""
        self._command(position, velocity)
        model, data = self.cell.model, self.data
        for _ in range(self.substeps):
            mujoco.mj_step(model, data)
        self.steps += 1

    @property
    def sim_seconds(self) -> float:
        """Simulated seconds since the last reset."""
        return self.steps * self.control_period

    def measured(self) -> np.ndarray:
        """The 14-D measured state: joint positions (rad) and finger openings (0 closed .. 1 open)."""
        cell, data = self.cell, self.data
        state = np.empty(STATE_DIM)
        for arm in ARMS:
            state[ARM_SLICE[arm]] = data.qpos[cell.arms[arm].qpos]
            state[GRIP_INDEX[arm]] = finger_opening(cell, data, arm)
        return state

    def object_poses(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """World position and (w, x, y, z) orientation of every object of the current layout."""
        cell, data = self.cell, self.data
        return {name: object_pose(cell, data, name) for name in cell.object_names}

    def snapshot(self, into: mujoco.MjData) -> None:
        """Copy what a camera needs (joint and mocap poses, time) into ``into``, an MjData of the current model, so
        that rendering can run while the simulation steps on."""
        data = self.data
        into.qpos[:] = data.qpos
        into.mocap_pos[:] = data.mocap_pos
        into.mocap_quat[:] = data.mocap_quat
        into.time = data.time

    def camera_rig(
        self,
        cell: CellModel,
        *,
        cameras: tuple[str, ...] = CAMERAS,
        width: int | None = None,
        height: int | None = None,
    ) -> CameraRig:
        """A camera rig of ``cameras`` for ``cell`` (the current model when it was taken), drawn as the synchronous
        cell draws it, at ``width`` x ``height`` (default: the cell's size); create and use it in the rendering
        thread."""
        env = self.env
        return CameraRig(
            cell.model,
            width=env.width if width is None else width,
            height=env.height if height is None else height,
            cameras=cameras,
            hulls=env.visual_hulls,
            render_model=cell.render_model() if env.light_meshes else None,
        )

    def close(self) -> None:
        """Release models and renderers."""
        self.env.close()


@dataclass
class LoopStats:
    """Timing of a ``ControlLoop``: every tick's lateness against its schedule and the ticks dropped."""

    period: float
    keep: int = 100_000
    lateness: deque[float] = field(default_factory=deque)
    ticks: int = 0
    dropped: int = 0
    wall_start: float = 0.0
    wall_end: float = 0.0
    """When the first and the latest tick started (``time.monotonic``)."""

    def __post_init__(self) -> None:
        self.lateness = deque(maxlen=self.keep)

    @property
    def real_time_factor(self) -> float:
        """Simulated seconds per wall-clock second between the first tick's start and the latest's."""
        wall = self.wall_end - self.wall_start
        return (self.ticks - 1) * self.period / wall if wall > 0.0 else float('nan')

    def summary(self) -> str:
        """One line: ticks, real-time factor, lateness p50 / p95 / max (ms) of the kept ticks, ticks dropped."""
        if not self.lateness:
            return 'no ticks'
        late = np.asarray(self.lateness) * 1e3
        p50, p95 = np.percentile(late, [50, 95])
        return (
            f'{self.ticks} ticks at {1.0 / self.period:g} Hz, real-time factor {self.real_time_factor:.3f}, '
            f'tick lateness p50 {p50:.2f} / p95 {p95:.2f} / max {late.max():.2f} ms, {self.dropped} dropped'
        )


class ControlLoop:
    """Calls ``tick()`` every ``period`` seconds of wall-clock time on its own thread until ``stop``.

    Args:
        period: seconds between ticks.
        tick: the work of one tick (it must take less than ``period`` on average).
        max_lag: periods the loop may fall behind before it drops the missed ticks.
        keep: lateness samples kept for ``stats`` (the newest).
        on_error: called (on the loop's thread) with the exception that ended the loop, if one does.
    """

    def __init__(
        self,
        *,
        period: float,
        tick: Callable[[], None],
        max_lag: int = 5,
        keep: int = 100_000,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        self.period = period
        self.tick = tick
        self.on_error = on_error
        self.max_lag = max_lag
        self.stats = LoopStats(period=period, keep=keep)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name='control-loop', daemon=True)
        self.error: BaseException | None = None

    def start(self) -> None:
        """Start ticking."""
        self._thread.start()

    def _run(self) -> None:
        stats = self.stats
        start = time.monotonic()
        k = 0
        try:
            while not self._stop.is_set():
                due = start + k * self.period
                now = time.monotonic()
                if due > now:
                    if self._stop.wait(due - now):
                        break
                    now = time.monotonic()
                lag = now - due
                if lag > self.max_lag * self.period:
                    missed = int(lag / self.period)
                    stats.dropped += missed
                    k += missed
                    lag -= missed * self.period
                stats.lateness.append(lag)
                if stats.ticks == 0:
                    stats.wall_start = now
                stats.wall_end = now
                self.tick()
                stats.ticks += 1
                k += 1
        except Exception as error:  # the owner reports it and decides how to stop
            self.error = error
            if self.on_error is not None:
                self.on_error(error)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after the current tick and wait for the thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
