"""Where a collection keeps its demonstrations: the raw layout's folders (protocol §8.2) and the attempts ledger.

``<out>/scene<N>/scene<N>_<label>/`` holds ``data/episode<k>.hdf5``, ``instructions/episode<k>.json``,
``seeds.json`` and ``complete.json``, plus ``video/episode<k>.mp4`` and ``bags/episode<k>/`` when asked for.
``<out>/attempts.jsonl`` records every attempt (accepted or not) once its files are complete; it is the collection's
single source of truth, so files of an attempt that a kill interrupted are simply written again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robofollow_ros.benchmark.types import Task
from robofollow_ros.evaluation.results import ResultsFile

LEDGER_NAME = 'attempts.jsonl'


@dataclass(frozen=True)
class EpisodePaths:
    """The files of accepted demonstration ``index`` of a label."""

    hdf5: Path
    instruction: Path
    video: Path
    bag: Path


def label_dir(out: Path, task: Task) -> Path:
    """The folder of a training label's demonstrations."""
    return out / f'scene{task.scene}' / f'scene{task.scene}_{task.task_id}'


def episode_paths(out: Path, task: Task, index: int) -> EpisodePaths:
    """Paths of accepted demonstration ``index`` (0, 1, ...) of ``task``."""
    folder = label_dir(out, task)
    return EpisodePaths(
        hdf5=folder / 'data' / f'episode{index}.hdf5',
        instruction=folder / 'instructions' / f'episode{index}.json',
        video=folder / 'video' / f'episode{index}.mp4',
        bag=folder / 'bags' / f'episode{index}',
    )


def write_json(path: Path, value: Any) -> None:
    """Write JSON atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + '.tmp')
    temporary.write_text(json.dumps(value, indent=2, sort_keys=True) + '\n', encoding='utf-8')
    os.replace(temporary, path)


def open_ledger(out: Path) -> ResultsFile:
    """The attempts ledger: one record per attempt, keyed by (label id, attempt number)."""
    return ResultsFile(out / LEDGER_NAME)


def accepted(records: Iterable[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    """Accepted attempts of ``label`` in episode order."""
    return sorted(
        (record for record in records if record['task_id'] == label and record.get('accepted')),
        key=lambda record: int(record['episode']),
    )
