"""A policy for the real-time bridge's safety tests whose script is chosen by the instruction's first word.

Columns of the 14-D layout: left arm 0-5 (0 waist, 1 shoulder), left gripper 6, right arm 7-12, right gripper 13.
The test profile (test/data/robots/aloha_refuse_test.yaml) refuses out-of-limit targets, narrows the left waist to
+-0.2 rad and raises the workspace floor to z 0.945 m; velocity limits 3.14159 rad/s, rows 0.06 s apart.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

GAUNTLET_ROWS = (5, 0, 2, 3)
"""Rows of each gauntlet chunk that may reach the arms (0: the chunk is refused whole, the arms hold)."""
LONG_ROWS = 50
OVERSHOOT_ROWS = (6, 5, 5, 3, 3)
"""Rows of each ``overshoot`` chunk (the first: the left waist past +0.2 from row 4, the left gripper at 1.1 from
row 2; then the right gripper closed and opened in one row; then standing still)."""


def ramp(state: np.ndarray, column: int, step: float, rows: int) -> np.ndarray:
    """``rows`` rows from ``state`` moving one column by ``step`` per row."""
    chunk = np.tile(state, (rows, 1))
    chunk[:, column] += step * np.arange(1, rows + 1)
    return chunk


def gauntlet(state: np.ndarray, call: int) -> np.ndarray:
    """An allowed move, then a too fast one, one into the narrowed joint limit, one below the workspace floor, NaN."""
    if call == 0:
        return ramp(state, 7, 0.01, 5)  # right waist at 0.17 rad/s: allowed
    if call == 1:
        # Right waist by 0.3 rad in one row: 5 rad/s (ChunkLimits' 0.5 rad step lets it by). Only too fast: a waist
        # turn keeps the TCP inside the workspace box, so only the velocity check can refuse it.
        chunk = ramp(state, 7, 0.0, 3)
        chunk[:, 7] += 0.3
        return chunk
    if call == 2:
        return ramp(state, 0, 0.08, 4)  # left waist 0.08 .. 0.32: beyond +0.2 from the third row
    if call == 3:
        return ramp(state, 1, 0.05, 6)  # left shoulder down: the TCP crosses z 0.945 at the fourth row
    chunk = np.tile(state, (5, 1))
    chunk[2, 3] = np.nan
    return chunk


def overshoot(state: np.ndarray, call: int) -> np.ndarray:
    """From home: targets beyond the joint limits (the profile's left waist limit, and the gripper's fully open, the
    URDF's too), then the right gripper closed in one row and opened in one row, then still rows."""
    chunk = np.tile(state, (OVERSHOOT_ROWS[call], 1))
    if call == 0:
        chunk[:, 0] += 0.05 * np.arange(1, OVERSHOOT_ROWS[0] + 1)  # 0.05 .. 0.30 rad at 0.83 rad/s
        chunk[2:, 6] = 1.1
    elif call in (1, 2):
        chunk[:, 13] = 0.0 if call == 1 else 1.0
    return chunk


class ScriptedByInstruction:
    """``gauntlet``, ``overshoot``: the chunks above; ``stale``, ``move``: small allowed moves; ``silent``: answers
    after 4 s; ``long``: 50 slow rows per query."""

    needs_images = False

    def __init__(self) -> None:
        self.script = 'move'
        self.calls = 0

    def reset(self) -> None:
        self.calls = 0

    def set_instruction(self, text: str) -> None:
        self.script = text.split()[0]

    def predict(self, observation: Any) -> np.ndarray:
        state = np.asarray(observation.state, dtype=np.float64)
        call, self.calls = self.calls, self.calls + 1
        if self.script == 'gauntlet':
            return gauntlet(state, call)
        if self.script == 'overshoot':
            return overshoot(state, call)
        if self.script == 'silent':
            time.sleep(4.0)
            return np.tile(state, (3, 1))
        if self.script == 'long':
            return ramp(state, 7, -0.003, LONG_ROWS)
        return ramp(state, 7, 0.005, 3)


def scripted() -> ScriptedByInstruction:
    """The factory the bridge loads (``realtime_policies:scripted``)."""
    return ScriptedByInstruction()
