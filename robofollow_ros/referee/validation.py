"""Checking a trajectory before scoring, dropping frames with missing signals and reporting the gaps.

Rule for dropouts: a frame in which any signal the scorer reads is missing or not finite is dropped; the
episode is scored over the remaining frames (the first remaining frame is frame 0: home and start
heights). Every hole between consecutive remaining frames (and before the first / after the last one)
longer than ``gaps.report_longer_than`` is reported as a gap. Fewer than ``gaps.min_valid_frames``
remaining frames is an error, never a silent zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros.benchmark.types import ARMS, Layout
from robofollow_ros.errors import TrajectoryError
from robofollow_ros.referee.config import RefereeConfig
from robofollow_ros.referee.trajectory import Trajectory


@dataclass(frozen=True)
class Requirements:
    """Which optional signals a scorer reads."""

    ee_quat: bool = False
    obj_quat: tuple[str, ...] = ()


def _check_shape(values: object, shape: tuple[int, ...], what: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.shape != shape:
        raise TrajectoryError(f'{what} has shape {array.shape}, expected {shape}')
    return array


def _check_time(t: np.ndarray) -> None:
    bad = np.flatnonzero(~np.isfinite(t))
    if bad.size:
        raise TrajectoryError(f'frame {bad[0]}: time is not finite ({t[bad[0]]})')
    steps = np.diff(t)
    back = np.flatnonzero(steps <= 0)
    if back.size:
        i = int(back[0]) + 1
        kind = 'repeats' if steps[back[0]] == 0 else 'goes back from'
        raise TrajectoryError(
            f'frame {i}: time {t[i]:.6g} s {kind} frame {i - 1} ({t[i - 1]:.6g} s); frames must be in strictly '
            'increasing time order'
        )


def _check_objects(names: Sequence[str], layout: Layout) -> None:
    known = set(layout.object_names)
    unknown = sorted(set(names) - known)
    if unknown:
        raise TrajectoryError(
            f'unknown object(s) {", ".join(unknown)} for layout {layout.name!r} (known: {", ".join(sorted(known))})'
        )
    missing = [name for name in layout.object_names if name not in names]
    if missing:
        raise TrajectoryError(f'trajectory lacks object(s) {", ".join(missing)} of layout {layout.name!r}')


def _signals(trajectory: Trajectory, layout: Layout, needs: Requirements) -> dict[str, np.ndarray]:
    n = len(trajectory)
    signals: dict[str, np.ndarray] = {}
    for arm in ARMS:
        if arm not in trajectory.ee or arm not in trajectory.grip:
            raise TrajectoryError(f'trajectory lacks the {arm} arm (ee and grip are needed for both arms)')
        signals[f'ee.{arm}'] = _check_shape(trajectory.ee[arm], (n, 3), f'ee[{arm}]')
        signals[f'grip.{arm}'] = _check_shape(trajectory.grip[arm], (n,), f'grip[{arm}]')
        if needs.ee_quat:
            if arm not in trajectory.ee_quat:
                raise TrajectoryError(
                    f'this scene scores a fingertip point and needs ee_quat (TCP orientation w, x, y, z) of both '
                    f'arms; the trajectory has none for the {arm} arm'
                )
            signals[f'ee_quat.{arm}'] = _check_shape(trajectory.ee_quat[arm], (n, 4), f'ee_quat[{arm}]')
    _check_objects(tuple(trajectory.obj_pos), layout)
    for name in layout.object_names:
        signals[f'objects.{name}.p'] = _check_shape(trajectory.obj_pos[name], (n, 3), f'obj_pos[{name}]')
    for name in needs.obj_quat:
        if name not in trajectory.obj_quat:
            raise TrajectoryError(f'this task scores the orientation of {name} and needs its quaternion "q"')
        signals[f'objects.{name}.q'] = _check_shape(trajectory.obj_quat[name], (n, 4), f'obj_quat[{name}]')
    return signals


def _valid_rows(signals: Mapping[str, np.ndarray], n: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    valid = np.ones(n, dtype=bool)
    bad_by_signal: dict[str, np.ndarray] = {}
    for key, values in signals.items():
        finite = np.isfinite(values) if values.ndim == 1 else np.isfinite(values).all(axis=1)
        if key.endswith('.q') or key.startswith('ee_quat'):
            finite &= np.linalg.norm(np.nan_to_num(values), axis=1) > 1e-9
        if not finite.all():
            bad_by_signal[key] = ~finite
            valid &= finite
    return valid, bad_by_signal


def _take(values: object, kept: np.ndarray, n: int, what: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim == 0 or array.shape[0] != n:
        raise TrajectoryError(f'{what} has {array.shape[0] if array.ndim else 0} rows, expected {n}')
    return array[kept]


def _holes(t: np.ndarray, kept: np.ndarray, longer_than: float) -> list[tuple[float, float]]:
    times = t[kept]
    edges = np.concatenate(([t[0]], times, [t[-1]]))
    starts, ends = edges[:-1], edges[1:]
    long = (ends - starts) > longer_than
    return [(float(a), float(b)) for a, b in zip(starts[long], ends[long], strict=True)]


def prepare_trajectory(
    trajectory: Trajectory,
    *,
    layout: Layout,
    config: RefereeConfig,
    needs: Requirements | None = None,
) -> Trajectory:
    """Validate ``trajectory`` against ``layout`` and drop frames with missing or non-finite signals.

    Returns:
        The trajectory to score: only valid frames, with ``gaps`` (the given ones plus every hole longer
        than the configured limit) and ``dropped_frames`` set.

    Raises:
        TrajectoryError: no frames, wrong array shapes, non-finite or non-increasing time, objects unknown
        to or missing from the layout, a required orientation signal absent, or too few valid frames.
    """
    needs = needs or Requirements()
    n = len(trajectory)
    if n == 0:
        raise TrajectoryError('empty trajectory: no frames to score')
    t = _check_shape(trajectory.t, (n,), 't')
    _check_time(t)
    signals = _signals(trajectory, layout, needs)
    valid, bad_by_signal = _valid_rows(signals, n)
    kept = np.flatnonzero(valid)
    minimum = config.gaps.min_valid_frames
    if kept.size < minimum and not bad_by_signal:
        raise TrajectoryError(f'only {n} frame(s) recorded: scoring needs at least {minimum}')
    if kept.size < minimum:
        first_bad = min(bad_by_signal.items(), key=lambda item: int(np.argmax(item[1])))
        raise TrajectoryError(
            f'only {kept.size} of {n} frames have finite values for every scored signal (at least {minimum} '
            f'needed); e.g. {first_bad[0]} is missing or not finite from frame {int(np.argmax(first_bad[1]))}'
        )
    holes = _holes(t, kept, config.gaps.report_longer_than)
    gaps = tuple(sorted({tuple(map(float, g)) for g in trajectory.gaps} | set(holes)))
    if kept.size == n:
        if gaps == trajectory.gaps:
            return trajectory
        return Trajectory(
            t=t,
            ee=trajectory.ee,
            grip=trajectory.grip,
            obj_pos=trajectory.obj_pos,
            ee_quat=trajectory.ee_quat,
            obj_quat=trajectory.obj_quat,
            gaps=gaps,
            dropped_frames=trajectory.dropped_frames,
            frames_are_rows=trajectory.frames_are_rows,
        )
    return Trajectory(
        t=t[kept],
        ee={arm: _take(trajectory.ee[arm], kept, n, f'ee[{arm}]') for arm in ARMS},
        grip={arm: _take(trajectory.grip[arm], kept, n, f'grip[{arm}]') for arm in ARMS},
        obj_pos={name: _take(p, kept, n, f'obj_pos[{name}]') for name, p in trajectory.obj_pos.items()},
        ee_quat={arm: _take(q, kept, n, f'ee_quat[{arm}]') for arm, q in trajectory.ee_quat.items()},
        obj_quat={name: _take(q, kept, n, f'obj_quat[{name}]') for name, q in trajectory.obj_quat.items()},
        gaps=gaps,
        dropped_frames=trajectory.dropped_frames + n - int(kept.size),
        frames_are_rows=trajectory.frames_are_rows,
    )
