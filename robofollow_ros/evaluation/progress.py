"""A one-line-per-trial progress display with running means and an estimate of the time left."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class Progress:
    """Prints ``[k/N] task round: IS ES CR (s) | running means | ETA`` for each finished trial."""

    def __init__(self, total: int, *, stream: TextIO | None = None, already_done: int = 0) -> None:
        self.total = total
        self.done = already_done
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()
        self.fresh = 0
        self.sum_is = self.sum_es = 0.0
        self.completed = 0

    def update(self, record: dict[str, Any], *, wall_seconds: float) -> None:
        """Report one finished trial."""
        self.done += 1
        self.fresh += 1
        self.sum_is += float(record.get('intent_score', 0.0))
        self.sum_es += float(record.get('exec_score', 0.0))
        self.completed += bool(record.get('completion_ok'))
        elapsed = time.perf_counter() - self.started
        remaining = (self.total - self.done) * elapsed / self.fresh
        mark = 'ok' if record.get('completion_ok') else '--'
        error = f' policy error: {record["policy_error"]}' if record.get('policy_error') else ''
        print(
            f'[{self.done:>{len(str(self.total))}}/{self.total}] {record["task_id"]} r{record.get("round", 0)}: '
            f'IS {record.get("intent_score", 0.0):.2f} ES {record.get("exec_score", 0.0):.2f} CR {mark} '
            f'({wall_seconds:.1f} s) | mean IS {self.sum_is / self.fresh:.3f} ES {self.sum_es / self.fresh:.3f} '
            f'CR {self.completed / self.fresh:.3f} | ETA {remaining / 60:.1f} min{error}',
            file=self.stream,
            flush=True,
        )
