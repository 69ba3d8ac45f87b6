"""Hostile action chunks for the bridge fuzz (issue 29): Hypothesis strategies, relative to a robot profile's home
state, joint and velocity limits and workspace box, and the ``.npz`` file the replay policy serves them from.

Every chunk is a ``HostileChunk``: a ``kind`` (what it tries), the ``data`` the policy returns (any shape and dtype),
``anchor`` (which of the 14 columns are offsets from the state the policy observes when it answers, so that a motion
continues from wherever the arm stands; the others are absolute targets) and ``form`` (returned as the array, as
nested lists, as ragged lists, as text or as None). Kinds:

* ``slow``: a smooth motion (each joint swinging by up to 0.3 rad) at 10-90 % of the velocity limits, 1 ..
  ``max_rows`` rows (more than the 50 a query executes, sometimes), grippers anywhere in 0..1, float64, float32 or
  float16, sometimes as lists. The arm moves, and the hostile rows of the other kinds come after a moving prefix of
  such rows (judged from a moving state);
* ``non_finite``: NaN, +inf or -inf in 1-5 cells anywhere;
* ``jump``: one or several joints jump at one row, by a step just too fast for the velocity limit (0.19-0.5 rad in a
  0.06 s row), beyond the bridge's ``max_row_step`` (0.5 rad) or huge (10 .. 1e4 rad), held or for one row only;
* ``limit``: a joint's target at a limit, inside it by 1e-7, or beyond it by 1e-9 .. 1e6 rad (around the 1e-6 that
  the filter clamps in both modes), constant or approached at a valid speed;
* ``workspace``: one or both arms driven (at a valid speed, or too fast) to a pose whose TCP is outside the box, just
  (a few mm) or far (below the table, beside it, above it), directions found once by forward kinematics;
* ``gripper``: a gripper value outside 0..1 by 1e-7 .. 1e6, or exactly at 0 or 1;
* ``float_extreme``: float32's largest, smallest normal and subnormal values, -0.0, 1e39 (infinite once cast to
  float32) and 1e308 in some cells, as float32 or float64;
* ``accelerate``: rows each within the velocity limit (up to 1 - 1e-6 of it, or 1 + 1e-6) that reverse every row or
  go from rest to full speed and back;
* ``shape``: 13 or 15 columns, 0 rows, 0 columns, 3-D, 1-D, 0-D, transposed; bool, complex, text, datetime arrays;
  ragged lists, a string, None.

Generation is Hypothesis's, made deterministic: ``generate(n, seed=...)`` runs a ``@given`` function under
``hypothesis.seed(seed)`` with no example database and the generate phase only (no shrinking, nothing replayed), for
exactly ``n`` examples, appending each drawn chunk to a list. The strategy draws the structure (kind, rows, joints,
magnitudes, the special values) from Hypothesis, which favours boundaries and extremes, and fills bulk values
(motion noise, cells) from a numpy generator seeded by a Hypothesis-drawn integer, so that 10,000 chunks take
seconds. The same ``(n, seed, profile, max_rows)`` gives the same chunks.
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent / 'fault_injection'))
from hostile_policy import ChunkFile, serve  # the policy's own reading of the file

from robofollow_ros.robot.kinematics import forward_kinematics
from robofollow_ros.robot.profiles import load_profile
from robofollow_ros.state_layout import ARM_SLICE, ARMS, GRIP_INDEX

__all__ = ['ChunkFile', 'HostileChunk', 'Robot', 'generate', 'hostile_chunks', 'robot_of', 'save', 'serve']
ROW_STEP = 0.5
"""rad: the bridge's ``max_row_step`` (``ChunkLimits``): a larger step between rows ends the episode."""
GRIP_COLUMNS = tuple(sorted(GRIP_INDEX.values()))
ARM_COLUMNS = tuple(c for c in range(14) if c not in GRIP_COLUMNS)
ROWS = (1, 1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30, 50, 60)
"""Chunk lengths drawn (capped at ``max_rows``): mostly short, so that a fuzz of 10,000 runs in hours, some longer
than the 50 rows a query executes."""
FORMS = ('array', 'list', 'ragged', 'text', 'none')
KINDS = ('slow', 'non_finite', 'jump', 'limit', 'workspace', 'gripper', 'float_extreme', 'accelerate', 'shape')
WEIGHTS = {
    'slow': 4,
    'non_finite': 1,
    'jump': 3,
    'limit': 2,
    'workspace': 3,
    'gripper': 1,
    'float_extreme': 1,
    'accelerate': 3,
    'shape': 1,
}
"""How often each kind is drawn (out of their sum)."""
F32 = np.finfo(np.float32)
EXTREMES = (
    float(F32.max),
    -float(F32.max),
    float(F32.tiny),
    float(F32.smallest_subnormal),
    -float(F32.smallest_subnormal),
    -0.0,
    1e39,
    -1e39,
    1e308,
    -1e308,
    float(2**24 + 1),
)
BEYOND = (0.0, -1e-7, 1e-9, 5e-7, 9.9e-7, 1.01e-6, 2e-6, 1e-5, 1e-3, 0.05, 1.0, 100.0, 1e6)
"""How far beyond a joint limit a ``limit`` target lies (negative: inside)."""
GRIPS = (-1e6, -1.0, -0.01, -2e-6, -5e-7, 0.0, 1.0, 1.0 + 5e-7, 1.0 + 2e-6, 1.01, 2.0, 1e6)


@dataclass(frozen=True)
class Robot:
    """What the strategies need of a profile: 14-D home, limits and velocity limits, the row period, the box, FK."""

    name: str
    home: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    row_period: float
    box_low: np.ndarray
    box_high: np.ndarray
    robot: str
    exits: dict[str, list[tuple[np.ndarray, float]]] = field(default_factory=dict)
    """Per arm, directions in joint space (6,) and the scale along them at which the TCP leaves the box."""

    @property
    def step(self) -> np.ndarray:
        """The largest change per row within the velocity limits (14,)."""
        return self.velocity * self.row_period

    def tcp(self, arm: str, q6: np.ndarray) -> np.ndarray:
        return forward_kinematics(self.robot).tcp_pose(arm, q6).position

    def outside(self, point: np.ndarray) -> float:
        """How far (m) a point lies outside the box (0 inside)."""
        return float(np.maximum(np.maximum(self.box_low - point, point - self.box_high), 0.0).max())


@functools.cache
def robot_of(profile_name: str, gripper_velocity: float = 20.0) -> Robot:
    """The ``Robot`` of a profile (cached): grippers' velocity limit in strokes per second (the bridge's default)."""
    profile = load_profile(profile_name)
    if profile.robot is None:
        raise ValueError(f'profile {profile_name!r} names no robot: no kinematics for the workspace chunks')
    velocity = np.concatenate([np.append(profile.arms[arm].velocity, gripper_velocity) for arm in ARMS])
    robot = Robot(
        name=profile.name,
        home=profile.home_state(),
        lower=profile.state_lower(),
        upper=profile.state_upper(),
        velocity=velocity,
        row_period=float(profile.row_period),
        box_low=np.asarray(profile.workspace_min, dtype=np.float64),
        box_high=np.asarray(profile.workspace_max, dtype=np.float64),
        robot=profile.robot,
    )
    robot.exits.update({arm: exit_directions(robot, arm) for arm in ARMS})
    return robot


def exit_directions(robot: Robot, arm: str, count: int = 48) -> list[tuple[np.ndarray, float]]:
    """Directions (waist, shoulder, elbow, wrist angle mostly) from home along which the TCP leaves the box within
    the joint limits, each with the scale (rad along the unit direction) where it first does."""
    rng = np.random.default_rng(1)
    columns = np.arange(ARM_SLICE[arm].start, ARM_SLICE[arm].stop)
    home, low, high = robot.home[columns], robot.lower[columns], robot.upper[columns]
    found: list[tuple[np.ndarray, float]] = []
    scales = np.linspace(0.0, 3.0, 61)
    for _ in range(count * 4):
        direction = rng.normal(size=6) * np.array([0.6, 1.0, 1.0, 0.2, 0.7, 0.1])
        direction /= np.linalg.norm(direction)
        for scale in scales[1:]:
            q = home + scale * direction
            if (q < low).any() or (q > high).any():
                break
            if robot.outside(robot.tcp(arm, q)) > 0.0:
                inside = scale - scales[1]
                for _ in range(20):  # bisect to the crossing
                    middle = (inside + scale) / 2.0
                    if robot.outside(robot.tcp(arm, home + middle * direction)) > 0.0:
                        scale = middle
                    else:
                        inside = middle
                found.append((direction, float(scale)))
                break
        if len(found) >= count:
            break
    return found


@dataclass(frozen=True)
class HostileChunk:
    """One chunk the replay policy serves (module docstring)."""

    kind: str
    data: np.ndarray
    anchor: np.ndarray
    form: str = 'array'

    def served(self, state: np.ndarray) -> Any:
        """What the policy returns when it observes ``state`` (14,)."""
        return serve(self.data, self.anchor, self.form, state)


# --- strategies ------------------------------------------------------------------------------------------------


def _rows(draw: st.DrawFn, max_rows: int) -> int:
    return min(draw(st.sampled_from(ROWS)), max_rows)


def _rng(draw: st.DrawFn) -> np.random.Generator:
    return np.random.default_rng(draw(st.integers(0, 2**32 - 1)))


def _motion(rng: np.random.Generator, robot: Robot, rows: int, fraction: float) -> np.ndarray:
    """Offsets (rows, 14) of a smooth motion from the anchor: each arm joint swings sinusoidally (amplitude up to
    0.3 rad, so that a motion stays near where it started) at a peak speed of ``fraction`` of its velocity limit;
    the grippers (absolute) anywhere in 0..1, moving or not."""
    amplitude = rng.uniform(0.02, 0.3, 14)
    omega = fraction * robot.velocity / amplitude
    phase = rng.uniform(0.0, 2.0 * math.pi, 14)
    times = robot.row_period * np.arange(1, rows + 1)[:, None]
    offsets = amplitude * (np.sin(omega * times + phase) - np.sin(phase))
    grips = rng.uniform(0.0, 1.0, (1, 2))
    if rng.random() < 0.5:
        grips = np.clip(grips + np.cumsum(rng.uniform(-0.2, 0.2, (rows, 2)), axis=0), 0.0, 1.0)
    offsets[:, GRIP_COLUMNS] = grips
    return offsets


def _anchor(grippers: bool = False) -> np.ndarray:
    """Arm columns offset from the observed state; grippers absolute unless ``grippers``."""
    anchor = np.ones(14, dtype=bool)
    if not grippers:
        anchor[list(GRIP_COLUMNS)] = False
    return anchor


@st.composite
def _moving(draw: st.DrawFn, robot: Robot, max_rows: int) -> tuple[np.ndarray, int, np.random.Generator]:
    """A valid motion of 1..max_rows rows, and the row where a hostile change begins (rows before it move)."""
    rows = _rows(draw, max_rows)
    rng = _rng(draw)
    fraction = draw(st.sampled_from([0.1, 0.5, 0.9]))
    start = draw(st.integers(0, rows - 1))
    return _motion(rng, robot, rows, fraction), start, rng


@st.composite
def slow(draw: st.DrawFn, robot: Robot, max_rows: int) -> HostileChunk:
    rows = _rows(draw, max_rows)
    fraction = draw(st.floats(0.1, 0.9))
    data = _motion(_rng(draw), robot, rows, fraction)
    dtype = draw(st.sampled_from([np.float64, np.float64, np.float32, np.float16]))
    form = draw(st.sampled_from(['array', 'array', 'array', 'list']))
    return HostileChunk('slow', data.astype(dtype), _anchor(), form)


@st.composite
def non_finite(draw: st.DrawFn, robot: Robot, max_rows: int) -> HostileChunk:
    data, _, rng = draw(_moving(robot, max_rows))
    for _ in range(draw(st.integers(1, 5))):
        cell = (rng.integers(len(data)), rng.integers(14))
        data[cell] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
    return HostileChunk('non_finite', data, _anchor())


@st.composite
def jump(draw: st.DrawFn, robot: Robot, max_rows: int) -> HostileChunk:
    data, start, rng = draw(_moving(robot, max_rows))
    band = draw(st.sampled_from(['too_fast', 'too_fast', 'row_step', 'huge']))
    low, high = {'too_fast': (1.0, ROW_STEP), 'row_step': (ROW_STEP, 3.3), 'huge': (10.0, 1e4)}[band]
    count = draw(st.integers(1, 12))
    columns = rng.choice(ARM_COLUMNS, size=count, replace=False)
    for column in columns:
        floor = robot.step[column] * 1.0001 if band == 'too_fast' else low
        size = draw(st.floats(floor, max(high, floor)))
        sign = draw(st.sampled_from([1.0, -1.0]))
        if draw(st.booleans()):
            data[start:, column] += sign * size  # jumps and stays
        else:
            data[start, column] += sign * size  # one row only (and back)
    return HostileChunk(f'jump:{band}', data, _anchor())


@st.composite
def limit(draw: st.DrawFn, robot: Robot, max_rows: int) -> HostileChunk:
    data, start, _ = draw(_moving(robot, max_rows))
    column = draw(st.sampled_from(ARM_COLUMNS))
    beyond = draw(st.one_of(st.sampled_from(BEYOND), st.floats(0.0, 1e6)))
    upper = draw(st.booleans())
    target = robot.upper[column] + beyond if upper else robot.lower[column] - beyond
    anchor = _anchor()
    if draw(st.booleans()):
        anchor[column] = False  # absolute: the exact value, from the start row on
        data[:, column] = robot.home[column] + (data[:, column] if len(data) else 0.0)
        data[start:, column] = target
    else:
        # Approached linearly over the remaining rows (an offset: exactly the target when the arm is at home; a
        # valid speed when the rows are enough).
        before = data[start - 1, column] if start > 0 else 0.0
        fractions = np.linspace(0.0, 1.0, len(data) - start + 1)[1:]
        data[start:, column] = before + fractions * (target - robot.home[column] - before)
    return HostileChunk(f'limit:{"absolute" if not anchor[column] else "approach"}', data, anchor)


@st.composite
def workspace(draw: st.DrawFn, robot: Robot, max_rows: int) -> HostileChunk:
    rows = _rows(draw, max_rows)
    rng = _rng(draw)
    arms = draw(st.sampled_from([('left',), ('right',), ('left', 'right')]))
    beyond = draw(st.sampled_from([1e-4, 0.01, 0.05, 0.2, 0.6, 1.5]))
    speed = draw(st.sampled_from([0.5, 0.95, 0.999, 1.5, 3.0]))
    data = np.zeros((rows, 14))
    data[:, list(GRIP_COLUMNS)] = rng.uniform(0.0, 1.0, 2)
    longest = 1
    targets = {}
    for arm in arms:
        exits = robot.exits[arm]
        direction, scale = exits[draw(st.integers(0, len(exits) - 1))]
        targets[arm] = direction * (scale + beyond)
        longest = max(longest, math.ceil(np.abs(targets[arm]).max() / (speed * robot.step[0])))
    reach = min(rows, longest)
    fractions = np.minimum(np.arange(1, rows + 1) / reach, 1.0)[:, None]
    for arm, target in targets.items():
        data[:, ARM_SLICE[arm]] = fractions * target
    return HostileChunk('workspace', data, _anchor())


@st.composite
def gripper(draw: st.DrawFn, robot: Robot, max_rows: int) -> HostileChunk:
    data, start, _ = draw(_moving(robot, max_rows))
    for column in draw(st.sampled_from([(6,), (13,), (6, 13)])):
        value = draw(st.one_of(st.sampled_from(GRIPS), st.floats(-1e6, 1e6)))
        data[start:, column] = value
    return HostileChunk('gripper', data, _anchor())


@st.composite
def float_extreme(draw: st.DrawFn, robot: Robot, max_rows: int) -> HostileChunk:
    data, _, rng = draw(_moving(robot, max_rows))
    data = robot.home + data * _anchor()  # absolute values: the extremes stay what they are
    for _ in range(draw(st.integers(1, 4))):
        data[rng.integers(len(data)), rng.integers(14)] = draw(st.sampled_from(EXTREMES))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    with np.errstate(over='ignore'):
        return HostileChunk('float_extreme', data.astype(dtype), np.zeros(14, dtype=bool))


@st.composite
def accelerate(draw: st.DrawFn, robot: Robot, max_rows: int) -> HostileChunk:
    rows = _rows(draw, max_rows)
    rng = _rng(draw)
    count = draw(st.integers(1, 12))
    columns = rng.choice(ARM_COLUMNS, size=count, replace=False)
    fraction = draw(st.sampled_from([0.5, 0.9, 0.999, 1.0 - 1e-6, 1.0 + 1e-6]))
    pattern = draw(st.sampled_from(['reverse', 'bang', 'bang_bang']))
    speeds = np.zeros((rows, 14))
    if pattern == 'reverse':
        speeds[:, columns] = (-1.0) ** np.arange(rows)[:, None]
    elif pattern == 'bang':
        speeds[:, columns] = 1.0
    else:
        speeds[: (rows + 1) // 2, columns] = 1.0
        speeds[(rows + 1) // 2 :, columns] = -1.0
    speeds[:, columns] *= rng.choice([-1.0, 1.0], size=count)
    data = np.cumsum(speeds * fraction * robot.step, axis=0)
    data[:, list(GRIP_COLUMNS)] = rng.uniform(0.0, 1.0, 2)
    return HostileChunk(f'accelerate:{pattern}', data, _anchor())


@st.composite
def shape(draw: st.DrawFn, robot: Robot, max_rows: int) -> HostileChunk:
    rows = _rows(draw, max_rows)
    chunk = np.tile(robot.home, (rows, 1))
    variant = draw(
        st.sampled_from(
            [
                '13_columns',
                '15_columns',
                'no_rows',
                'no_columns',
                '3d',
                '1d',
                '0d',
                'transposed',
                'bool',
                'complex',
                'text',
                'datetime',
                'ragged',
                'string',
                'none',
            ]
        )
    )
    no = np.zeros(14, dtype=bool)
    data: np.ndarray = {
        '13_columns': chunk[:, :13],
        '15_columns': np.hstack([chunk, chunk[:, :1]]),
        'no_rows': chunk[:0],
        'no_columns': chunk[:, :0],
        '3d': chunk[None, :, :],
        '1d': robot.home.copy(),
        '0d': np.array(robot.home[1]),
        'transposed': chunk.T.copy() if rows != 14 else chunk[:, :, None],
        'bool': chunk > 0.0,
        'complex': chunk.astype(np.complex128),
        'text': chunk.astype('U8'),
        'datetime': np.zeros(chunk.shape, dtype='datetime64[s]'),
        'ragged': chunk,
        'string': chunk,
        'none': chunk,
    }[variant]
    form = {'ragged': 'ragged', 'string': 'text', 'none': 'none'}.get(variant, 'array')
    return HostileChunk(f'shape:{variant}', data, no, form)


STRATEGIES = {
    'slow': slow,
    'non_finite': non_finite,
    'jump': jump,
    'limit': limit,
    'workspace': workspace,
    'gripper': gripper,
    'float_extreme': float_extreme,
    'accelerate': accelerate,
    'shape': shape,
}


def hostile_chunks(robot: Robot, *, max_rows: int = 60) -> st.SearchStrategy[HostileChunk]:
    """Chunks of every kind in one strategy (Hypothesis's choice of kind is not weighted exactly: ``generate``
    draws each kind's quota instead)."""
    weighted = [kind for kind in KINDS for _ in range(WEIGHTS[kind])]
    return st.sampled_from(weighted).flatmap(lambda kind: STRATEGIES[kind](robot, max_rows))


def quotas(count: int) -> dict[str, int]:
    """How many chunks of each kind make ``count`` (``WEIGHTS``, largest remainders)."""
    total = sum(WEIGHTS.values())
    exact = {kind: count * WEIGHTS[kind] / total for kind in KINDS}
    shares = {kind: int(value) for kind, value in exact.items()}
    for kind in sorted(KINDS, key=lambda k: shares[k] - exact[k])[: count - sum(shares.values())]:
        shares[kind] += 1
    return shares


def draw_examples(strategy: st.SearchStrategy[HostileChunk], count: int, *, seed: int) -> list[HostileChunk]:
    """Exactly ``count`` examples of ``strategy``, deterministically: a ``@given`` function under
    ``hypothesis.seed``, no database, the generate phase only, appending what it is given."""
    drawn: list[HostileChunk] = []
    while len(drawn) < count:

        @hypothesis_seed(seed)
        @settings(
            max_examples=count - len(drawn),
            database=None,
            phases=[Phase.generate],
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def collect(chunk: HostileChunk) -> None:
            drawn.append(chunk)

        before = len(drawn)
        collect()
        if len(drawn) == before:  # Hypothesis may stop short of max_examples (not seen here): draw on, reseeded
            raise RuntimeError('Hypothesis generated no further chunks')
        seed += 1_000_003
    return drawn[:count]


def generate(
    count: int, *, seed: int = 0, profile: str = 'aloha_ros2_control', max_rows: int = 60
) -> list[HostileChunk]:
    """Exactly ``count`` chunks, deterministically: each kind's quota (``quotas``) drawn by its strategy under its
    own seed, then shuffled together by a numpy generator of ``seed``."""
    robot = robot_of(profile)
    chunks: list[HostileChunk] = []
    for index, (kind, share) in enumerate(quotas(count).items()):
        if share:
            chunks += draw_examples(STRATEGIES[kind](robot, max_rows), share, seed=seed * len(KINDS) + index)
    order = np.random.default_rng(seed).permutation(len(chunks))
    return [chunks[i] for i in order]


# --- the file ---------------------------------------------------------------------------------------------------


def save(path: Path, chunks: list[HostileChunk]) -> None:
    """One ``.npz``: ``c<i>`` each chunk's data, ``kinds``, ``anchors`` (N, 14) and ``forms`` (no pickles)."""
    arrays: dict[str, np.ndarray] = {f'c{i}': chunk.data for i, chunk in enumerate(chunks)}
    arrays['kinds'] = np.array([chunk.kind for chunk in chunks])
    arrays['anchors'] = np.array([chunk.anchor for chunk in chunks], dtype=bool).reshape(len(chunks), 14)
    arrays['forms'] = np.array([chunk.form for chunk in chunks])
    with Path(path).open('wb') as file:
        np.savez(file, **arrays)
