"""A resumable results file: one JSON result record per line, flushed to disk after every trial."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from robofollow_ros.referee.aggregate import read_result_records
from robofollow_ros.textfiles import read_utf8, write_atomically

TrialKey = tuple[str, int]


def trial_key(record: dict[str, Any]) -> TrialKey:
    """The (task id, round) pair that identifies a trial."""
    return str(record['task_id']), int(record.get('round', 0))


class ResultsFile:
    """Appends result records to ``path`` and knows which trials are already done."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.records: list[dict[str, Any]] = read_result_records(self.path) if self.path.exists() else []
        self._repair_truncated_tail()

    def _repair_truncated_tail(self) -> None:
        if not self.path.exists():
            return
        text = read_utf8(self.path, what='results')
        if text and not text.endswith('\n'):
            kept = ''.join(json.dumps(record, sort_keys=True) + '\n' for record in self.records)
            write_atomically(self.path, kept)

    def done(self) -> set[TrialKey]:
        """Trials already recorded."""
        return {trial_key(record) for record in self.records}

    def append(self, record: dict[str, Any]) -> None:
        """Write one record and force it to disk before returning."""
        line = json.dumps(record, sort_keys=True, allow_nan=False) + '\n'
        with self.path.open('a', encoding='utf-8') as stream:
            stream.write(line)
            stream.flush()
            os.fsync(stream.fileno())
        self.records.append(record)
