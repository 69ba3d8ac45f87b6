"""The arrays a scorer reads, prepared once per episode: EE points, grippers, object poses, home.

Scene 1 scores a fingertip proxy instead of the TCP: TCP + R(ee_quat) · offset (protocol §4.1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros.benchmark.types import ARMS, Arm, Layout
from robofollow_ros.referee.trajectory import Trajectory


def unit_quaternions(quat: np.ndarray) -> np.ndarray:
    """Rows of ``quat`` (w, x, y, z) scaled to unit length (rows of zeros or NaN become NaN)."""
    with np.errstate(invalid='ignore', divide='ignore'):
        return quat / np.linalg.norm(quat, axis=1, keepdims=True)


def rotation_matrices(quat: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotation matrices of (n, 4) quaternions (w, x, y, z), normalised first."""
    w, x, y, z = unit_quaternions(quat).T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
        ],
        axis=1,
    )


def fingertip_points(tcp: np.ndarray, quat: np.ndarray, offset: Sequence[float]) -> np.ndarray:
    """TCP positions shifted by ``offset`` expressed in the TCP frame."""
    return tcp + rotation_matrices(quat) @ np.asarray(offset, dtype=float)


@dataclass(frozen=True)
class EpisodeSignals:
    """Per-episode arrays in sample order.

    Attributes:
        t: (n,) seconds.
        ee: per arm, (n, 3) scoring point (TCP, or fingertip proxy in Scene 1).
        grip: per arm, (n,) gripper values.
        pos: per object, (n, 3) positions.
        quat: per object, (n, 4) unit quaternions where recorded.
        candidates: graspable objects (not bowls, not labels), sorted by name.
        bowls: bowl names, sorted.
        candidate_xy: (n, k, 2) xy of ``candidates``.
        time_tolerance: slack of time-window comparisons.
        origin: time of the first recorded frame; reported times are seconds since it.
    """

    t: np.ndarray
    ee: Mapping[Arm, np.ndarray]
    grip: Mapping[Arm, np.ndarray]
    pos: Mapping[str, np.ndarray]
    quat: Mapping[str, np.ndarray]
    candidates: tuple[str, ...]
    bowls: tuple[str, ...]
    candidate_xy: np.ndarray
    time_tolerance: float
    origin: float

    @property
    def n(self) -> int:
        """Number of samples."""
        return int(self.t.shape[0])

    @property
    def last(self) -> int:
        """Index of the final sample."""
        return self.n - 1

    def home(self, arm: Arm) -> np.ndarray:
        """The arm's scoring point at sample 0."""
        return self.ee[arm][0]

    def z(self, name: str) -> np.ndarray:
        """Height of object ``name`` over time."""
        return self.pos[name][:, 2]

    def rise(self, name: str) -> np.ndarray:
        """Height of ``name`` above its height at sample 0."""
        z = self.pos[name][:, 2]
        return z - z[0]

    def xy_distance(self, a: str, b: str) -> np.ndarray:
        """Planar distance between objects ``a`` and ``b`` over time."""
        return np.linalg.norm(self.pos[a][:, :2] - self.pos[b][:, :2], axis=1)

    def when(self, index: int | None) -> str:
        """``t=1.23 s`` (seconds since the first recorded frame) for reasons; ``never`` for ``None``."""
        if index is None:
            return 'never'
        return f't={self.t[index] - self.origin:.2f} s'

    def seconds(self, index: int | None) -> float | None:
        """Seconds of sample ``index`` since the first recorded frame."""
        return None if index is None else round(float(self.t[index] - self.origin), 6)

    def nearest(self, point_xy: np.ndarray, index: int, *, exclude: Iterable[str] = ()) -> tuple[str, float]:
        """The candidate object nearest (in xy) to ``point_xy`` at sample ``index`` and its distance."""
        distances = np.linalg.norm(self.candidate_xy[index] - point_xy, axis=1)
        for name in exclude:
            if name in self.candidates:
                distances[self.candidates.index(name)] = np.inf
        best = int(np.argmin(distances))
        return self.candidates[best], float(distances[best])

    def nearest_indices(self, points_xy: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each sample in ``indices``: index into ``candidates`` of the nearest object, and its distance."""
        distances = np.linalg.norm(self.candidate_xy[indices] - points_xy[:, None, :], axis=2)
        best = np.argmin(distances, axis=1)
        return best, distances[np.arange(indices.size), best]

    def window_ends(self, starts: np.ndarray, duration: float) -> np.ndarray:
        """Exclusive end index of each window ``[t[start], t[start] + duration)``, truncated at the end."""
        return np.searchsorted(self.t, self.t[starts] + duration - self.time_tolerance, side='left')


def build_signals(
    trajectory: Trajectory,
    layout: Layout,
    *,
    fingertip_offset: Sequence[float] | None,
    time_tolerance: float,
    origin: float | None = None,
) -> EpisodeSignals:
    """Assemble the scoring arrays of a validated trajectory.

    Args:
        trajectory: a trajectory returned by ``prepare_trajectory``.
        layout: the layout the episode ran in (object kinds).
        fingertip_offset: TCP-frame offset of the scoring point (Scene 1), or ``None`` for the TCP.
        time_tolerance: slack of time-window comparisons.
        origin: time of the first recorded frame (default: the trajectory's first sample).
    """
    ee: dict[Arm, np.ndarray] = {}
    for arm in ARMS:
        tcp = np.asarray(trajectory.ee[arm], dtype=float)
        if fingertip_offset is not None:
            tcp = fingertip_points(tcp, np.asarray(trajectory.ee_quat[arm], dtype=float), fingertip_offset)
        ee[arm] = tcp
    names = layout.object_names
    pos = {name: np.asarray(trajectory.obj_pos[name], dtype=float) for name in names}
    quat = {name: unit_quaternions(np.asarray(q, dtype=float)) for name, q in trajectory.obj_quat.items()}
    kinds = {p.name: p.spec.kind for p in layout.placements}
    candidates = tuple(sorted(name for name in names if kinds[name] == 'object'))
    bowls = tuple(sorted(name for name in names if kinds[name] == 'bowl'))
    n = len(trajectory)
    candidate_xy = np.stack([pos[name][:, :2] for name in candidates], axis=1) if candidates else np.zeros((n, 0, 2))
    return EpisodeSignals(
        t=np.asarray(trajectory.t, dtype=float),
        ee=ee,
        grip={arm: np.asarray(trajectory.grip[arm], dtype=float) for arm in ARMS},
        pos=pos,
        quat=quat,
        candidates=candidates,
        bowls=bowls,
        candidate_xy=candidate_xy,
        time_tolerance=time_tolerance,
        origin=float(trajectory.t[0]) if origin is None else float(origin),
    )
