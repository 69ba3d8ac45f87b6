"""The referee's input: a trajectory of timestamped frames, stored column-wise as numpy arrays."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from robofollow_ros.benchmark.types import Arm


@dataclass(frozen=True)
class Trajectory:
    """Timestamped frames of one episode (protocol §4.1), columns as numpy float64 arrays.

    Attributes:
        t: (n,) seconds, strictly increasing.
        ee: per arm, (n, 3) TCP positions in the world frame.
        grip: per arm, (n,) normalised gripper values (1 = open, 0 = closed).
        obj_pos: per object name, (n, 3) positions (primitive centre, bowl origin, label centre).
        ee_quat: per arm, (n, 4) TCP orientations (w, x, y, z); empty where not recorded.
        obj_quat: per object name, (n, 4) orientations (w, x, y, z); empty where not recorded.
        gaps: (start, end) seconds of detected signal dropouts, reported with the score.
        dropped_frames: frames removed because a signal was missing or not finite.
        frames_are_rows: each frame was recorded after one executed action row (the evaluator, its files
            and bags); the published variant then counts frames for its frame windows. ``False`` for
            trajectories sampled otherwise (a real cell, a resampled recording).
    """

    t: np.ndarray
    ee: Mapping[Arm, np.ndarray]
    grip: Mapping[Arm, np.ndarray]
    obj_pos: Mapping[str, np.ndarray]
    ee_quat: Mapping[Arm, np.ndarray] = field(default_factory=dict)
    obj_quat: Mapping[str, np.ndarray] = field(default_factory=dict)
    gaps: tuple[tuple[float, float], ...] = ()
    dropped_frames: int = 0
    frames_are_rows: bool = False

    def __len__(self) -> int:
        return int(self.t.shape[0])

    @property
    def duration(self) -> float:
        """Seconds from the first to the last frame (0 for fewer than two frames)."""
        return float(self.t[-1] - self.t[0]) if len(self) > 1 else 0.0

    @property
    def object_names(self) -> tuple[str, ...]:
        """Names of the recorded objects, in recording order."""
        return tuple(self.obj_pos)
