"""Checking a trajectory before scoring, dropping frames with missing signals and reporting the gaps.

Rule for dropouts: a frame in which any signal the scorer reads is missing or not finite is dropped; the
episode is scored over the remaining frames (the first remaining frame is frame 0: home and start
heights). Every hole between consecutive remaining frames (and before the first / after the last one)
longer than ``gaps.report_longer_than`` is reported as a gap. Fewer than ``gaps.min_valid_frames``
remaining frames is an error, never a silent zero.

Rule for impossible values: NaN and ``null`` are dropouts, but a value no recording of this cell can hold
(an infinity, a position farther than ``POSITION_LIMIT_M`` from the table-top centre, a gripper outside
``GRIP_RANGE``, a quaternion whose norm is outside ``QUATERNION_NORM_RANGE``) is an error naming the frame
and the field: it is corrupt data, and scoring it would silently move the scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros.benchmark.types import ARMS, TABLE_Z, Layout
from robofollow_ros.errors import TrajectoryError
from robofollow_ros.referee.config import RefereeConfig
from robofollow_ros.referee.trajectory import Trajectory

POSITION_LIMIT_M = 5.0
"""Farthest a TCP or object position may be from the table-top centre (0, 0, TABLE_Z): the cell is ~1 m wide."""
GRIP_RANGE = (-0.25, 1.25)
"""Normalised gripper values (1 open, 0 closed) with room for a recorder's calibration error."""
QUATERNION_NORM_RANGE = (0.5, 2.0)
"""A rotation quaternion, normalised or nearly; a zero quaternion is a dropout, not an error."""
TABLE_CENTRE = np.array([0.0, 0.0, TABLE_Z])


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


def _first_impossible(key: str, values: np.ndarray) -> tuple[int, str] | None:
    """The first frame whose ``key`` value is infinite or physically impossible (NaN is a dropout), and why."""
    with np.errstate(over='ignore', invalid='ignore'):
        if key.startswith('grip.') and values.ndim == 1:
            low, high = GRIP_RANGE
            bad = np.isinf(values) | (values < low) | (values > high)
            rule = f'a gripper value must lie in [{low}, {high}] (1 open, 0 closed)'
        elif (key.endswith('.q') or key.startswith('ee_quat.')) and values.ndim == 2 and values.shape[1] == 4:
            norm = np.linalg.norm(values, axis=1)
            low, high = QUATERNION_NORM_RANGE
            bad = np.isinf(values).any(axis=1) | ((norm > 1e-9) & ((norm < low) | (norm > high)))
            rule = f'a quaternion (w, x, y, z) must have a norm in [{low}, {high}]'
        elif values.ndim == 2 and values.shape[1] == 3:
            distance = np.linalg.norm(values - TABLE_CENTRE, axis=1)
            bad = np.isinf(values).any(axis=1) | (distance > POSITION_LIMIT_M)
            rule = f'a position must lie within {POSITION_LIMIT_M:g} m of the table-top centre (0, 0, {TABLE_Z})'
        else:
            return None  # a wrong shape is reported by the shape checks
    hits = np.flatnonzero(bad)
    return None if hits.size == 0 else (int(hits[0]), rule)


def check_physical(trajectory: Trajectory) -> None:
    """Refuse a trajectory holding a value no recording of the cell can hold (see the module docstring).

    Raises:
        TrajectoryError: naming the first such frame, the signal (``objects.red_sphere.p``, ``grip.left``)
        and the rule it breaks.
    """
    signals: dict[str, np.ndarray] = {}
    for prefix, per_arm in (('ee', trajectory.ee), ('grip', trajectory.grip), ('ee_quat', trajectory.ee_quat)):
        signals.update({f'{prefix}.{arm}': np.asarray(values, dtype=float) for arm, values in per_arm.items()})
    for suffix, group in (('p', trajectory.obj_pos), ('q', trajectory.obj_quat)):
        signals.update({f'objects.{name}.{suffix}': np.asarray(values, dtype=float) for name, values in group.items()})
    found = [(hit, key) for key, values in signals.items() if (hit := _first_impossible(key, values)) is not None]
    if not found:
        return
    (frame, rule), key = min(found, key=lambda item: item[0][0])
    value = signals[key][frame]
    shown = f'{float(value):.6g}' if np.ndim(value) == 0 else '[' + ', '.join(f'{v:.6g}' for v in value) + ']'
    raise TrajectoryError(f'frame {frame}: {key} is {shown}, which is not physical: {rule}')


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
        to or missing from the layout, a required orientation signal absent, a physically impossible value
        (see the module docstring), or too few valid frames.
    """
    needs = needs or Requirements()
    n = len(trajectory)
    if n == 0:
        raise TrajectoryError('empty trajectory: no frames to score')
    t = _check_shape(trajectory.t, (n,), 't')
    _check_time(t)
    signals = _signals(trajectory, layout, needs)
    check_physical(trajectory)
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
    gaps = tuple(sorted({(float(start), float(end)) for start, end in trajectory.gaps} | set(holes)))
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
