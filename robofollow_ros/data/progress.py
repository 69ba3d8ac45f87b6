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
