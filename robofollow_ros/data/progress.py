"""The collector's one-line-per-attempt progress display: acceptance, demonstrations per hour and time left."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class CollectProgress:
    """Prints ``[accepted/wanted] label ep k seed s: ok | acceptance | demos/h | ETA`` after every attempt."""

    def __init__(self, wanted: int, *, already: int = 0, stream: TextIO | None = None) -> None:
        self.wanted = wanted
        self.accepted = already
        self.fresh_accepted = 0
        self.attempts = 0
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()

    def update(self, label: str, *, seed: int, ok: bool, reason: str, wall_seconds: float) -> None:
        """Report one finished attempt."""
        self.attempts += 1
        self.accepted += ok
        self.fresh_accepted += ok
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        rate = self.fresh_accepted / elapsed * 3600.0
        left = self.wanted - self.accepted
        eta = f'{left / rate * 3600.0 / 60.0:.1f} min' if rate > 0 else '?'
        mark = 'accepted' if ok else f'rejected ({reason})'
        print(
            f'[{self.accepted:>{len(str(self.wanted))}}/{self.wanted}] {label} seed {seed}: {mark} '
            f'({wall_seconds:.1f} s) | acceptance {self.fresh_accepted / self.attempts:.1%} '
            f'| {rate:.0f} demos/h | ETA {eta}',
            file=self.stream,
            flush=True,
        )


class ExportProgress:
    """Prints ``LeRobot export: k/N episodes | episodes/s | ETA`` as an export advances (at most every ``every`` s).

    Writing the videos takes ~0.5-1 s per demonstration, so without it a 100-episode export is minutes of silence.
    """

    def __init__(self, *, what: str = 'LeRobot export', every: float = 2.0, stream: TextIO | None = None) -> None:
        self.what = what
        self.every = every
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()
        self._printed = -float('inf')

    def __call__(self, done: int, total: int) -> None:
        """Report ``done`` of ``total`` episodes written (always prints the first and the last)."""
        now = time.perf_counter()
        if done not in (1, total) and now - self._printed < self.every:
            return
        self._printed = now
        elapsed = max(now - self.started, 1e-9)
        rate = done / elapsed
        eta = f'{(total - done) / rate / 60.0:.1f} min' if rate > 0 else '?'
        print(
            f'{self.what}: {done}/{total} episodes ({elapsed:.0f} s) | {rate:.2f} episodes/s | ETA {eta}',
            file=self.stream,
            flush=True,
        )
