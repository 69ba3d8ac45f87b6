"""Synthetic trajectories from piecewise-linear keyframes, sampled at any rate.

Used by the golden tests and the benchmark script: a motion is written once in time (seconds) and can be
sampled at 16.7 Hz, 50 Hz or 100 Hz. Each signal holds its first value before its first keyframe and its
last value after its last keyframe.

Example::

    motion = Motion(duration=6.0)
    motion.ee('left', (0.0, (-0.3, -0.3, 0.9)), (1.0, (-0.14, -0.04, 0.8)))
    motion.grip('left', (1.0, 1.0), (1.2, 0.0))
    trajectory = motion.sample(rate=50.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from robofollow_ros.benchmark.types import ARMS, Arm
from robofollow_ros.referee.trajectory import Trajectory

Key = tuple[float, Any]
TOP_DOWN = (-0.5, 0.5, -0.5, -0.5)
"""The expert's top-down grasp orientation (w, x, y, z): TCP +x along world -z."""


@dataclass
class Track:
    """A piecewise-linear signal: keyframe times and values."""

    times: np.ndarray
    values: np.ndarray

    @classmethod
    def of(cls, keys: Sequence[Key]) -> Track:
        """Build a track from ``(time, value)`` keys (value: number or sequence), sorted by time."""
        if not keys:
            raise ValueError('a track needs at least one keyframe')
        ordered = sorted(keys, key=lambda key: key[0])
        times = np.asarray([float(t) for t, _ in ordered])
        values = np.asarray([np.atleast_1d(np.asarray(v, dtype=float)) for _, v in ordered])
        return cls(times, values)

    def at(self, t: np.ndarray) -> np.ndarray:
        """Values at times ``t``, shape (len(t), width)."""
        return np.stack([np.interp(t, self.times, self.values[:, i]) for i in range(self.values.shape[1])], axis=1)


@dataclass
class Motion:
    """Keyframed signals of one synthetic episode.

    Defaults: grippers open (1.0), EEs at their ``home`` positions, TCP orientation ``TOP_DOWN`` (so the
    Scene 1 fingertip sits 0.04 m below the TCP).
    """

    duration: float
    home: Mapping[Arm, Sequence[float]] = field(
        default_factory=lambda: {'left': (-0.30, -0.30, 0.95), 'right': (0.30, -0.30, 0.95)}
    )
    tracks: dict[str, Track] = field(default_factory=dict)
    objects: list[str] = field(default_factory=list)
    quat_objects: list[str] = field(default_factory=list)

    def ee(self, arm: Arm, *keys: Key) -> Motion:
        """Keyframes ``(t, (x, y, z))`` of an arm's TCP."""
        self.tracks[f'ee.{arm}'] = Track.of(keys)
        return self

    def ee_quat(self, arm: Arm, *keys: Key) -> Motion:
        """Keyframes ``(t, (w, x, y, z))`` of an arm's TCP orientation (interpolated, then normalised)."""
        self.tracks[f'ee_quat.{arm}'] = Track.of(keys)
        return self

    def grip(self, arm: Arm, *keys: Key) -> Motion:
        """Keyframes ``(t, g)`` of an arm's gripper (1 open, 0 closed)."""
        self.tracks[f'grip.{arm}'] = Track.of(keys)
        return self

    def obj(self, name: str, *keys: Key) -> Motion:
        """Keyframes ``(t, (x, y, z))`` of an object's position."""
        if name not in self.objects:
            self.objects.append(name)
        self.tracks[f'obj.{name}'] = Track.of(keys)
        return self

    def obj_yaw(self, name: str, *keys: Key) -> Motion:
        """Keyframes ``(t, yaw)`` of an object's rotation about +z (radians, interpolated in yaw)."""
        if name not in self.quat_objects:
            self.quat_objects.append(name)
        self.tracks[f'yaw.{name}'] = Track.of(keys)
        return self

    def times(self, rate: float, *, start: float = 0.0) -> np.ndarray:
        """Sample times ``start + k / rate`` covering ``[start, start + duration]``."""
        count = math.floor(self.duration * rate + 1e-9) + 1
        return start + np.arange(count) / rate

    def sample(self, rate: float | None = None, *, times: np.ndarray | None = None, start: float = 0.0) -> Trajectory:
        """The trajectory sampled at ``rate`` Hz (or at explicit ``times``, relative to ``start``)."""
        t = self.times(cast(float, rate), start=start) if times is None else start + np.asarray(times, dtype=float)
        local = t - start
        down = TOP_DOWN

        def signal(key: str, default: Sequence[float]) -> np.ndarray:
            track = self.tracks.get(key)
            if track is None:
                return np.tile(np.asarray(default, dtype=float), (t.size, 1))
            return track.at(local)

        ee = {arm: signal(f'ee.{arm}', self.home[arm]) for arm in ARMS}
        grip = {arm: signal(f'grip.{arm}', (1.0,))[:, 0] for arm in ARMS}
        quats = {arm: signal(f'ee_quat.{arm}', down) for arm in ARMS}
        ee_quat = {arm: q / np.linalg.norm(q, axis=1, keepdims=True) for arm, q in quats.items()}
        obj_pos = {name: signal(f'obj.{name}', (0.0, 0.0, 0.0)) for name in self.objects}
        obj_quat = {}
        for name in self.quat_objects:
            half = signal(f'yaw.{name}', (0.0,))[:, 0] / 2
            obj_quat[name] = np.stack([np.cos(half), np.zeros_like(half), np.zeros_like(half), np.sin(half)], axis=1)
        return Trajectory(t=t, ee=ee, grip=grip, obj_pos=obj_pos, ee_quat=ee_quat, obj_quat=obj_quat)
