"""Row generation: the motion building blocks the action planners chain (grasp, carry-and-release, push, home).

A *phase* is a function of a ``PhaseContext`` (the scene as observed when the phase starts, the last
commanded row and the motion planner) returning absolute 14-D action rows. Phases that place a held
object measure where the object sits in the hand at their start, so the release pose is corrected for
any slip during the grasp.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros.benchmark.types import Arm
from robofollow_ros.sim.expert import constants as c
from robofollow_ros.sim.expert.geometry import (
    PushPath,
    grasp_pose,
    grasp_width,
    hand_turn,
    symmetry_period,
    tcp_for_object,
)
from robofollow_ros.sim.expert.scene import SceneView
from robofollow_ros.sim.motion import CLOSED, MotionPlanner, Plan
from robofollow_ros.sim.rotations import tcp_yaw
from robofollow_ros.state_layout import GRIP_INDEX


@dataclass(frozen=True)
class PhaseContext:
    """What a phase starts from.

    Attributes:
        view: object and TCP poses observed when the phase starts.
        command: the last commanded 14-D row (the observed state before the first row of the episode).
        motion: the motion planner (IK and primitives).
    """

    view: SceneView
    command: np.ndarray
    motion: MotionPlanner

    def tcp(self, arm: Arm) -> np.ndarray:
        """The TCP position commanded by ``command``."""
        return self.motion.tcp(self.command, arm)[0]

    def hand_yaw(self, arm: Arm) -> float:
        """The yaw of the commanded top-down TCP."""
        return tcp_yaw(self.motion.tcp(self.command, arm)[1])

    def held_offset(self, arm: Arm, name: str) -> np.ndarray:
        """Object centre minus commanded TCP: where the held object sits relative to the hand."""
        return self.view.pos(name) - self.tcp(arm)


Phase = Callable[[PhaseContext], np.ndarray]


def grasp(ctx: PhaseContext, arm: Arm, name: str, *, lift: float = c.LIFT_HEIGHT) -> np.ndarray:
    """Open, approach above ``name``, descend straight, close, lift straight by ``lift``."""
    motion = ctx.motion
    pose = grasp_pose(
        ctx.view,
        name,
        fingertip_offset=motion.fingertip_offset,
        min_tcp_z=motion.min_tcp_z,
        finger_travel=motion.kin.cell.robot.arms[arm].finger_travel,
    )
    up = np.array([0.0, 0.0, 1.0])
    plan = Plan(ctx.command)
    if float(plan.state[GRIP_INDEX[arm]]) != pose.opening:
        plan.add(motion.gripper(plan.state, arm, pose.opening, hold_rows=0))
    plan.add(motion.move_to(plan.state, arm, pose.tcp + up * c.PREGRASP_HEIGHT, yaw=pose.yaw))
    plan.add(motion.linear(plan.state, arm, pose.tcp, step=c.DESCENT_STEP))
    plan.add(motion.gripper(plan.state, arm, CLOSED))
    plan.add(motion.linear(plan.state, arm, pose.tcp + up * lift))
    return plan.rows()


def carry_and_release(
    ctx: PhaseContext,
    arm: Arm,
    name: str,
    goal: np.ndarray,
    *,
    goal_yaw: float | None = None,
    waypoints: Sequence[np.ndarray] = (),
    dwell_rows: int = 0,
) -> np.ndarray:
    """Carry the held ``name`` through ``waypoints`` to ``goal`` (object centres), release it and retreat up.

    The object passes each waypoint at its current yaw (dwelling ``dwell_rows`` there), turns to
    ``goal_yaw`` (modulo its symmetry) on the way to the approach point ``PLACE_APPROACH`` above the
    goal, descends straight, opens to ``RELEASE_OPENING`` and retreats ``RETREAT_HEIGHT`` up.
    """
    motion = ctx.motion
    offset = ctx.held_offset(arm, name)
    period = symmetry_period(ctx.view.spec(name))
    turn = 0.0 if goal_yaw is None else hand_turn(ctx.view.yaw(name), goal_yaw, period)
    hand_goal_yaw = ctx.hand_yaw(arm) + turn
    up = np.array([0.0, 0.0, 1.0])
    plan = Plan(ctx.command)
    for point in waypoints:
        plan.add(motion.linear(plan.state, arm, tcp_for_object(point, offset, 0.0)))
        plan.add(motion.hold(plan.state, dwell_rows))
    release = tcp_for_object(goal, offset, turn)
    plan.add(motion.linear(plan.state, arm, release + up * c.PLACE_APPROACH, yaw=hand_goal_yaw))
    plan.add(motion.linear(plan.state, arm, release, step=c.DESCENT_STEP))
    width = grasp_width(ctx.view.spec(name)) + 2.0 * c.RELEASE_CLEARANCE
    plan.add(motion.gripper(plan.state, arm, max(c.RELEASE_OPENING, motion.grip_for_gap(arm, width))))
    plan.add(motion.linear(plan.state, arm, release + up * c.RETREAT_HEIGHT))
    return plan.rows()


def push(ctx: PhaseContext, arm: Arm, path: PushPath) -> np.ndarray:
    """Close the gripper fully, come down behind the source, push along ``path``, back off and lift away."""
    motion = ctx.motion
    up = np.array([0.0, 0.0, 1.0])
    plan = Plan(ctx.command)
    plan.add(motion.gripper(plan.state, arm, CLOSED))
    plan.add(motion.move_to(plan.state, arm, path.start + up * c.PREGRASP_HEIGHT, yaw=path.yaw))
    plan.add(motion.linear(plan.state, arm, path.start, step=c.DESCENT_STEP))
    plan.add(motion.linear(plan.state, arm, path.contact, step=c.PUSH_STEP))
    plan.add(motion.linear(plan.state, arm, path.end, step=c.PUSH_STEP))
    plan.add(motion.linear(plan.state, arm, path.back_off, step=c.PUSH_STEP))
    plan.add(motion.linear(plan.state, arm, path.back_off + up * c.PUSH_LIFT))
    return plan.rows()


def go_home(ctx: PhaseContext, arm: Arm, *, hold_rows: int = c.HOME_HOLD_ROWS) -> np.ndarray:
    """Joint-space return of ``arm`` to its home joints (gripper unchanged), then hold still."""
    plan = Plan(ctx.command)
    plan.add(ctx.motion.home(plan.state, arm))
    plan.add(ctx.motion.hold(plan.state, hold_rows))
    return plan.rows()


def then(*steps: Callable[[PhaseContext], np.ndarray]) -> Phase:
    """One phase running ``steps`` back to back, each starting where the previous one's last row ends."""

    def phase(ctx: PhaseContext) -> np.ndarray:
        parts: list[np.ndarray] = []
        command = ctx.command
        for step in steps:
            rows = step(PhaseContext(view=ctx.view, command=command, motion=ctx.motion))
            if rows.shape[0]:
                parts.append(rows)
                command = rows[-1]
        return np.concatenate(parts) if parts else np.zeros((0, ctx.command.shape[0]))

    return phase
