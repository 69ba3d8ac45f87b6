"""Aggregation of result records per scene × level (protocol §4.8) and reading results files."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from robofollow_ros.benchmark.constants import LEVEL_ORDER, SCENES
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.textfiles import parse_json, read_utf8, shown

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


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _fraction(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


FIELDS: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ('task_id', _text, 'a task id'),
    ('scene', lambda value: _integer(value) and value in SCENES, f'one of the scenes {", ".join(map(str, SCENES))}'),
    ('level_tag', lambda value: value in LEVEL_ORDER, f'one of the levels {", ".join(LEVEL_ORDER)}'),
    ('intent_score', _fraction, 'a number from 0 to 1'),
    ('exec_score', _fraction, 'a number from 0 to 1'),
    ('intent_ok', lambda value: isinstance(value, bool), 'true or false'),
    ('exec_ok', lambda value: isinstance(value, bool), 'true or false'),
    ('completion_ok', lambda value: isinstance(value, bool), 'true or false'),
    ('round', lambda value: value is None or _integer(value), 'an integer or null'),
    ('seed', lambda value: value is None or _integer(value), 'an integer or null'),
    ('variant', lambda value: value is None or _text(value), 'a variant name or null'),
    (VOID_FIELD, lambda value: isinstance(value, bool), 'true or false'),
)
"""The fields a summary, a comparison or a resumed run reads, what each must be (optional from ``round`` on)."""


def _check(record: Any, where: str) -> dict[str, Any]:
    """``record`` if it is a result record a summary can count.

    Raises:
        RoboFollowError: not an object, a field of ``REQUIRED`` missing, or a field of ``FIELDS`` that no referee
            writes (an Intent of 5, NaN, ``null`` for a boolean, text for a number); one line naming ``where``.
    """
    if not isinstance(record, dict):
        raise RoboFollowError(f'{where}: a result record must be a JSON object')
    missing = [key for key in REQUIRED if key not in record]
    if missing:
        raise RoboFollowError(f'{where}: result record lacks {", ".join(missing)}')
    for key, valid, expected in FIELDS:
        if key in record and not valid(record[key]):
            raise RoboFollowError(f'{where}: "{key}" must be {expected}, got {shown(record[key])}')
    return record


def read_result_records(path: str | Path, *, void: bool = False, drop_cut_tail: bool = False) -> list[dict[str, Any]]:
    """Records of a results file: a JSON array, a single JSON object, or JSON Lines; voided trials (``is_void``)
    only with ``void``, so that no summary, report or comparison counts them.

    In JSON Lines, a last line cut short without its newline (a run killed while writing it) is refused, naming
    the ways on; with ``drop_cut_tail`` (a run resuming, which then writes the file again without it and plays
    that trial again) it is dropped with a warning on stderr.

    Raises:
        RoboFollowError: unreadable file, invalid JSON, a record without the fields a summary needs or with a value
            no referee writes (``FIELDS``), or a last line cut short; one line naming the file, line and field.
    """
    path = Path(path)
    text = read_utf8(path, what='results', error=RoboFollowError)
    stripped = text.strip()
    if not stripped:
        return []
    if stripped[0] == '[':
        items = parse_json(stripped, where=str(path), what='result records')
        checked = [_check(item, f'{path}[{i}]') for i, item in enumerate(items)]
        return [record for record in checked if void or not is_void(record)]
    records = []
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if number == len(lines) and not text.endswith('\n') and _cut_short(line):
            if not drop_cut_tail:
                raise RoboFollowError(
                    f'{path}:{number}: the last record is cut short (a run killed while writing it?); resume the run '
                    '(robofollow eval, same --out) to play that trial again, or delete the line to go without it'
                )
            print(
                f'warning: {path}:{number}: the last record was cut short (a run killed while writing it?); '
                'dropped, and its trial is played again',
                file=sys.stderr,
            )
            break
        record = parse_json(line, where=f'{path}:{number}', what='a result record')
        records.append(_check(record, f'{path}:{number}'))
    return [record for record in records if void or not is_void(record)]


def _cut_short(line: str) -> bool:
    """Whether ``line`` ends before its JSON value does (the last line of a run killed while writing it)."""
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return True
    except (RecursionError, ValueError):
        return False
    return False


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
