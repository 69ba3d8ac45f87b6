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
        candidates: graspable objects (not bowls, not labels), in the order nearest-object ties are broken
            in (by name, or in recording order).
        bowls: bowl names, sorted.
        candidate_xy: (n, k, 2) xy of ``candidates``.
        time_tolerance: slack of time-window comparisons.
        origin: time of the first recorded frame; reported times are seconds since it.
        frame_windows: windows count recorded frames (the frames are executed rows and the variant counts
            frames); otherwise they are seconds.
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
    frame_windows: bool = False

    @property
    def window_units(self) -> str:
        """``frames`` or ``seconds``: what the frame windows of this episode count."""
        return 'frames' if self.frame_windows else 'seconds'

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

    def window_ends(self, starts: np.ndarray, *, seconds: float, frames: int) -> np.ndarray:
        """Exclusive end index of each window from ``starts``, truncated at the end of the episode.

        The window holds ``frames`` frames with frame windows, else the samples in ``[t, t + seconds)``.
        """
        if self.frame_windows:
            return np.minimum(starts + frames, self.n)
        return np.searchsorted(self.t, self.t[starts] + seconds - self.time_tolerance, side='left')

    def longer_than(self, start: int, end: int, *, seconds: float, frames: int) -> bool:
        """Whether ``end`` comes more than ``frames`` frames (or ``seconds``) after ``start``."""
        if self.frame_windows:
            return end - start > frames
        return float(self.t[end] - self.t[start]) > seconds + self.time_tolerance

    def span(self, start: int, end: int) -> str:
        """``12 frames`` or ``0.72 s`` from ``start`` to ``end``, for reasons."""
        if self.frame_windows:
            return f'{end - start} frames'
        return f'{self.t[end] - self.t[start]:.2f} s'

    def limit(self, *, seconds: float, frames: int) -> str:
        """A window constant as it applies here: ``20 frames`` or ``1.2 s``."""
        return f'{frames} frames' if self.frame_windows else f'{seconds} s'


def build_signals(
    trajectory: Trajectory,
    layout: Layout,
    *,
    fingertip_offset: Sequence[float] | None,
    time_tolerance: float,
    origin: float | None = None,
    nearest_by_name: bool = True,
    frame_windows: bool = False,
) -> EpisodeSignals:
    """Assemble the scoring arrays of a validated trajectory.

    Args:
        trajectory: a trajectory returned by ``prepare_trajectory``.
        layout: the layout the episode ran in (object kinds).
        fingertip_offset: TCP-frame offset of the scoring point (Scene 1), or ``None`` for the TCP.
        time_tolerance: slack of time-window comparisons.
        origin: time of the first recorded frame (default: the trajectory's first sample).
        nearest_by_name: order the candidates by name (nearest-object ties go to the first name); else
            in the trajectory's recording order (ties go to the object recorded first).
        frame_windows: windows count recorded frames instead of seconds.
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
    recorded = [name for name in trajectory.object_names if kinds.get(name) == 'object']
    graspable = recorded + [name for name in names if kinds[name] == 'object' and name not in recorded]
    candidates = tuple(sorted(graspable) if nearest_by_name else graspable)
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
        frame_windows=frame_windows,
    )
