"""Where a collection keeps its demonstrations: the raw layout's folders (protocol §8.2) and the attempts ledger.

``<out>/scene<N>/scene<N>_<label>/`` holds ``data/episode<k>.hdf5``, ``instructions/episode<k>.json``,
``seeds.json`` and ``complete.json``, plus ``video/episode<k>.mp4`` and ``bags/episode<k>/`` when asked for.
``<out>/attempts.jsonl`` records every attempt (accepted or not) once its files are complete; it is the collection's
single source of truth, so files of an attempt that a kill interrupted are simply written again.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robofollow_ros.benchmark.types import Task
from robofollow_ros.errors import DatasetError
from robofollow_ros.evaluation.results import ResultsFile
from robofollow_ros.textfiles import parse_json, read_utf8

LEDGER_NAME = 'attempts.jsonl'
_COUNTS = ('round', 'seed', 'episode', 'frames')


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


def _attempt_problem(record: Any) -> str | None:
    """What makes ``record`` something else than an attempt record written by ``run_collection`` (or ``None``)."""
    if not isinstance(record, dict):
        return f'a JSON {type(record).__name__}, not an object'
    if not isinstance(record.get('task_id'), str):
        return '"task_id" is not a label id'
    if not isinstance(record.get('accepted'), bool):
        return '"accepted" is not true or false'
    needed = ('round', 'seed', 'episode', 'instruction') if record['accepted'] else ('round', 'seed')
    missing = [name for name in needed if name not in record]
    if missing:
        return f'no "{missing[0]}"'
    for name, value in record.items():
        if isinstance(value, float) and not math.isfinite(value):
            return f'"{name}" is {value}'
        if name in _COUNTS and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63):
            return f'"{name}" is not a count'
        if name in ('instruction', 'reason') and not isinstance(value, str):
            return f'"{name}" is not text'
    return None


class Ledger(ResultsFile):
    """Append-only JSON Lines file of attempts, each forced to disk before ``append`` returns.

    A line cut short by a kill is dropped when the ledger is opened again (its attempt is simply redone). Unlike
    evaluation results, attempt records carry no scores, so they are read without the result-record checks.

    Raises:
        DatasetError: the file cannot be read, or a complete line is not an attempt record (nothing is changed).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: list[dict[str, Any]] = []
        if not path.exists():
            return
        lines = read_utf8(path, what='attempts ledger', error=DatasetError).split('\n')
        complete = [(number, line) for number, line in enumerate(lines[:-1], start=1) if line.strip()]
        for number, line in complete:
            where = f'{path}:{number}'
            record = parse_json(line, where=where, what='an attempt record', error=DatasetError)
            problem = _attempt_problem(record)
            if problem is not None:
                raise DatasetError(f'{where}: not an attempt record ({problem}); repair or remove that line')
            self.records.append(record)
        if lines[-1]:
            path.write_text(''.join(line + '\n' for _, line in complete), encoding='utf-8')


def open_ledger(out: Path) -> Ledger:
    """The attempts ledger of a collection: one record per attempt (``task_id`` = label, ``round`` = attempt)."""
    return Ledger(out / LEDGER_NAME)


def accepted(records: Iterable[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    """Accepted attempts of ``label`` in episode order."""
    return sorted(
        (record for record in records if record['task_id'] == label and record.get('accepted')),
        key=lambda record: int(record['episode']),
    )


@dataclass(frozen=True)
class StoredEpisode:
    """One accepted demonstration of a collection."""

    label: str
    index: int
    seed: int
    instruction: str
    hdf5: Path


def stored_episodes(out: Path) -> list[StoredEpisode]:
    """Accepted demonstrations of the collection in ``out``, label by label (collection order), episode order.

    Raises:
        DatasetError: ``out`` holds no collection.
    """
    from robofollow_ros.benchmark import registry
    from robofollow_ros.data.manifest import MANIFEST_NAME, read_manifest

    manifest = read_manifest(out)
    if manifest is None:
        raise DatasetError(f'{out} holds no demonstration collection (no {MANIFEST_NAME})')
    labels = manifest['options']['labels']
    records = open_ledger(out).records
    episodes: list[StoredEpisode] = []
    for label in labels:
        task = registry.get_task(label)
        for record in accepted(records, label):
            index = int(record['episode'])
            episodes.append(
                StoredEpisode(
                    label=label,
                    index=index,
                    seed=int(record['seed']),
                    instruction=str(record['instruction']),
                    hdf5=episode_paths(out, task, index).hdf5,
                )
            )
    return episodes
