"""What a cell shows after a reset or an executed chunk, below both the simulator that fills it and the episode loop
that reads it (``evaluation.environment`` states the protocol it satisfies)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from robofollow_ros.robot.specs import DEFAULT_ROBOT
from robofollow_ros.state_layout import Arm


@dataclass(frozen=True)
class CellObservation:
    """What a cell shows after a reset or an executed chunk: ``CellEnv`` in-process, ``RosEnvironment`` over the
    graph. A ``PrivilegedObservation`` when the poses are filled.

    Attributes:
        images: camera name -> (H, W, 3) uint8 RGB; empty when images were not requested.
        state: (14,) ``[left q1..q6, left grip, right q1..q6, right grip]``, grips normalised (1 open, 0 closed).
        time: simulated seconds since the episode started.
        ee_pos: per arm, TCP position (3,) in the world frame (privileged).
        ee_quat: per arm, TCP orientation (w, x, y, z) (privileged).
        object_pos: per scene item, position (3,) (privileged).
        object_quat: per scene item, orientation (w, x, y, z) (privileged).
        finger_opening: per arm, measured finger opening, normalised (1 open, 0 pads touching); only the
            simulator measures it.
        robot: name of the cell's robot (privileged: built-in planners need its kinematics).
    """

    images: dict[str, np.ndarray]
    state: np.ndarray
    time: float
    ee_pos: dict[Arm, np.ndarray] = field(default_factory=dict)
    ee_quat: dict[Arm, np.ndarray] = field(default_factory=dict)
    object_pos: dict[str, np.ndarray] = field(default_factory=dict)
    object_quat: dict[str, np.ndarray] = field(default_factory=dict)
    finger_opening: dict[Arm, float] = field(default_factory=dict)
    robot: str = DEFAULT_ROBOT
