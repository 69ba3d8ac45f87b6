"""The planner's and executor's fast paths give the same bits as the plain numpy they replace.

The expert's IK, the executor's row split and the recorder avoid numpy's per-call wrappers (the full protocol spends
~10 ms per trial in them, docs/cell.md §8); every trajectory must stay bit for bit what it was, so each fast path
is checked here against a reference written with the textbook calls (``np.vstack``, ``np.linalg.norm``,
``np.clip``, ``np.eye``). A C-ordered Jacobian buffer, for one, rounds ``jac @ jac.T`` differently and fails the
IK comparison.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from robofollow_ros.benchmark.types import ARMS
from robofollow_ros.robot.description import load_robot
from robofollow_ros.robot.specs import robot_names
from robofollow_ros.sim import kinematics
from robofollow_ros.sim.executor import JointExecutor
from robofollow_ros.sim.kinematics import Kinematics
from robofollow_ros.sim.model import CellModel
from robofollow_ros.sim.rotations import quat_from_matrix, rotation_error, top_down, vector_norm
from robofollow_ros.sim.trajectory_frames import FrameRecorder
from robofollow_ros.state_layout import ARM_SLICE, GRIP_INDEX, STATE_DIM

pytestmark = pytest.mark.sim


def reference_rotation_error(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    quat_err = quat_from_matrix(target @ current.T)
    sin_half = np.linalg.norm(quat_err[1:])
    if sin_half < 1e-12:
        return np.zeros(3)
    return quat_err[1:] / sin_half * (2.0 * math.atan2(sin_half, quat_err[0]))


def reference_refine(
    kin: Kinematics, arm: str, pos: np.ndarray, rot: np.ndarray, q0: np.ndarray
) -> tuple[np.ndarray, float, float, int]:
    """Damped least squares as written before the fast path (kinematics.Kinematics._refine's contract)."""
    index = kin.cell.arms[arm]  # type: ignore[index]
    desc = kin.cell.robot.arms[arm]  # type: ignore[index]
    jacp, jacr = np.zeros((3, kin.model.nv)), np.zeros((3, kin.model.nv))
    q = np.clip(q0, desc.lower, desc.upper)
    err_p = err_r = math.inf
    for iteration in range(1, kinematics.MAX_ITERATIONS + 1):
        kin.data.qpos[:] = kin.model.qpos0
        kin.data.qpos[index.qpos] = q
        mujoco.mj_kinematics(kin.model, kin.data)
        dp = pos - kin.data.site_xpos[index.tcp_site]
        dr = reference_rotation_error(rot, kin.data.site_xmat[index.tcp_site].reshape(3, 3))
        err_p, err_r = float(np.linalg.norm(dp)), float(np.linalg.norm(dr))
        if err_p < kinematics.POSITION_TOLERANCE and err_r < kinematics.ROTATION_TOLERANCE:
            return q, err_p, err_r, iteration
        mujoco.mj_comPos(kin.model, kin.data)
        mujoco.mj_jacSite(kin.model, kin.data, jacp, jacr, index.tcp_site)
        jac = np.vstack([jacp[:, index.dof], jacr[:, index.dof]])
        dq = jac.T @ np.linalg.solve(jac @ jac.T + kinematics.DAMPING * np.eye(6), np.concatenate([dp, dr]))
        scale = np.max(np.abs(dq)) / kinematics.MAX_JOINT_STEP
        if scale > 1.0:
            dq /= scale
        q = np.clip(q + dq, desc.lower, desc.upper)
    return q, err_p, err_r, kinematics.MAX_ITERATIONS


@pytest.fixture(scope='module', params=robot_names())
def cell(request: pytest.FixtureRequest) -> CellModel:
    return CellModel.build([], robot=load_robot(request.param))


def test_vector_norm_and_rotation_error_are_numpys_bits() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        vector = rng.normal(size=3) * 10.0 ** rng.integers(-9, 2)
        assert vector_norm(vector) == float(np.linalg.norm(vector))
        a, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        b, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        a, b = a * np.sign(np.linalg.det(a)), b * np.sign(np.linalg.det(b))
        assert rotation_error(a, b).tobytes() == reference_rotation_error(a, b).tobytes()
    assert rotation_error(np.eye(3), np.eye(3)).tobytes() == np.zeros(3).tobytes()


def test_ik_iterations_are_the_reference_bit_for_bit(cell: CellModel) -> None:
    kin = Kinematics(cell)
    rng = np.random.default_rng(3)
    failed = 0
    for i in range(60):
        arm = ARMS[i % 2]
        # Reachable and unreachable targets alike: the unreachable ones run all 80 iterations, clamped at limits.
        pos = np.array([rng.uniform(-0.35, 0.35), rng.uniform(-0.3, 0.3), rng.uniform(0.75, 1.1)])
        rot = top_down(rng.uniform(-math.pi, math.pi))
        q0 = kin.home(arm) + rng.normal(scale=0.4, size=6)
        fast = kin._refine(arm, pos, rot, q0)
        slow = reference_refine(kin, arm, pos, rot, q0)
        assert fast[0].tobytes() == slow[0].tobytes(), (arm, pos)
        assert fast[1:] == slow[1:]
        failed += fast[3] == kinematics.MAX_ITERATIONS
    assert 0 < failed < 60, 'the sample should hold both converging and non-converging targets'


def test_executor_split_clips_like_np_clip(cell: CellModel) -> None:
    executor = JointExecutor(cell, mujoco.MjData(cell.model))
    lower, upper = executor._lower, executor._upper
    rows = [np.zeros(STATE_DIM), np.full(STATE_DIM, -0.0), np.full(STATE_DIM, 9.0), np.full(STATE_DIM, -9.0)]
    at_limits = np.zeros(STATE_DIM)
    for i, arm in enumerate(ARMS):
        at_limits[ARM_SLICE[arm]] = (lower if i else upper)[6 * i : 6 * i + 6]
        at_limits[GRIP_INDEX[arm]] = 1.0 if i else 0.0
    rows.append(at_limits)
    rows.extend(np.random.default_rng(5).normal(scale=2.0, size=(20, STATE_DIM)))
    for row in rows:
        targets, grip = executor._split(row)
        expected_targets = np.clip(np.concatenate([row[ARM_SLICE[a]] for a in ARMS]), lower, upper)
        expected_grip = np.clip(np.array([row[GRIP_INDEX[a]] for a in ARMS]), 0.0, 1.0)
        assert targets.tobytes() == expected_targets.tobytes()
        assert grip.tobytes() == expected_grip.tobytes()


def test_recorded_tcp_quaternions_are_quat_from_matrix(cell: CellModel) -> None:
    data = mujoco.MjData(cell.model)
    executor = JointExecutor(cell, data)
    home = cell.robot.home_state()
    executor.hold(home)
    mujoco.mj_forward(cell.model, data)
    recorder = FrameRecorder(cell, data, t0=0.0)
    expected: dict[str, list[bytes]] = {arm: [] for arm in ARMS}
    rng = np.random.default_rng(11)
    for _ in range(8):
        executor.execute_row(home + rng.normal(scale=0.3, size=STATE_DIM))
        recorder.record(executor.grip)
        for arm in ARMS:
            matrix = data.site_xmat[cell.arms[arm].tcp_site].reshape(3, 3)
            expected[arm].append(quat_from_matrix(matrix).tobytes())
    quats = recorder.trajectory().ee_quat
    for arm in ARMS:
        assert [q.tobytes() for q in quats[arm]] == expected[arm]
