"""The one progress display: a line per finished item with a count, the rate and the time left.

``ProgressLine`` keeps the count and the clock; ``Progress`` words it for evaluation trials, ``data.progress`` for
collected demonstrations and exports. The time left is the items still to do at the rate of the items done in this
run (items done before a resume do not count toward the rate).
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from robofollow_ros.evaluation.real_time import RealTimeKeeping


class ProgressLine:
    """A count of ``done`` items toward ``total``, timed from its creation, printed one line at a time.

    Args:
        total: items wanted.
        already: items done before this run (a resumed run).
        stream: where lines go (standard error by default).
    """

    def __init__(self, total: int, *, already: int = 0, stream: TextIO | None = None) -> None:
        self.total = total
        self.done = already
        self.fresh = 0
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()

    def advance(self, count: int = 1) -> None:
        """``count`` more items are done (in this run)."""
        self.done += count
        self.fresh += count

    @property
    def elapsed(self) -> float:
        """Seconds since this display was created."""
        return max(time.perf_counter() - self.started, 1e-9)

    @property
    def rate(self) -> float:
        """Items done in this run per second."""
        return self.fresh / self.elapsed

    def eta(self) -> str:
        """The time left, ``1.5 min``, or ``?`` before the first item."""
        rate = self.rate
        return f'{(self.total - self.done) / rate / 60.0:.1f} min' if rate > 0 else '?'

    def counter(self) -> str:
        """``[ k/N]``, padded to the width of N."""
        return f'[{self.done:>{len(str(self.total))}}/{self.total}]'

    def emit(self, line: str) -> None:
        """Print one line now."""
        print(line, file=self.stream, flush=True)


class Progress(ProgressLine):
    """Prints ``[k/N] task round: IS ES CR (s) | running means | ETA`` for each finished trial."""

    def __init__(self, total: int, *, stream: TextIO | None = None, already_done: int = 0) -> None:
        super().__init__(total, already=already_done, stream=stream)
        self.sum_is = self.sum_es = 0.0
        self.completed = 0

    def update(self, record: dict[str, Any], *, wall_seconds: float) -> None:
        """Report one finished trial."""
        self.advance()
        self.sum_is += float(record.get('intent_score', 0.0))
        self.sum_es += float(record.get('exec_score', 0.0))
        self.completed += bool(record.get('completion_ok'))
        mark = 'ok' if record.get('completion_ok') else '--'
        error = f' policy error: {record["policy_error"]}' if record.get('policy_error') else ''
        real_time = record.get('real_time')
        if isinstance(real_time, dict) and real_time.get('kept') is False:
            error += f' | {RealTimeKeeping.from_record(real_time).summary()}'
        self.emit(
            f'{self.counter()} {record["task_id"]} r{record.get("round", 0)}: '
            f'IS {record.get("intent_score", 0.0):.2f} ES {record.get("exec_score", 0.0):.2f} CR {mark} '
            f'({wall_seconds:.1f} s) | mean IS {self.sum_is / self.fresh:.3f} ES {self.sum_es / self.fresh:.3f} '
            f'CR {self.completed / self.fresh:.3f} | ETA {self.eta()}{error}'
        )
