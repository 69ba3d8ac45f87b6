"""``ChunkLimits``: what the policy bridge checks before any row of a chunk reaches an arm.

Beyond shape and finiteness (``policy.base.validate_chunk``): every target inside the joint limits (grippers in
[0, 1]) and no row more than ``max_row_step`` away from the row before it (the first row from the current state),
so that a wild chunk is rejected whole instead of being clipped or slowed down by the executor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.state_layout import ACTION_DIM, GRIP_INDEX

LIMIT_TOLERANCE = 1e-6


@dataclass(frozen=True)
class ChunkLimits:
    """Joint-limit and per-row step bounds of the 14-D layout.

    Attributes:
        lower, upper: (14,) bounds of every target.
        max_row_step: (14,) largest allowed change of each value from one row to the next.
        names: (14,) joint names used in messages (the robot's URDF names).
    """

    lower: np.ndarray
    upper: np.ndarray
    max_row_step: np.ndarray
    names: tuple[str, ...]

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
        for index in GRIP_INDEX.values():
            step[index] = max_gripper_step
        return cls(
            lower=description.state_lower(),
            upper=description.state_upper(),
            max_row_step=step,
            names=description.joint_layout.names,
        )

    def check(self, chunk: np.ndarray, state: np.ndarray) -> None:
        """Raise ``PolicyError`` naming the first violation of ``chunk`` (T, 14) starting from ``state`` (14,)."""
        rows = np.asarray(chunk, dtype=np.float64)
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
