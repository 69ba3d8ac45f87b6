"""The action executor (protocol §1.5, docs/cell.md §4): one action row = one joint-space straight line.

For each row the arms move from their current joint positions to the row's absolute targets along a straight line
in joint space at constant speed, taking ``max(ROW_SECONDS, max_i |dq_i| / vmax_i, |dgrip| / GRIP_SPEED)`` seconds
rounded up to whole physics steps. Position servos track the interpolated setpoint with the line's velocity as
feed-forward. The grippers are interpolated linearly over the same steps. Nothing else advances simulated time.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from robofollow_ros.benchmark.types import ARMS
from robofollow_ros.sim.constants import GRIP_SPEED, ROW_SECONDS
from robofollow_ros.sim.model import CellModel
from robofollow_ros.state_layout import ARM_SLICE, GRIP_INDEX, STATE_DIM


class JointExecutor:
    """Drives the arm and finger actuators of one ``MjData`` row by row.

    The gripper element of the state is the gripper *command* (as in the published setup, where the recorded
    gripper value is the commanded one); the measured finger opening is available from ``physics.finger_opening``.
    """

    def __init__(self, cell: CellModel, data: mujoco.MjData) -> None:
        self.cell = cell
        self.data = data
        self.grip = np.ones(len(ARMS))
        self._qpos = np.concatenate([cell.arms[a].qpos for a in ARMS])
        self._pos_act = np.concatenate([cell.arms[a].pos_actuators for a in ARMS])
        self._vel_act = np.concatenate([cell.arms[a].vel_actuators for a in ARMS])
        self._finger_act = [cell.arms[a].finger_actuators for a in ARMS]
        # Each finger actuator's column in the (left, right) grip vector and its travel: one fancy-indexed write
        # per step instead of a Python loop over the arms.
        self._finger_all = np.concatenate(self._finger_act)
        self._finger_arm = np.concatenate([np.full(len(act), i) for i, act in enumerate(self._finger_act)])
        self._travel = np.array([cell.arms[a].finger_travel for a in ARMS])
        self._vmax = cell.robot.joint_velocity()
        self._lower = np.concatenate([cell.robot.arms[a].lower for a in ARMS])
        self._upper = np.concatenate([cell.robot.arms[a].upper for a in ARMS])
        self._dt = float(cell.model.opt.timestep)
        # Where a 14-D row keeps the 12 arm targets and the two grips: one fancy index each instead of building
        # them per row (the executor's per-row Python runs ~100 times per episode).
        self._row_arms = np.concatenate([np.arange(STATE_DIM)[ARM_SLICE[a]] for a in ARMS])
        self._row_grips = np.array([GRIP_INDEX[a] for a in ARMS])
        self._standstill = np.zeros(len(self._qpos))
        self._grip_travel = self._travel[self._finger_arm]

    def joints(self) -> np.ndarray:
        """The 12 arm joint positions (left 1-6, right 1-6)."""
        return self.data.qpos[self._qpos].copy()

    def state(self) -> np.ndarray:
        """The 14-D state: measured arm joints and the gripper commands (1 = open, 0 = closed)."""
        state = np.empty(STATE_DIM)
        joints = self.joints()
        for i, arm in enumerate(ARMS):
            state[ARM_SLICE[arm]] = joints[6 * i : 6 * i + 6]
            state[GRIP_INDEX[arm]] = self.grip[i]
        return state

    def hold(self, state: np.ndarray) -> None:
        """Command a standstill at ``state`` (14-D) without stepping."""
        targets, grip = self._split(state)
        self.grip = grip
        self._command(targets, np.zeros_like(targets), grip)

    def _split(self, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # np.clip bit for bit (NaN and signed zeros too) without its dispatch: with array bounds clip keeps the bound
        # where the value equals it, with scalar bounds the value, and maximum/minimum keep their second argument.
        row = np.asarray(row, dtype=np.float64)
        targets = np.minimum(np.maximum(row[self._row_arms], self._lower), self._upper)
        return targets, np.minimum(1.0, np.maximum(0.0, row[self._row_grips]))

    def _command(self, q: np.ndarray, qdot: np.ndarray, grip: np.ndarray) -> None:
        ctrl = self.data.ctrl
        ctrl[self._pos_act] = q
        ctrl[self._vel_act] = qdot
        for i, actuators in enumerate(self._finger_act):
            ctrl[actuators] = grip[i] * self._travel[i]

    def row_steps(self, row: np.ndarray) -> int:
        """Physics steps the executor spends on ``row`` from the current state."""
        targets, grip = self._split(np.asarray(row, dtype=np.float64))
        return self._steps(targets - self.joints(), grip - self.grip)

    def _steps(self, dq: np.ndarray, dgrip: np.ndarray) -> int:
        seconds = max(ROW_SECONDS, float((np.abs(dq) / self._vmax).max()), float(np.abs(dgrip).max()) / GRIP_SPEED)
        return max(1, math.ceil(seconds / self._dt - 1e-9))

    def execute_row(self, row: np.ndarray) -> int:
        """Move to the absolute 14-D target ``row`` (clipped to joint limits and [0, 1] grip); returns steps run."""
        targets, grip_target = self._split(row)
        start = self.joints()
        grip_start = self.grip.copy()
        dq = targets - start
        dgrip = grip_target - grip_start
        steps = self._steps(dq, dgrip)
        qdot = dq / (steps * self._dt)
        model, data = self.cell.model, self.data
        # Every step's controls at once, with the same float operations per element as one step at a time
        # (s = k / steps; start + s * dq; grip * travel), so that the trajectory is bit for bit the same.
        s = (np.arange(1, steps + 1, dtype=np.float64) / steps)[:, None]
        controls = np.repeat(data.ctrl[None, :], steps, axis=0)
        controls[:, self._pos_act] = start + s * dq
        controls[:, self._vel_act] = qdot
        grips = grip_start + s * dgrip
        controls[:, self._finger_all] = grips[:, self._finger_arm] * self._grip_travel
        ctrl = data.ctrl
        for control in controls:
            ctrl[:] = control
            mujoco.mj_step(model, data)
        self._command(targets, self._standstill, grip_target)
        self.grip = grip_target
        mujoco.mj_kinematics(model, data)
        return steps
