"""Forward and inverse kinematics of the cell's arms, computed with MuJoCo on a private scratch ``MjData``.

The IK solves for a TCP position plus a *top-down* orientation rotated by a yaw angle about world z (see
``rotations.top_down``), or any full orientation matrix. It starts from a closed-form guess for this arm's
geometry (waist + planar shoulder/elbow + wrist pitch, forearm roll 0; the links' zero-pose directions are those of
an arm standing upright unless the robot's spec asks for the measured ones), then refines with damped least squares
on MuJoCo's site Jacobian, clamping to joint limits. Failure is reported in ``IKSolution`` (or raised as
``UnreachablePoseError`` by ``solve_or_raise``), never silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from robofollow_ros.benchmark.types import Arm
from robofollow_ros.errors import SimulationError
from robofollow_ros.sim.model import CellModel
from robofollow_ros.sim.rotations import quat_from_matrix, rotation_error, top_down, vector_norm, wrap_angle

POSITION_TOLERANCE = 2e-4
"""IK success: TCP within 0.2 mm of the target."""
ROTATION_TOLERANCE = 2e-3
"""IK success: orientation within 2 mrad of the target."""
DAMPING = 1e-3
MAX_ITERATIONS = 80
MAX_JOINT_STEP = 0.3
UPRIGHT = (math.pi / 2.0, 0.0, 0.0)
"""Zero-pose elevations of upper arm, forearm and tool the closed-form guess assumes unless measured."""


class UnreachablePoseError(SimulationError):
    """No joint configuration within limits puts the TCP at the requested pose."""


@dataclass(frozen=True)
class IKSolution:
    """Result of one IK query.

    Attributes:
        q: the six joint positions found (the best attempt when ``success`` is False).
        success: both tolerances met within joint limits.
        position_error: remaining TCP distance to the target (m).
        rotation_error: remaining orientation error (rad).
        iterations: DLS iterations spent over all attempts.
    """

    q: np.ndarray
    success: bool
    position_error: float
    rotation_error: float
    iterations: int


@dataclass(frozen=True)
class ArmGeometry:
    """Geometry of one arm read from the compiled model at the zero configuration (arm base frame)."""

    base_pos: np.ndarray
    base_rot: np.ndarray
    shoulder: np.ndarray
    upper: float
    fore: float
    wrist_to_tcp: float
    elevations: tuple[float, float, float]
    """Zero-pose elevations (rad) above the base's horizontal plane, in the arm's vertical plane, of the upper arm
    (shoulder to elbow), the forearm (elbow to wrist) and the tool (wrist to TCP)."""


class Kinematics:
    """FK/IK for both arms on a scratch copy of the model's data (never touches the simulation's ``MjData``)."""

    def __init__(self, cell: CellModel) -> None:
        self.cell = cell
        self.model = cell.model
        self.data = mujoco.MjData(cell.model)
        self._jacp = np.zeros((3, cell.model.nv))
        self._jacr = np.zeros((3, cell.model.nv))
        # Fortran order like the np.vstack of the two column-indexed Jacobian blocks it replaces: BLAS rounds
        # jac @ jac.T differently for the other layout, and the IK's solutions (so every trajectory) must keep
        # their bits.
        self._jac = np.zeros((6, 6), order='F')
        self._err = np.zeros(6)
        self._damping = DAMPING * np.eye(6)
        self.geometry = {arm: self._measure(arm) for arm in cell.arms}

    def _measure(self, arm: Arm) -> ArmGeometry:
        index = self.cell.arms[arm]
        self.data.qpos[index.qpos] = 0.0
        mujoco.mj_kinematics(self.model, self.data)
        joints = [self.model.joint(n).id for n in self.cell.robot.arms[arm].joints]
        anchors = [self.data.xanchor[j].copy() for j in joints]
        base_body = self.model.body(self.cell.robot.arms[arm].base).id
        base_pos = self.data.xpos[base_body].copy()
        base_rot = self.data.xmat[base_body].reshape(3, 3).copy()
        tcp = self.data.site_xpos[index.tcp_site].copy()

        def elevation(start: np.ndarray, end: np.ndarray) -> float:
            direction = base_rot.T @ (end - start)
            return math.atan2(float(direction[2]), float(direction[0]))

        return ArmGeometry(
            base_pos=base_pos,
            base_rot=base_rot,
            shoulder=base_rot.T @ (anchors[1] - base_pos),
            upper=float(np.linalg.norm(anchors[2] - anchors[1])),
            fore=float(np.linalg.norm(anchors[4] - anchors[2])),
            wrist_to_tcp=float(np.linalg.norm(tcp - anchors[4])),
            elevations=(
                elevation(anchors[1], anchors[2]),
                elevation(anchors[2], anchors[4]),
                elevation(anchors[4], tcp),
            ),
        )

    def _set(self, arm: Arm, q: np.ndarray) -> None:
        # Every other joint back at qpos0 first: the Jacobian's arithmetic goes through the whole tree's centre of
        # mass, so the other arm's last solved pose would leak into this solution's last bits, and a trial's
        # trajectory would depend on what the process planned before it.
        self.data.qpos[:] = self.model.qpos0
        self.data.qpos[self.cell.arms[arm].qpos] = q
        mujoco.mj_kinematics(self.model, self.data)

    def fk(self, arm: Arm, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """TCP position (3,) and quaternion (w, x, y, z) for the six joints ``q`` of ``arm``."""
        pos, rot = self.fk_matrix(arm, q)
        return pos, quat_from_matrix(rot)

    def fk_matrix(self, arm: Arm, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """TCP position (3,) and rotation matrix (3, 3) for the six joints ``q`` of ``arm``."""
        self._set(arm, np.asarray(q, dtype=np.float64))
        site = self.cell.arms[arm].tcp_site
        return self.data.site_xpos[site].copy(), self.data.site_xmat[site].reshape(3, 3).copy()

    def home(self, arm: Arm) -> np.ndarray:
        """The arm's home joints."""
        return np.array(self.cell.robot.spec.arm_home(arm), dtype=np.float64)

    def closed_form_guess(self, arm: Arm, pos: np.ndarray, yaw: float) -> np.ndarray | None:
        """Joints that put the TCP at ``pos`` pointing down at ``yaw`` for the ideal planar arm; None if out of reach.

        Exact when the arm's joint axes are as built (waist z, pitch joints parallel, rolls 0) and its links' zero-pose
        directions are the ones assumed (``ArmGeometry.elevations`` when the spec's ``measured_ik_guess`` says so,
        else an upright upper arm with a horizontal forearm and tool); the DLS refinement absorbs the remaining
        offsets.
        """
        geo = self.geometry[arm]
        upper0, fore0, tool0 = geo.elevations if self.cell.robot.spec.measured_ik_guess else UPRIGHT
        wrist = geo.base_rot.T @ (
            np.asarray(pos, dtype=np.float64) + np.array([0.0, 0.0, geo.wrist_to_tcp]) - geo.base_pos
        )
        q1 = math.atan2(wrist[1], wrist[0])
        r = math.hypot(wrist[0], wrist[1]) - math.hypot(geo.shoulder[0], geo.shoulder[1])
        z = wrist[2] - geo.shoulder[2]
        cos_elbow = (r * r + z * z - geo.upper**2 - geo.fore**2) / (2.0 * geo.upper * geo.fore)
        if abs(cos_elbow) > 1.0:
            return None
        phi = -math.acos(cos_elbow)
        theta1 = math.atan2(z, r) - math.atan2(geo.fore * math.sin(phi), geo.upper + geo.fore * math.cos(phi))
        q2 = upper0 - theta1
        q3 = (fore0 - upper0) - phi
        q5 = (tool0 + math.pi / 2.0) - q2 - q3
        q6 = wrap_angle(q1 - yaw)
        return np.array([q1, q2, q3, 0.0, q5, q6])

    def _refine(
        self, arm: Arm, pos: np.ndarray, rot: np.ndarray, q0: np.ndarray
    ) -> tuple[np.ndarray, float, float, int]:
        # The expert spends most of its planning here (~130 iterations per trial), so numpy's per-call wrappers
        # are avoided where an equivalent call gives the same bits: vector_norm is np.linalg.norm's arithmetic,
        # minimum(maximum(x, lower), upper) is clip with array bounds (NaN and signed zeros too), the Jacobian
        # and the error fill preallocated arrays (the Jacobian in the layout vstack gave it) and the damping
        # matrix is built once.
        index = self.cell.arms[arm]
        desc = self.cell.robot.arms[arm]
        lower, upper = desc.lower, desc.upper
        model, data = self.model, self.data
        site = index.tcp_site
        site_xpos, site_xmat = data.site_xpos[site], data.site_xmat[site].reshape(3, 3)
        jacp, jacr, jac, err = self._jacp, self._jacr, self._jac, self._err
        dof = index.dof
        q = np.minimum(np.maximum(q0, lower), upper)
        err_p = err_r = math.inf
        for iteration in range(1, MAX_ITERATIONS + 1):
            self._set(arm, q)
            dp = pos - site_xpos
            dr = rotation_error(rot, site_xmat)
            err_p, err_r = vector_norm(dp), vector_norm(dr)
            if err_p < POSITION_TOLERANCE and err_r < ROTATION_TOLERANCE:
                return q, err_p, err_r, iteration
            mujoco.mj_comPos(model, data)
            mujoco.mj_jacSite(model, data, jacp, jacr, site)
            jac[:3] = jacp[:, dof]
            jac[3:] = jacr[:, dof]
            err[:3] = dp
            err[3:] = dr
            dq = jac.T @ np.linalg.solve(jac @ jac.T + self._damping, err)
            scale = float(np.abs(dq).max()) / MAX_JOINT_STEP
            if scale > 1.0:
                dq /= scale
            q = np.minimum(np.maximum(q + dq, lower), upper)
        return q, err_p, err_r, MAX_ITERATIONS

    def solve(
        self,
        arm: Arm,
        pos: np.ndarray,
        *,
        yaw: float = 0.0,
        rotation: np.ndarray | None = None,
        seed: np.ndarray | None = None,
        symmetric: bool = True,
    ) -> IKSolution:
        """Joints putting ``arm``'s TCP at ``pos`` with a top-down orientation at ``yaw`` (or ``rotation``).

        Args:
            arm: ``left`` or ``right``.
            pos: target TCP position in the world frame (m).
            yaw: rotation about world z of the top-down grasp (rad); ignored when ``rotation`` is given.
            rotation: full target orientation (3x3, columns = TCP axes), overrides ``yaw``.
            seed: starting joints (e.g. the previous waypoint's solution); tried first.
            symmetric: also accept ``yaw + pi`` (the parallel gripper is symmetric); the solution closest to
                ``seed`` (or home) wins.

        Returns:
            The best ``IKSolution`` found; check ``success``.
        """
        pos = np.asarray(pos, dtype=np.float64)
        targets = [rotation] if rotation is not None else [top_down(yaw)]
        if rotation is None and symmetric:
            targets.append(top_down(yaw + math.pi))
        reference = np.asarray(seed, dtype=np.float64) if seed is not None else self.home(arm)
        best: IKSolution | None = None
        iterations = 0
        for rot in targets:
            target_yaw = math.atan2(rot[1, 1] * -1.0, rot[0, 1] * -1.0) if rotation is None else yaw
            starts: list[np.ndarray] = []
            if seed is not None:
                starts.append(np.asarray(seed, dtype=np.float64))
            guess = self.closed_form_guess(arm, pos, target_yaw) if rotation is None else None
            if guess is not None:
                starts.append(guess)
            starts.append(self.home(arm))
            for start in starts:
                q, err_p, err_r, n = self._refine(arm, pos, rot, start)
                iterations += n
                ok = err_p < POSITION_TOLERANCE and err_r < ROTATION_TOLERANCE
                candidate = IKSolution(
                    q=q, success=ok, position_error=err_p, rotation_error=err_r, iterations=iterations
                )
                if best is None or _better(candidate, best, reference):
                    best = candidate
                if ok:
                    break
        assert best is not None
        return IKSolution(
            q=best.q,
            success=best.success,
            position_error=best.position_error,
            rotation_error=best.rotation_error,
            iterations=iterations,
        )

    def solve_or_raise(self, arm: Arm, pos: np.ndarray, **options: object) -> np.ndarray:
        """Like ``solve`` but returns the joints, or raises ``UnreachablePoseError`` with the residual errors."""
        solution = self.solve(arm, pos, **options)  # type: ignore[arg-type]
        if not solution.success:
            target = ', '.join(f'{v:.3f}' for v in np.asarray(pos, dtype=np.float64))
            raise UnreachablePoseError(
                f'{arm} arm cannot reach TCP ({target}) with options {options}: residual '
                f'{solution.position_error * 1000:.1f} mm / {math.degrees(solution.rotation_error):.1f} deg'
            )
        return solution.q


def _better(candidate: IKSolution, best: IKSolution, reference: np.ndarray) -> bool:
    if candidate.success != best.success:
        return candidate.success
    if not candidate.success:
        return candidate.position_error + 0.1 * candidate.rotation_error < (
            best.position_error + 0.1 * best.rotation_error
        )
    return float(np.max(np.abs(candidate.q - reference))) < float(np.max(np.abs(best.q - reference)))
