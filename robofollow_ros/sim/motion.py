"""Motion primitives that produce absolute 14-D action rows for scripted behaviours (the expert's toolbox).

Every primitive takes the *current command* (the last 14-D row sent, or the observed state at the start) and
returns a (N, 14) float64 array of rows; the other arm keeps its values. Rows are sized so that the executor
(``executor.JointExecutor``) runs each in about ``ROW_SECONDS``: Cartesian moves advance the TCP by at most
``cartesian_step`` per row, joint moves by a fraction of each joint's velocity limit. ``Plan`` chains primitives.

Orientation convention: ``yaw`` is the rotation about world z of the top-down grasp (``rotations.top_down``); at
yaw 0 the fingers close along world x, at yaw pi/2 along world y.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from robofollow_ros.benchmark.types import TABLE_Z, Arm
from robofollow_ros.sim.constants import ROW_SECONDS
from robofollow_ros.sim.kinematics import Kinematics, UnreachablePoseError
from robofollow_ros.sim.rotations import tcp_yaw, top_down, wrap_angle
from robofollow_ros.state_layout import ARM_SLICE, GRIP_INDEX

CARTESIAN_STEP = 0.01
"""Default TCP advance per row in straight-line moves (m): ~0.17 m/s at the nominal row time."""
JOINT_SPEED_FRACTION = 0.8
"""Joint moves use this fraction of each joint's velocity limit, so every row runs at the nominal duration;
straight-line moves get more rows where a joint would exceed it."""
LINEAR_REFINEMENTS = 4
"""Times a straight-line move is cut finer when a joint would exceed its speed (the IK path changes with the rows)."""
TABLE_CLEARANCE = 0.003
"""Lowest allowed fingertip height above the table top (m)."""
GRIP_HOLD_ROWS = 4
"""Rows held after a gripper command so the fingers reach their force/position before the arm moves."""
OPEN = 1.0
CLOSED = 0.0


def nearest_equivalent_turn(turn: float) -> float:
    """The rotation in [-pi/2, pi/2] equivalent to ``turn`` for a two-finger gripper (symmetric under pi)."""
    turn = wrap_angle(turn)
    if turn > math.pi / 2.0:
        turn -= math.pi
    elif turn < -math.pi / 2.0:
        turn += math.pi
    return turn


class Plan:
    """Accumulates action rows; ``state`` is the last commanded 14-D row (the start state before any row)."""

    def __init__(self, start: np.ndarray) -> None:
        self.state = np.array(start, dtype=np.float64)
        self._rows: list[np.ndarray] = []

    def add(self, rows: np.ndarray) -> Plan:
        """Append rows (N, 14) and advance ``state`` to the last one; returns self for chaining."""
        rows = np.atleast_2d(np.asarray(rows, dtype=np.float64))
        if rows.shape[0]:
            self._rows.append(rows)
            self.state = rows[-1].copy()
        return self

    def rows(self) -> np.ndarray:
        """Every row so far as one (N, 14) array."""
        return np.concatenate(self._rows) if self._rows else np.zeros((0, 14))

    def __len__(self) -> int:
        return sum(r.shape[0] for r in self._rows)


class MotionPlanner:
    """Builds action rows from Cartesian and joint-space goals using ``Kinematics``.

    Args:
        kinematics: FK/IK of the cell's current model (``CellEnv.kinematics``).
        cartesian_step: TCP advance per row of straight-line moves (m).
        joint_speed: fraction of the velocity limits used by joint-space moves.
    """

    def __init__(
        self,
        kinematics: Kinematics,
        *,
        cartesian_step: float = CARTESIAN_STEP,
        joint_speed: float = JOINT_SPEED_FRACTION,
    ) -> None:
        self.kin = kinematics
        self.cartesian_step = cartesian_step
        self.joint_speed = joint_speed
        robot = kinematics.cell.robot
        self._vmax = {arm: robot.arms[arm].velocity for arm in robot.arms}
        model, cell = kinematics.model, kinematics.cell
        arm = next(iter(cell.arms))
        finger_body = int(model.jnt_bodyid[model.joint(cell.robot.arms[arm].fingers[0]).id])
        palm_body = int(model.body_parentid[finger_body])
        self.fingertip_offset = self._front_face(arm, finger_body)
        """Distance (m) from the TCP to the fingertips along the TCP's +x (down in a top-down grasp)."""
        self.palm_offset = -self._front_face(arm, palm_body)
        """Distance (m) from the TCP back to the palm face (up in a top-down grasp)."""
        pos, rot = self.kin.fk_matrix(arm, self.kin.home(arm))
        fingers = sorted(
            (int(model.jnt_bodyid[model.joint(f).id]) for f in cell.robot.arms[arm].fingers),
            key=lambda body: float((self.kin.data.xipos[body] - pos) @ rot[:, 1]),
        )
        self.closed_gap = -self._front_face(arm, fingers[1], axis=1, sign=-1.0) - self._front_face(
            arm, fingers[0], axis=1
        )
        """Gap (m) between the finger pads at grip 0, measured from the geoms (negative: the pads overlap and
        the servos press them together)."""
        self._travel = {a: cell.robot.arms[a].finger_travel for a in cell.arms}

    def _front_face(self, arm: Arm, body: int, *, axis: int = 0, sign: float = 1.0) -> float:
        """Signed position, relative to the TCP along ``sign`` times its ``axis``-th axis (+x: toward the
        fingertips), of a body's foremost geom face, with the fingers closed."""
        model, data = self.kin.model, self.kin.data
        pos, rot = self.kin.fk_matrix(arm, self.kin.home(arm))
        direction = sign * rot[:, axis]
        faces = []
        for g in np.flatnonzero(model.geom_bodyid == body):
            geom_rot = data.geom_xmat[g].reshape(3, 3)
            centre = float((data.geom_xpos[g] - pos) @ direction)
            if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH:
                mesh = model.geom_dataid[g]
                start = model.mesh_vertadr[mesh]
                vertices = model.mesh_vert[start : start + model.mesh_vertnum[mesh]]
                faces.append(centre + float(np.max(vertices @ (geom_rot.T @ direction))))
            else:
                faces.append(centre + float(np.sum(np.abs(geom_rot.T @ direction) * model.geom_size[g])))
        return max(faces)

    def pad_gap(self, arm: Arm, grip: float) -> float:
        """Gap (m) between the finger pads at the normalised ``grip`` (0 closed, 1 open)."""
        return self.closed_gap + 2.0 * self._travel[arm] * grip

    def grip_for_gap(self, arm: Arm, gap: float) -> float:
        """The normalised grip that opens the pads ``gap`` apart (clipped to [0, 1])."""
        return float(np.clip((gap - self.closed_gap) / (2.0 * self._travel[arm]), 0.0, 1.0))

    @property
    def min_tcp_z(self) -> float:
        """Lowest TCP height for a top-down grasp that keeps the fingertips ``TABLE_CLEARANCE`` above the table."""
        return TABLE_Z + self.fingertip_offset + TABLE_CLEARANCE

    def grasp_height(self, centre_z: float, *, top_z: float | None = None) -> float:
        """TCP height for a top-down grasp of an object centred at ``centre_z``.

        The object's centre, raised so that the fingertips clear the table by ``TABLE_CLEARANCE`` and, when the
        object's top ``top_z`` is given, so that the palm stays ``TABLE_CLEARANCE`` above that top.
        """
        z = max(centre_z, self.min_tcp_z)
        if top_z is not None:
            z = max(z, top_z - self.palm_offset + TABLE_CLEARANCE)
        return z

    def tcp(self, state: np.ndarray, arm: Arm) -> tuple[np.ndarray, np.ndarray]:
        """TCP position and rotation matrix commanded by ``state`` for ``arm``."""
        return self.kin.fk_matrix(arm, state[ARM_SLICE[arm]])

    def _with_arm(self, state: np.ndarray, arm: Arm, q: np.ndarray, grip: float | None) -> np.ndarray:
        row = np.array(state, dtype=np.float64)
        row[ARM_SLICE[arm]] = q
        if grip is not None:
            row[GRIP_INDEX[arm]] = grip
        return row

    def joint_rows(self, state: np.ndarray, arm: Arm, q_target: np.ndarray, *, grip: float | None = None) -> np.ndarray:
        """Straight joint-space move of ``arm`` to ``q_target`` in rows of nominal duration.

        ``grip`` (if given) is interpolated over the same rows.
        """
        q0 = np.asarray(state[ARM_SLICE[arm]], dtype=np.float64)
        q1 = np.asarray(q_target, dtype=np.float64)
        per_row = self._vmax[arm] * ROW_SECONDS * self.joint_speed
        n = max(1, math.ceil(float(np.max(np.abs(q1 - q0) / per_row)) - 1e-9))
        g0 = float(state[GRIP_INDEX[arm]])
        g1 = g0 if grip is None else float(grip)
        rows = [self._with_arm(state, arm, q0 + (q1 - q0) * k / n, g0 + (g1 - g0) * k / n) for k in range(1, n + 1)]
        return np.array(rows)

    def ik(self, state: np.ndarray, arm: Arm, pos: np.ndarray, *, yaw: float) -> np.ndarray:
        """Joints for a top-down TCP at ``pos`` and ``yaw`` (or yaw + pi, whichever is closer to ``state``).

        Raises:
            UnreachablePoseError: no solution within the joint limits.
        """
        return self.kin.solve_or_raise(
            arm, np.asarray(pos, dtype=np.float64), yaw=yaw, seed=state[ARM_SLICE[arm]], symmetric=True
        )

    def move_to(
        self, state: np.ndarray, arm: Arm, pos: np.ndarray, *, yaw: float = 0.0, grip: float | None = None
    ) -> np.ndarray:
        """Joint-space move (free-space transfer) to a top-down TCP pose; the TCP path is not a straight line.

        Raises:
            UnreachablePoseError: the goal has no IK solution.
        """
        return self.joint_rows(state, arm, self.ik(state, arm, pos, yaw=yaw), grip=grip)

    def linear(
        self,
        state: np.ndarray,
        arm: Arm,
        pos: np.ndarray,
        *,
        yaw: float | None = None,
        grip: float | None = None,
        step: float | None = None,
    ) -> np.ndarray:
        """Straight-line TCP move to ``pos`` with a top-down orientation, one IK solution per row.

        Args:
            state: current command (14,); the arm must already point down.
            arm: which arm moves.
            pos: goal TCP position (m, world).
            yaw: goal yaw; None keeps the current yaw. The yaw is interpolated along the line, choosing the
                equivalent goal (yaw + k*pi) nearest to the current yaw.
            grip: gripper value interpolated along the move (None keeps it).
            step: TCP advance per row (default ``cartesian_step``).

        Raises:
            UnreachablePoseError: a waypoint has no IK solution (the message names it).
        """
        start, rot = self.tcp(state, arm)
        yaw0 = tcp_yaw(rot)
        yaw1 = yaw0 if yaw is None else yaw0 + nearest_equivalent_turn(yaw - yaw0)
        goal = np.asarray(pos, dtype=np.float64)
        distance = float(np.linalg.norm(goal - start))
        step = step or self.cartesian_step
        n = max(1, math.ceil(distance / step - 1e-9), math.ceil(abs(yaw1 - yaw0) / 0.1 - 1e-9))
        per_row = self._vmax[arm] * ROW_SECONDS * self.joint_speed
        for _ in range(LINEAR_REFINEMENTS):
            joints = self._line_joints(state, arm, start, goal, (yaw0, yaw1), n)
            steps = np.abs(np.diff(np.vstack([state[ARM_SLICE[arm]], joints]), axis=0))
            fastest = float((steps / per_row).max())
            if fastest <= 1.0:
                break
            # Near a wrist singularity one TCP step can turn a joint past its speed limit: more, shorter rows.
            n = math.ceil(n * fastest)
        g0 = float(state[GRIP_INDEX[arm]])
        g1 = g0 if grip is None else float(grip)
        rows = len(joints)
        return np.array([self._with_arm(state, arm, q, g0 + (g1 - g0) * k / rows) for k, q in enumerate(joints, 1)])

    def _line_joints(
        self, state: np.ndarray, arm: Arm, start: np.ndarray, goal: np.ndarray, yaws: tuple[float, float], n: int
    ) -> np.ndarray:
        """The arm's joints (n, 6) at ``n`` even steps of the straight line from ``start`` to ``goal``."""
        yaw0, yaw1 = yaws
        joints = []
        q = np.asarray(state[ARM_SLICE[arm]], dtype=np.float64)
        for k in range(1, n + 1):
            s = k / n
            waypoint = start + (goal - start) * s
            solution = self.kin.solve(arm, waypoint, rotation=top_down(yaw0 + (yaw1 - yaw0) * s), seed=q)
            if not solution.success:
                raise UnreachablePoseError(
                    f'{arm} arm: straight line to {np.round(goal, 3).tolist()} breaks at waypoint '
                    f'{np.round(waypoint, 3).tolist()} (residual {solution.position_error * 1000:.1f} mm)'
                )
            q = solution.q
            joints.append(q)
        return np.array(joints)

    def gripper(self, state: np.ndarray, arm: Arm, value: float, *, hold_rows: int = GRIP_HOLD_ROWS) -> np.ndarray:
        """Open (1) or close (0) a gripper: one command row (the executor stretches it to ``|dgrip| / GRIP_SPEED``
        seconds) followed by ``hold_rows`` rows that let the fingers settle."""
        row = self._with_arm(state, arm, state[ARM_SLICE[arm]], value)
        return np.tile(row, (1 + hold_rows, 1))

    def hold(self, state: np.ndarray, rows: int) -> np.ndarray:
        """``rows`` copies of ``state`` (both arms stand still)."""
        return np.tile(np.asarray(state, dtype=np.float64), (rows, 1))

    def grasp(
        self,
        state: np.ndarray,
        arm: Arm,
        pos: np.ndarray,
        *,
        yaw: float = 0.0,
        pregrasp: float = 0.08,
        lift: float = 0.10,
        opening: float = OPEN,
    ) -> np.ndarray:
        """Approach-grasp-lift: open to ``opening``, joint move to ``pregrasp`` above ``pos``, straight descent,
        close, straight lift by ``lift``.

        ``pos`` is the TCP grasp position (use ``grasp_height`` for its z); the arm ends holding the object.

        Raises:
            UnreachablePoseError: a pose along the way has no IK solution.
        """
        goal = np.asarray(pos, dtype=np.float64)
        plan = Plan(state)
        if float(plan.state[GRIP_INDEX[arm]]) != opening:
            plan.add(self.gripper(plan.state, arm, opening, hold_rows=0))
        plan.add(self.move_to(plan.state, arm, goal + np.array([0.0, 0.0, pregrasp]), yaw=yaw))
        plan.add(self.linear(plan.state, arm, goal))
        plan.add(self.gripper(plan.state, arm, CLOSED))
        plan.add(self.linear(plan.state, arm, goal + np.array([0.0, 0.0, lift])))
        return plan.rows()

    def place(
        self,
        state: np.ndarray,
        arm: Arm,
        pos: np.ndarray,
        *,
        yaw: float | None = None,
        approach: float = 0.06,
        retreat: float = 0.08,
        transfer_linear: bool = True,
    ) -> np.ndarray:
        """Carry-and-release: move above ``pos`` by ``approach``, descend straight, open, retreat straight up.

        ``pos`` is the TCP position at release. ``transfer_linear`` carries the object along a straight line to the
        approach point (else a joint-space move). ``yaw`` None keeps the current yaw.

        Raises:
            UnreachablePoseError: a pose along the way has no IK solution.
        """
        goal = np.asarray(pos, dtype=np.float64)
        above = goal + np.array([0.0, 0.0, approach])
        plan = Plan(state)
        if transfer_linear:
            plan.add(self.linear(plan.state, arm, above, yaw=yaw))
        else:
            current_yaw = tcp_yaw(self.tcp(plan.state, arm)[1])
            plan.add(self.move_to(plan.state, arm, above, yaw=current_yaw if yaw is None else yaw))
        plan.add(self.linear(plan.state, arm, goal))
        plan.add(self.gripper(plan.state, arm, OPEN))
        plan.add(self.linear(plan.state, arm, goal + np.array([0.0, 0.0, retreat])))
        return plan.rows()

    def home(self, state: np.ndarray, arm: Arm, *, grip: float | None = None) -> np.ndarray:
        """Joint-space move of ``arm`` back to its home joints (gripper kept unless ``grip`` is given)."""
        return self.joint_rows(state, arm, self.kin.home(arm), grip=grip)
