"""Putting asynchronous signals on one frame timeline: zero-order hold, gaps bridged, gap detection (pure numpy).

Used by ``TrajectoryBuilder`` for live episodes (referee node) and recorded ones (bag reader).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros.units import NS_PER_S

MAX_GAP_S = 0.5
"""A required signal silent for longer than this inside the episode is reported in ``Trajectory.gaps``."""


@dataclass(frozen=True)
class Signal:
    """Samples of one signal, sorted by time (equal stamps by recording order).

    Attributes:
        name: what the signal is, for messages (a topic, or a joint name).
        stamp_ns: (k,) int64 sample times.
        values: (k, ...) sample values.
    """

    name: str
    stamp_ns: np.ndarray
    values: np.ndarray

    @classmethod
    def sorted(cls, name: str, stamp_ns: np.ndarray, values: np.ndarray, *, log_ns: np.ndarray) -> Signal:
        """Build a signal from samples in storage order; equal stamps are ordered by log time, then storage order."""
        stamps = np.asarray(stamp_ns, dtype=np.int64)
        order = np.lexsort((np.arange(stamps.shape[0]), np.asarray(log_ns, dtype=np.int64), stamps))
        return cls(name, stamps[order], np.asarray(values)[order])

    @property
    def first_ns(self) -> int:
        """Time of the first sample."""
        return int(self.stamp_ns[0])


def frame_times(clocks: Sequence[Signal], required: Sequence[Signal]) -> np.ndarray:
    """Frame times: every distinct stamp of the ``clocks`` signals once all ``required`` signals have a sample.

    Returns:
        (n,) int64 nanoseconds, strictly increasing; empty if no clock stamp follows the last first sample.
    """
    stamps = np.unique(np.concatenate([clock.stamp_ns for clock in clocks]))
    start = max(signal.first_ns for signal in required)
    return stamps[stamps >= start]


def hold(signal: Signal, frames_ns: np.ndarray) -> np.ndarray:
    """Zero-order hold: at each frame, the latest sample at or before it (the last of equal stamps); a frame before
    the first sample takes the first sample (``frame_times`` starts after the arms' signals; an object's pose may
    begin a little later, ``TrajectoryBuilder``).
    """
    index = np.maximum(np.searchsorted(signal.stamp_ns, frames_ns, side='right') - 1, 0)
    return signal.values[index]


def bridge(signal: Signal, frames_ns: np.ndarray, *, max_gap_ns: int) -> np.ndarray:
    """Zero-order hold, except across a silence longer than ``max_gap_ns`` between two samples: there the values
    go linearly from the sample before to the sample after (an object whose tag a gripper hid while pushing it is
    seen to move during the push, not to jump when the tag shows again; a hidden object that did not move stays).

    Frames before the first sample take the first sample, as for ``hold``.
    """
    stamps, last = signal.stamp_ns, signal.stamp_ns.shape[0] - 1
    index = np.maximum(np.searchsorted(stamps, frames_ns, side='right') - 1, 0)
    after = np.minimum(index + 1, last)
    span = stamps[after] - stamps[index]
    rows = np.flatnonzero((index < last) & (span > max_gap_ns))
    values = np.array(signal.values[index], dtype=np.float64)
    if rows.size:
        before, following = index[rows], after[rows]
        weight = ((frames_ns[rows] - stamps[before]) / span[rows]).reshape((-1,) + (1,) * (values.ndim - 1))
        values[rows] = (1.0 - weight) * signal.values[before] + weight * signal.values[following]
    return values


def hold_or_nan(signal: Signal | None, frames_ns: np.ndarray) -> np.ndarray:
    """Zero-order hold of a float signal, NaN at frames before its first sample (or everywhere if absent)."""
    result = np.full(frames_ns.shape[0], np.nan)
    if signal is None:
        return result
    index = np.searchsorted(signal.stamp_ns, frames_ns, side='right') - 1
    seen = index >= 0
    result[seen] = signal.values[index[seen]]
    return result


def gaps(signals: Sequence[Signal], frames_ns: np.ndarray, *, max_gap_ns: int) -> tuple[tuple[float, float], ...]:
    """Intervals inside the episode where some signal went silent for longer than ``max_gap_ns``.

    A silence runs from a sample to the next one, or to the last frame if the signal stopped early; the part
    of it inside ``[first frame, last frame]`` is reported. Overlapping intervals of different signals merge.

    Returns:
        Sorted, disjoint (start, end) pairs in seconds.
    """
    if frames_ns.size == 0:
        return ()
    first, last = int(frames_ns[0]), int(frames_ns[-1])
    intervals: list[tuple[int, int]] = []
    for signal in signals:
        points = signal.stamp_ns[signal.stamp_ns <= last]
        if points.size == 0:
            continue
        if points[-1] < last:
            points = np.append(points, last)
        silent = np.flatnonzero(np.diff(points) > max_gap_ns)
        intervals.extend((max(int(points[i]), first), int(points[i + 1])) for i in silent if int(points[i + 1]) > first)
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return tuple((start / NS_PER_S, end / NS_PER_S) for start, end in merged)
