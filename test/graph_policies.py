"""Policies that misbehave on purpose, for the policy bridge's fault tests (loaded as module:function)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np


class _Scripted:
    needs_images = False

    def __init__(self, chunks: list[Any], *, delay: float = 0.0, ready_file: str = '') -> None:
        self.chunks = chunks
        self.delay = delay
        self.ready_file = Path(ready_file) if ready_file else None
        self.calls = 0

    def reset(self) -> None:
        self.calls = 0

    def set_instruction(self, text: str) -> None:
        self.instruction = text

    def predict(self, observation: Any) -> np.ndarray:
        self._wait_until_ready()
        time.sleep(self.delay)
        state = np.asarray(observation.state, dtype=np.float64)
        chunk = self.chunks[min(self.calls, len(self.chunks) - 1)]
        self.calls += 1
        return chunk(state) if callable(chunk) else chunk

    def _wait_until_ready(self, timeout: float = 20.0) -> None:
        """Before the first answer, wait for the test's ``ready_file`` (its listener of the volatile arm commands has
        matched the bridge's writers: a command sent before that match never reaches it)."""
        deadline = time.monotonic() + timeout
        while self.ready_file is not None and not self.ready_file.exists() and time.monotonic() < deadline:
            time.sleep(0.01)


def _hold(rows: int):
    return lambda state: np.tile(state, (rows, 1)).astype(np.float32)


def _nan(state: np.ndarray) -> np.ndarray:
    chunk = np.tile(state, (5, 1))
    chunk[2, 3] = np.nan
    return chunk


def _out_of_limits(state: np.ndarray) -> np.ndarray:
    chunk = np.tile(state, (5, 1))
    chunk[:, 1] = 9.0
    return chunk


def _grippers_overshooting(state: np.ndarray) -> np.ndarray:
    chunk = np.tile(state, (10, 1))
    chunk[:, 6] = 1.12  # more than fully open, as a regressed gripper command asks
    chunk[:, 13] = -0.05  # a little more than closed
    return chunk


def nan_policy() -> _Scripted:
    """A NaN in the first chunk."""
    return _Scripted([_nan])


def grippers_overshooting() -> _Scripted:
    """Grippers asked a little past fully open and closed, every chunk."""
    return _Scripted([_grippers_overshooting] * 10)


def hold_then_out_of_limits() -> _Scripted:
    """Ten rows of holding still, then a chunk far outside the joint limits."""
    return _Scripted([_hold(10), _out_of_limits])


def hold_then_too_fast() -> _Scripted:
    """Ten rows of holding still, then a one-row jump of 1 rad on a shoulder joint."""

    def jump(state: np.ndarray) -> np.ndarray:
        chunk = np.tile(state, (3, 1))
        chunk[:, 8] += 1.0
        return chunk

    return _Scripted([_hold(10), jump])


def slow_hold(delay: float = 0.5) -> _Scripted:
    """Holds still, taking ``delay`` seconds per query."""
    return _Scripted([_hold(20)], delay=float(delay))


def hold_then_nan(ready_file: str = '') -> _Scripted:
    """Ten rows of holding still, then four, then a NaN (the bridge holds the arms); the first once ``ready_file``
    exists, when given."""
    return _Scripted([_hold(10), _hold(4), _nan], ready_file=ready_file)
