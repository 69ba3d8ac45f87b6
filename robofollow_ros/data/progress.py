"""The collector's and the exporter's wording of the one progress display (``evaluation.progress.ProgressLine``)."""

from __future__ import annotations

import time
from typing import TextIO

from robofollow_ros.evaluation.progress import ProgressLine


class CollectProgress(ProgressLine):
    """Prints ``[accepted/wanted] label seed s: ok | acceptance | demos/h | ETA`` after every attempt."""

    def __init__(self, wanted: int, *, already: int = 0, stream: TextIO | None = None) -> None:
        super().__init__(wanted, already=already, stream=stream)
        self.attempts = 0

    def update(self, label: str, *, seed: int, ok: bool, reason: str, wall_seconds: float) -> None:
        """Report one finished attempt."""
        self.attempts += 1
        self.advance(int(ok))
        mark = 'accepted' if ok else f'rejected ({reason})'
        self.emit(
            f'{self.counter()} {label} seed {seed}: {mark} ({wall_seconds:.1f} s) '
            f'| acceptance {self.fresh / self.attempts:.1%} | {self.rate * 3600.0:.0f} demos/h | ETA {self.eta()}'
        )


class ExportProgress(ProgressLine):
    """Prints ``LeRobot export: k/N episodes | episodes/s | ETA`` as an export advances (at most every ``every`` s).

    Writing the videos takes ~0.5-1 s per demonstration, so without it a 100-episode export is minutes of silence.
    """

    def __init__(self, *, what: str = 'LeRobot export', every: float = 2.0, stream: TextIO | None = None) -> None:
        super().__init__(0, stream=stream)
        self.what = what
        self.every = every
        self._printed = -float('inf')

    def __call__(self, done: int, total: int) -> None:
        """Report ``done`` of ``total`` episodes written (always prints the first and the last)."""
        self.total = total
        self.advance(done - self.done)
        now = time.perf_counter()
        if done not in (1, total) and now - self._printed < self.every:
            return
        self._printed = now
        self.emit(
            f'{self.what}: {done}/{total} episodes ({self.elapsed:.0f} s) | {self.rate:.2f} episodes/s '
            f'| ETA {self.eta()}'
        )
