"""A resumable results file: one JSON result record per line, flushed to disk after every trial."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from robofollow_ros.referee.aggregate import is_void, read_result_records
from robofollow_ros.textfiles import read_utf8, write_atomically

TrialKey = tuple[str, int]
RESULTS_NAME = 'results.jsonl'
"""The results file of a run folder."""


def trial_key(record: dict[str, Any]) -> TrialKey:
    """The (task id, round) pair that identifies a trial."""
    return str(record['task_id']), int(record.get('round') or 0)


def jsonl_text(records: Iterable[dict[str, Any]]) -> str:
    """Records as JSON lines (sorted keys), the results file's format."""
    return ''.join(json.dumps(record, sort_keys=True, allow_nan=False) + '\n' for record in records)


class ResultsFile:
    """Appends result records to ``path`` and knows which trials are already done.

    Attributes:
        records: the records that count, in file order.
        void: the records of voided trials (``referee.aggregate.is_void``): kept in the file, not done, not counted.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        every = read_result_records(self.path, void=True, drop_cut_tail=True) if self.path.exists() else []
        self.records: list[dict[str, Any]] = [record for record in every if not is_void(record)]
        self.void: list[dict[str, Any]] = [record for record in every if is_void(record)]
        self._repair_truncated_tail()

    def _repair_truncated_tail(self) -> None:
        if not self.path.exists():
            return
        text = read_utf8(self.path, what='results')
        if text and not text.endswith('\n'):
            self.keep_only(self.records)  # the void records are written back too

    def done(self) -> set[TrialKey]:
        """Trials already recorded."""
        return {trial_key(record) for record in self.records}

    def keep_only(self, records: list[dict[str, Any]]) -> None:
        """Replace the file's records that count with ``records``, keeping the void ones (atomically: the old file
        or the new one, never half)."""
        write_atomically(self.path, jsonl_text([*self.void, *records]))
        self.records = list(records)

    def append(self, record: dict[str, Any]) -> None:
        """Write one record and force it to disk before returning."""
        line = jsonl_text([record])
        with self.path.open('a', encoding='utf-8') as stream:
            stream.write(line)
            stream.flush()
            os.fsync(stream.fileno())
        (self.void if is_void(record) else self.records).append(record)
