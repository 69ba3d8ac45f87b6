"""A policy that keeps the arms moving and misbehaves on request, for ``bench/bench_faults.py`` (a ``module:function``
policy: it runs in the sandbox, and reads its requests from the scratch folder the bench gives it).

``sweep(control=..., needs_images=...)`` swings each arm's waist, shoulder and elbow sinusoidally about where the
episode started (peak joint speed ``amplitude * 2 pi / period``), each chunk continuing the motion of the last. A
file ``fault`` in ``control`` holding one word makes the next chunk misbehave, once:

* ``nan``: a NaN in the middle row; ``jump``: from the middle row on, the left waist 1 rad further (too fast);
* ``limits``: from the middle row on, the left shoulder at 9 rad; ``workspace``: from the middle row on, the left
  shoulder leaning forward until the TCP is below the table top;
* ``stall``: the answer comes 3 s late (past the dead-man's 2 s); ``crash``: the policy process exits.

When it misbehaves it writes ``fault.fired`` (the fault and the wall clock in ns).
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

ROW_SECONDS = 0.06
ARM_COLUMNS = {'left': (0, 1, 2), 'right': (7, 8, 9)}
SHAPE = (1.0, 0.5, -0.5)
"""Each swung joint's share of the amplitude (waist, shoulder, elbow)."""


class Sweep:
    def __init__(self, control: str, *, amplitude: float, period: float, rows: int, needs_images: bool) -> None:
        self.control = Path(control)
        self.amplitude, self.period, self.rows = amplitude, period, rows
        self.needs_images = needs_images
        self.origin: np.ndarray | None = None
        self.t = 0.0

    def reset(self) -> None:
        self.origin, self.t = None, 0.0

    def set_instruction(self, text: str) -> None:
        self.instruction = text

    def predict(self, observation: Any) -> np.ndarray:
        state = np.asarray(observation.state, dtype=np.float64)
        if self.origin is None:
            self.origin = state.copy()
        times = self.t + ROW_SECONDS * np.arange(1, self.rows + 1)
        self.t = float(times[-1])
        swing = self.amplitude * np.sin(2.0 * math.pi * times / self.period)
        chunk = np.tile(self.origin, (self.rows, 1))
        for columns in ARM_COLUMNS.values():
            for column, share in zip(columns, SHAPE, strict=True):
                chunk[:, column] += share * swing
        return self.misbehave(chunk)

    def misbehave(self, chunk: np.ndarray) -> np.ndarray:
        request = self.control / 'fault'
        if not request.exists():
            return chunk
        fault = request.read_text().strip()
        request.unlink()
        middle = len(chunk) // 2
        (self.control / 'fault.fired').write_text(f'{fault} {time.time_ns()}')
        if fault == 'nan':
            chunk[middle, 3] = np.nan
        elif fault == 'jump':
            chunk[middle:, 0] += 1.0
        elif fault == 'limits':
            chunk[middle:, 1] = 9.0
        elif fault == 'workspace':
            chunk[middle:, 1] += np.linspace(0.0, 1.2, len(chunk) - middle)
            chunk[middle:, 4] -= np.linspace(0.0, 0.2, len(chunk) - middle)
        elif fault == 'stall':
            time.sleep(3.0)
        elif fault == 'crash':
            os._exit(3)
        return chunk


def sweep(
    control: str, amplitude: float = 0.4, period: float = 3.0, rows: int = 50, needs_images: bool = False
) -> Sweep:
    """The sweeping policy (see the module docstring)."""
    return Sweep(control, amplitude=amplitude, period=period, rows=rows, needs_images=needs_images)
