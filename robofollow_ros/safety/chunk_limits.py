"""``ChunkLimits``: what is checked of a chunk before any row of it reaches an arm, in simulation and on a real cell.

Beyond shape and finiteness (``policy.base.validate_chunk``): every arm target inside the joint limits and no row
more than ``max_row_step`` away from the row before it (the first row from the current state), so that a wild
chunk is rejected whole instead of being clipped or slowed down by the executor. Gripper targets are clamped into
[0, 1] (``clamp_grippers``), not refused: a learned policy's regressed gripper command overshoots fully open or
closed by a few hundredths to tenths (an ACT trained here asked 1.12), which the simulated gripper's actuator range
clamps anyway and a real gripper's end stops do.

That is the simulation's check, the same in the graph's policy bridge and in-process (``evaluation.runner``), so
that a chunk's fate does not depend on where the trial runs.

In real mode the bridge's safety filter (``safety.command_filter``) judges joint limits (by the profile's
``joint_limits``: clamp or refuse) and speeds (by the profile's velocity limits and ``velocity_limits``: refuse or
stretch), so ``ChunkLimits.for_real_cell`` checks nothing beyond shape and finiteness; what it adds is
``GripperReach``: a gripper command moved towards its target at the gripper's speed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.state_layout import ACTION_DIM, GRIP_COLUMNS

LIMIT_TOLERANCE = 1e-6
DEFAULT_MAX_ROW_STEP = 0.5
"""rad: the largest step of a joint between two rows (the policy bridge's ``max_row_step`` parameter)."""


REACH_SPEED_FRACTION = 0.9
"""The fraction of a gripper's speed limit ``GripperReach`` moves it at in real mode. A JointTrajectoryController
times each window from its arrival, so when one window travels a millisecond longer than the next, the next one's
first segment runs a few percent faster than planned: at the full speed the fuzz read grippers at up to 1.03 times
their limit (29 of 21,448 messages, 0.2 s windows)."""


@dataclass(frozen=True)
class GripperReach:
    """How far a gripper command may move in one row: each row's gripper target is clamped to within ``step`` of
    the row before it (the first row: of the state), so that a gripper opened or closed in one row (as policies do,
    and as the simulated cell executes it) moves towards its target at the gripper's speed over the next rows instead
    of being refused as too fast. It is the path the gripper's own controller takes to such a target anyway.

    A target outside ``[lower, upper]`` stays for the safety filter's ``joint_limits`` mode: under ``refuse`` it is
    passed on unchanged (refused from its row on), under ``clamp`` it is approached like any other target and the
    filter clamps (and counts) it once the reachable step passes the limit.

    Attributes:
        columns: the gripper columns of the 14-D layout.
        step: (len(columns),) largest change per row (normalised): velocity limit times row period.
        lower, upper: (len(columns),) the grippers' bounds.
        refuse: whether the filter refuses out-of-limit targets (``joint_limits: refuse``).
    """

    columns: tuple[int, ...]
    step: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    refuse: bool

    def apply(self, chunk: np.ndarray, state: np.ndarray) -> np.ndarray:
        """``chunk`` (T, 14) with each gripper column moved at most ``step`` per row from ``state`` (14,)."""
        rows = np.array(chunk, dtype=np.float64)
        columns = list(self.columns)
        previous = np.asarray(state, dtype=np.float64)[columns]
        for row in rows:
            target = row[columns]
            outside = (target < self.lower - LIMIT_TOLERANCE) | (target > self.upper + LIMIT_TOLERANCE)
            reached = np.clip(target, previous - self.step, previous + self.step)
            if self.refuse:
                reached = np.where(outside, target, reached)
            row[columns] = reached
            previous = np.clip(reached, self.lower, self.upper)  # where the filter's clamp leaves it
        return rows


@dataclass(frozen=True)
class ChunkLimits:
    """Joint-limit and per-row step bounds of the 14-D layout.

    Attributes:
        lower, upper: (14,) bounds of every target (infinite: none).
        max_row_step: (14,) largest allowed change of each value from one row to the next (infinite: none).
        names: (14,) joint names used in messages (the robot's URDF names).
        gripper_reach: in real mode, how a gripper command is moved towards its target (``shape``); None: as it is.
        clamp_grippers: gripper targets outside their bounds are clamped into them (``shape``), not refused.
    """

    lower: np.ndarray
    upper: np.ndarray
    max_row_step: np.ndarray
    names: tuple[str, ...]
    gripper_reach: GripperReach | None = None
    clamp_grippers: bool = False

    @classmethod
    def for_robot(cls, robot: str, *, max_row_step: float, max_gripper_step: float = 1.0) -> ChunkLimits:
        """Limits from the URDF of a registered robot: its joint limits, and ``max_row_step`` rad per row for every
        joint.

        Raises:
            SimulationError: unknown robot, or its URDF cannot be read.
        """
        from robofollow_ros.robot.description import load_robot

        description = load_robot(robot)
        step = np.full(ACTION_DIM, float(max_row_step))
        step[GRIP_COLUMNS] = max_gripper_step
        return cls(
            lower=description.state_lower(),
            upper=description.state_upper(),
            max_row_step=step,
            names=description.joint_layout.names,
            clamp_grippers=True,
        )

    @classmethod
    def for_real_cell(cls, names: tuple[str, ...], *, gripper_reach: GripperReach | None) -> ChunkLimits:
        """The real mode's: no joint-limit or row-step bound (the safety filter decides both by the robot profile),
        the grippers moved at their speed by ``gripper_reach``."""
        return cls(
            lower=np.full(ACTION_DIM, -np.inf),
            upper=np.full(ACTION_DIM, np.inf),
            max_row_step=np.full(ACTION_DIM, np.inf),
            names=names,
            gripper_reach=gripper_reach,
        )

    def shape(self, chunk: np.ndarray, state: np.ndarray) -> np.ndarray:
        """The chunk to execute: ``chunk`` itself, with its gripper columns clamped (``clamp_grippers``) or moved by
        ``gripper_reach``."""
        if self.gripper_reach is not None:
            return self.gripper_reach.apply(chunk, state)
        return self.clamped(chunk) if self.clamp_grippers else chunk

    def clamped(self, chunk: np.ndarray) -> np.ndarray:
        """``chunk`` with its gripper columns clamped into their bounds (the dtype kept)."""
        rows = np.array(chunk)
        rows[:, GRIP_COLUMNS] = np.clip(rows[:, GRIP_COLUMNS], self.lower[GRIP_COLUMNS], self.upper[GRIP_COLUMNS])
        return rows

    def check(self, chunk: np.ndarray, state: np.ndarray) -> None:
        """Raise ``PolicyError`` naming the first violation of ``chunk`` (T, 14) starting from ``state`` (14,) (its
        grippers as ``shape`` clamps them)."""
        rows = np.asarray(self.clamped(chunk) if self.clamp_grippers else chunk, dtype=np.float64)
        below = rows < self.lower - LIMIT_TOLERANCE
        above = rows > self.upper + LIMIT_TOLERANCE
        if below.any() or above.any():
            row, column = np.argwhere(below | above)[0]
            raise PolicyError(
                f'action chunk row {row} puts {self.names[column]} at {rows[row, column]:.4f}, outside its limits '
                f'[{self.lower[column]:.4f}, {self.upper[column]:.4f}]'
            )
        steps = np.abs(np.diff(np.vstack([np.asarray(state, dtype=np.float64)[None, :], rows]), axis=0))
        fast = steps > self.max_row_step + LIMIT_TOLERANCE
        if fast.any():
            row, column = np.argwhere(fast)[0]
            raise PolicyError(
                f'action chunk row {row} moves {self.names[column]} by {steps[row, column]:.4f} in one row '
                f'(at most {self.max_row_step[column]:.4f})'
            )
