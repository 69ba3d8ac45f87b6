"""Aggregation of result records per scene × level (protocol §4.8) and reading results files."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from robofollow_ros.benchmark.constants import LEVEL_ORDER
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.textfiles import read_utf8

REQUIRED = ('task_id', 'scene', 'level_tag', 'intent_score', 'exec_score', 'intent_ok', 'exec_ok', 'completion_ok')
VOID_FIELD = 'void'
"""A record with ``void: true`` is a trial the operator of a real cell voided (reset failed, robot fault) or that
was stopped: kept in the results file for the record, played again, and counted by nothing."""


def is_void(record: Mapping[str, Any]) -> bool:
    """Whether ``record`` is a voided trial (``VOID_FIELD``)."""
    return record.get(VOID_FIELD) is True


@dataclass(frozen=True)
class GroupSummary:
    """Summary of one scene × level group (``summary.json`` entry of the published evaluator).

    Rates and means are fractions (0-1): ``completion_rate`` is the task-macro Completion Rate (mean over
    tasks of each task's success fraction), ``episode_micro_completion_rate`` the plain episode fraction.
    """

    scene: int
    level: str
    episodes: int
    task_count: int
    mean_intent_score: float
    mean_exec_score: float
    intent_full_rate: float
    exec_full_rate: float
    completion_rate: float
    episode_micro_completion_rate: float

    @property
    def group(self) -> str:
        """``sceneN/Lk``."""
        return f'scene{self.scene}/{self.level}'

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form with the group name."""
        return {'group': self.group, **asdict(self)}


def _check(record: Any, where: str) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise RoboFollowError(f'{where}: a result record must be a JSON object')
    missing = [key for key in REQUIRED if key not in record]
    if missing:
        raise RoboFollowError(f'{where}: result record lacks {", ".join(missing)}')
    return record


def read_result_records(path: str | Path, *, void: bool = False) -> list[dict[str, Any]]:
    """Records of a results file: a JSON array, a single JSON object, or JSON Lines; voided trials (``is_void``)
    only with ``void``, so that no summary, report or comparison counts them.

    In JSON Lines, a last line cut short without its newline (a run killed while writing) is skipped with
    a warning, so that every record written before it is kept.

    Raises:
        RoboFollowError: unreadable file, invalid JSON, or a record without the fields a summary needs.
    """
    path = Path(path)
    text = read_utf8(path, what='results', error=RoboFollowError)
    stripped = text.strip()
    if not stripped:
        return []
    if stripped[0] == '[':
        try:
            items = json.loads(stripped)
        except json.JSONDecodeError as error:
            raise RoboFollowError(f'{path}: not a valid JSON array ({error.msg} at line {error.lineno})') from error
        except RecursionError:
            raise RoboFollowError(f'{path}: not result records (JSON nested too deeply to read)') from None
        checked = [_check(item, f'{path}[{i}]') for i, item in enumerate(items)]
        return [record for record in checked if void or not is_void(record)]
    records = []
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            if number == len(lines) and not text.endswith('\n'):
                print(f'warning: {path}:{number}: ignoring a last record cut short (crashed run?)', file=sys.stderr)
                break
            raise RoboFollowError(f'{path}:{number}: not a JSON record ({error.msg})') from error
        except RecursionError:
            raise RoboFollowError(f'{path}:{number}: not a result record (JSON nested too deeply to read)') from None
        records.append(_check(record, f'{path}:{number}'))
    return [record for record in records if void or not is_void(record)]


def trial_identity(record: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two records the same trial: task, variant, round and seed."""
    return (record['task_id'], record.get('variant'), record.get('round'), record.get('seed'))


def single_variant(records: Iterable[Mapping[str, Any]]) -> str | None:
    """The one variant of ``records`` (``None`` if they name none).

    Raises:
        RoboFollowError: the records mix variants; their numbers cannot share one table.
    """
    counts: dict[str, int] = defaultdict(int)
    for record in records:
        counts[str(record.get('variant'))] += 1
    if len(counts) > 1:
        mixed = ', '.join(f'{count} {name}' for name, count in sorted(counts.items()))
        raise RoboFollowError(f'records of different variants ({mixed}) cannot share one table; report each apart')
    variant = next(iter(counts), None)
    return None if variant in (None, 'None') else variant


def deduplicate(records: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Keep the first record of each trial; return (kept, skipped duplicates)."""
    seen: set[tuple[Any, ...]] = set()
    kept: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for record in records:
        key = trial_identity(record)
        (skipped if key in seen else kept).append(record)
        seen.add(key)
    return kept, skipped


def _level_key(level: str) -> tuple[int, str]:
    return (LEVEL_ORDER.index(level), level) if level in LEVEL_ORDER else (len(LEVEL_ORDER), level)


def summarize(records: Sequence[dict[str, Any]]) -> list[GroupSummary]:
    """Per scene × level summaries, ordered by scene then level (L0-L3 first)."""
    groups: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[(int(record['scene']), str(record['level_tag']))].append(record)
    summaries = []
    for (scene, level), members in sorted(groups.items(), key=lambda item: (item[0][0], _level_key(item[0][1]))):
        n = len(members)
        by_task: dict[str, list[bool]] = defaultdict(list)
        for record in members:
            by_task[record['task_id']].append(bool(record['completion_ok']))
        summaries.append(
            GroupSummary(
                scene=scene,
                level=level,
                episodes=n,
                task_count=len(by_task),
                mean_intent_score=sum(float(r['intent_score']) for r in members) / n,
                mean_exec_score=sum(float(r['exec_score']) for r in members) / n,
                intent_full_rate=sum(bool(r['intent_ok']) for r in members) / n,
                exec_full_rate=sum(bool(r['exec_ok']) for r in members) / n,
                completion_rate=sum(sum(v) / len(v) for v in by_task.values()) / len(by_task),
                episode_micro_completion_rate=sum(bool(r['completion_ok']) for r in members) / n,
            )
        )
    return summaries
