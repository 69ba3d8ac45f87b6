"""Records trajectory frames (protocol §4.1) from the simulation into a referee ``Trajectory``."""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from robofollow_ros.benchmark.types import ARMS, Arm
from robofollow_ros.errors import TrajectoryError
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.sim.model import CellModel


@dataclass(frozen=True)
class RecordedFrame:
    """The last recorded frame: simulated seconds from the episode start, TCP and scene item poses (position,
    orientation as (w, x, y, z)); the arrays are the recorder's own, not copies."""

    t: float
    ee: dict[Arm, tuple[np.ndarray, np.ndarray]]
    objects: dict[str, tuple[np.ndarray, np.ndarray]]


class FrameRecorder:
    """Appends one frame per call: time, TCP pose and grip per arm, pose of every scene item.

    The environment records once after the reset and once after every executed action row, so the
    trajectory's frames are executed rows (``Trajectory.frames_are_rows``).
    """

    def __init__(self, cell: CellModel, data: mujoco.MjData, *, t0: float) -> None:
        self.cell = cell
        self.data = data
        self.t0 = t0
        self._t: list[float] = []
        self._ee: dict[Arm, list[np.ndarray]] = {arm: [] for arm in ARMS}
        self._ee_quat: dict[Arm, list[np.ndarray]] = {arm: [] for arm in ARMS}
        self._grip: dict[Arm, list[float]] = {arm: [] for arm in ARMS}
        self._sites = [cell.arms[arm].tcp_site for arm in ARMS]
        self._bodies = {name: index.body for name, index in cell.object_index.items()}
        self._names = tuple(self._bodies)
        self._body_ids = np.array([self._bodies[name] for name in self._names], dtype=np.int64)
        # One (items, 3) / (items, 4) array per frame, gathered with one fancy index each: per item Python work
        # was a third of the recorder's time; the values are the same.
        self._obj: list[np.ndarray] = []
        self._obj_quat: list[np.ndarray] = []

    def record(self, grip: np.ndarray) -> None:
        """Append a frame; ``grip`` holds the (left, right) gripper values of the state vector."""
        data = self.data
        self._t.append(float(data.time) - self.t0)
        for i, arm in enumerate(ARMS):
            site = self._sites[i]
            self._ee[arm].append(data.site_xpos[site].copy())
            # quat_from_matrix's own arithmetic, on the row MuJoCo already holds contiguously (one frame per
            # executed row: its reshapes and copies were a fifth of the recorder's time).
            quat = np.empty(4)
            mujoco.mju_mat2Quat(quat, data.site_xmat[site])
            self._ee_quat[arm].append(quat if quat[0] >= 0.0 else -quat)
            self._grip[arm].append(float(grip[i]))
        self._obj.append(data.xpos[self._body_ids])
        quats = data.xquat[self._body_ids]
        flip = quats[:, 0] < 0.0
        quats[flip] = -quats[flip]
        self._obj_quat.append(quats)

    def _per_item(self, frames: list[np.ndarray], width: int) -> dict[str, np.ndarray]:
        stacked = np.array(frames).reshape(len(frames), len(self._names), width)
        return {name: np.ascontiguousarray(stacked[:, i]) for i, name in enumerate(self._names)}

    def latest(self) -> RecordedFrame:
        """The frame recorded last (the sim node publishes it, so that it need not read the simulation again)."""
        if not self._t:
            raise TrajectoryError('no frame has been recorded')
        return RecordedFrame(
            t=self._t[-1],
            ee={arm: (self._ee[arm][-1], self._ee_quat[arm][-1]) for arm in ARMS},
            objects={name: (self._obj[-1][i], self._obj_quat[-1][i]) for i, name in enumerate(self._names)},
        )

    def __len__(self) -> int:
        return len(self._t)

    def trajectory(self) -> Trajectory:
        """The frames recorded so far as column arrays."""
        if not self._t:
            raise TrajectoryError('no frame has been recorded')
        return Trajectory(
            t=np.array(self._t),
            ee={arm: np.array(self._ee[arm]) for arm in ARMS},
            grip={arm: np.array(self._grip[arm]) for arm in ARMS},
            obj_pos=self._per_item(self._obj, 3),
            ee_quat={arm: np.array(self._ee_quat[arm]) for arm in ARMS},
            obj_quat=self._per_item(self._obj_quat, 4),
            frames_are_rows=True,
        )
