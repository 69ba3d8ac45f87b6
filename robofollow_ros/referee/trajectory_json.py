"""The public trajectory file format ``robofollow-trajectory/1`` (see docs/trajectory-format.md).

A file holds one episode: the task id, the variant, whether its frames are executed action rows
(``frames_are_rows``), optional bookkeeping (``meta``) and a list of frames in time order. Structural
mistakes raise :class:`~robofollow_ros.errors.TrajectoryError` naming the frame; ``null`` values and
objects absent from a frame are dropouts (NaN), which the referee drops and reports as gaps.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from robofollow_ros.benchmark.constants import DEFAULT_VARIANT
from robofollow_ros.benchmark.parsing import parse_variant
from robofollow_ros.benchmark.types import ARMS, Variant
from robofollow_ros.errors import RegistryError, TrajectoryError
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.textfiles import parse_json, read_utf8

FORMAT = 'robofollow-trajectory/1'
NAN = float('nan')
MAX_BYTES = 32 << 20
"""The largest trajectory file read: 20 000 frames of the largest layout at full precision (200 s at 100 Hz)."""


@dataclass(frozen=True)
class TrajectoryDocument:
    """A parsed trajectory file: which task it is an episode of, and the frames."""

    task_id: str
    trajectory: Trajectory
    variant: Variant = DEFAULT_VARIANT
    meta: dict[str, Any] = field(default_factory=dict)


def _number(value: Any, where: str) -> float:
    if value is None:
        return NAN
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TrajectoryError(f'{where}: expected a number or null, got {value!r}')
    return float(value)


def _vector(value: Any, size: int, where: str) -> list[float]:
    if value is None:
        return [NAN] * size
    if not isinstance(value, list | tuple) or len(value) != size:
        raise TrajectoryError(f'{where}: expected a list of {size} numbers, got {value!r}')
    return [_number(item, where) for item in value]


def _per_arm(frame: Mapping[str, Any], key: str, size: int, where: str, *, required: bool) -> dict[str, Any] | None:
    if key not in frame:
        if required:
            raise TrajectoryError(f'{where}: missing field {key!r}')
        return None
    value = frame[key]
    if not isinstance(value, Mapping):
        raise TrajectoryError(f'{where}.{key}: expected an object with "left" and "right"')
    result: dict[str, Any] = {}
    for arm in ARMS:
        if arm not in value:
            raise TrajectoryError(f'{where}.{key}: missing arm {arm!r}')
        result[arm] = (
            _number(value[arm], f'{where}.{key}.{arm}')
            if size == 1
            else _vector(value[arm], size, f'{where}.{key}.{arm}')
        )
    return result


def _column(columns: dict[str, np.ndarray], name: str, n: int, size: int) -> np.ndarray:
    """The ``(n, size)`` array of ``name`` in ``columns``, made (all NaN) the first time it is asked for."""
    column = columns.get(name)
    if column is None:
        column = columns[name] = np.full((n, size), NAN)
    return column


def _parse_frames(frames: Sequence[Any], source: str) -> Trajectory:
    n = len(frames)
    times = np.empty(n)
    ee = {arm: np.empty((n, 3)) for arm in ARMS}
    grip = {arm: np.empty(n) for arm in ARMS}
    ee_quat: dict[str, np.ndarray] = {}
    obj_pos: dict[str, np.ndarray] = {}
    obj_quat: dict[str, np.ndarray] = {}
    for i, frame in enumerate(frames):
        where = f'{source}: frame {i}'
        if not isinstance(frame, Mapping):
            raise TrajectoryError(f'{where}: expected an object, got {type(frame).__name__}')
        if 't' not in frame:
            raise TrajectoryError(f'{where}: missing field "t"')
        t = _number(frame['t'], f'{where}.t')
        if not math.isfinite(t):
            raise TrajectoryError(f'{where}.t: time must be a finite number, got {frame["t"]!r}')
        times[i] = t
        positions = _per_arm(frame, 'ee', 3, where, required=True)
        grips = _per_arm(frame, 'grip', 1, where, required=True)
        quats = _per_arm(frame, 'ee_quat', 4, where, required=False)
        assert positions is not None and grips is not None
        for arm in ARMS:
            ee[arm][i] = positions[arm]
            grip[arm][i] = grips[arm]
        if quats is not None:
            for arm in ARMS:
                _column(ee_quat, arm, n, 4)[i] = quats[arm]
        if 'objects' not in frame:
            raise TrajectoryError(f'{where}: missing field "objects"')
        objects = frame['objects']
        if not isinstance(objects, Mapping):
            raise TrajectoryError(f'{where}.objects: expected an object mapping names to poses')
        for name, pose in objects.items():
            here = f'{where}.objects.{name}'
            if pose is None:
                continue
            if not isinstance(pose, Mapping) or 'p' not in pose:
                raise TrajectoryError(f'{here}: expected {{"p": [x, y, z]}} with an optional "q"')
            _column(obj_pos, name, n, 3)[i] = _vector(pose['p'], 3, f'{here}.p')
            if 'q' in pose:
                _column(obj_quat, name, n, 4)[i] = _vector(pose['q'], 4, f'{here}.q')
    return Trajectory(
        t=times,
        ee=cast(Any, ee),
        grip=cast(Any, grip),
        obj_pos=obj_pos,
        ee_quat=cast(Any, ee_quat),
        obj_quat=obj_quat,
    )


def trajectory_from_dict(document: Any, *, source: str = 'trajectory') -> TrajectoryDocument:
    """Parse a ``robofollow-trajectory/1`` document (already decoded from JSON).

    Args:
        document: the decoded JSON value.
        source: how to name the input in error messages (usually the file path).

    Raises:
        TrajectoryError: wrong format tag, missing task id, no frames, or a malformed frame.
    """
    if not isinstance(document, Mapping):
        raise TrajectoryError(f'{source}: expected a JSON object, got {type(document).__name__}')
    tag = document.get('format')
    if tag != FORMAT:
        raise TrajectoryError(f'{source}: "format" must be {FORMAT!r}, got {tag!r}')
    task_id = document.get('task_id')
    if not isinstance(task_id, str) or not task_id:
        raise TrajectoryError(f'{source}: "task_id" must be a non-empty string')
    try:
        variant = parse_variant(document.get('variant', DEFAULT_VARIANT))
    except RegistryError as error:
        raise TrajectoryError(f'{source}: "variant": {error}') from None
    rows = document.get('frames_are_rows', False)
    if not isinstance(rows, bool):
        raise TrajectoryError(f'{source}: "frames_are_rows" must be true or false, got {rows!r}')
    meta = document.get('meta', {})
    if not isinstance(meta, Mapping):
        raise TrajectoryError(f'{source}: "meta" must be an object')
    frames = document.get('frames')
    if not isinstance(frames, list):
        raise TrajectoryError(f'{source}: "frames" must be a list of frames')
    if not frames:
        raise TrajectoryError(f'{source}: empty trajectory (no frames)')
    trajectory = _parse_frames(frames, source)
    gaps = document.get('gaps', [])
    if not isinstance(gaps, list) or not all(isinstance(g, list | tuple) and len(g) == 2 for g in gaps):
        raise TrajectoryError(f'{source}: "gaps" must be a list of [start, end] pairs')
    pairs = tuple((_number(a, f'{source}: gaps'), _number(b, f'{source}: gaps')) for a, b in gaps)
    trajectory = replace(trajectory, gaps=pairs, frames_are_rows=rows)
    return TrajectoryDocument(task_id=task_id, variant=variant, meta=dict(meta), trajectory=trajectory)


def load_trajectory(path: str | Path) -> TrajectoryDocument:
    """Read a trajectory JSON file.

    Raises:
        TrajectoryError: unreadable file, larger than ``MAX_BYTES``, invalid JSON or an invalid document.
    """
    path = Path(path)
    text = read_utf8(path, what='trajectory', error=TrajectoryError, max_bytes=MAX_BYTES)
    document = parse_json(text, where=str(path), what='a trajectory', error=TrajectoryError)
    return trajectory_from_dict(document, source=str(path))


def _clean(values: np.ndarray) -> list[float | None]:
    return [float(v) if math.isfinite(v) else None for v in values.tolist()]


def _clean_scalar(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def trajectory_to_dict(
    trajectory: Trajectory,
    *,
    task_id: str,
    variant: Variant = DEFAULT_VARIANT,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return the ``robofollow-trajectory/1`` document of ``trajectory`` (non-finite values become null)."""
    frames = []
    for i in range(len(trajectory)):
        frame: dict[str, Any] = {
            't': float(trajectory.t[i]),
            'ee': {arm: _clean(trajectory.ee[arm][i]) for arm in ARMS},
            'grip': {arm: _clean_scalar(float(trajectory.grip[arm][i])) for arm in ARMS},
        }
        if trajectory.ee_quat:
            frame['ee_quat'] = {arm: _clean(trajectory.ee_quat[arm][i]) for arm in ARMS}
        objects: dict[str, Any] = {}
        for name, positions in trajectory.obj_pos.items():
            pose: dict[str, Any] = {'p': _clean(positions[i])}
            if name in trajectory.obj_quat:
                pose['q'] = _clean(trajectory.obj_quat[name][i])
            objects[name] = pose
        frame['objects'] = objects
        frames.append(frame)
    document: dict[str, Any] = {
        'format': FORMAT,
        'task_id': task_id,
        'variant': variant,
        'frames_are_rows': trajectory.frames_are_rows,
    }
    if meta:
        document['meta'] = dict(meta)
    if trajectory.gaps:
        document['gaps'] = [[float(a), float(b)] for a, b in trajectory.gaps]
    document['frames'] = frames
    return document


def dump_trajectory(
    path: str | Path,
    trajectory: Trajectory,
    *,
    task_id: str,
    variant: Variant = DEFAULT_VARIANT,
    meta: Mapping[str, Any] | None = None,
) -> None:
    """Write ``trajectory`` as a ``robofollow-trajectory/1`` JSON file."""
    document = trajectory_to_dict(trajectory, task_id=task_id, variant=variant, meta=meta)
    Path(path).write_text(json.dumps(document, separators=(',', ':'), default=str) + '\n', encoding='utf-8')
