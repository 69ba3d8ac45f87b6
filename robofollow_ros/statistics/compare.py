"""Two runs compared trial by trial: differences in IS / ES / CR with paired intervals, tests and verdicts.

Rows are the scene × level cells, each level (the unweighted mean over scenes, Table 1's ``Mean`` row) and
``All`` (per scene over every level, then the mean over scenes, as the mirage gap). The difference is A - B.
Its interval is a paired bootstrap over tasks (the same tasks drawn for both runs); its test an exact McNemar
test for completion when every task has one trial, otherwise a sign-flip permutation test over tasks. The
verdict of a cell is taken at the Holm-adjusted p-value over the cells (of one metric), of a level over the
levels, so that a table of many cells does not find differences by chance; ``All`` is one test on its own.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from robofollow_ros.benchmark.constants import LEVEL_ORDER
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.statistics import DEFAULT_PERMUTATIONS, DEFAULT_RESAMPLES, DEFAULT_SEED, row_rng
from robofollow_ros.statistics.cells import MACRO, METRICS, TaskTable, row_name, task_tables
from robofollow_ros.statistics.intervals import (
    BOOTSTRAP,
    Interval,
    bca_interval,
    check_confidence,
    group_statistic,
    jackknife,
    mean_of_groups_jackknife,
    no_spread_bounds,
    resample_weights,
)
from robofollow_ros.statistics.paired import (
    MCNEMAR,
    SIGN_FLIP,
    holm,
    mcnemar_exact,
    sign_flip_pvalues,
    sign_matrix,
    verdict,
)

ALL = 'All'
PAIR_BY = ('trial', 'task')
CELL, LEVEL, OVERALL = 'cell', 'level', 'all'
PAIRED_NO_SPREAD = 'no spread: Wilson bound on the share of tasks whose difference is unlike the rest'
Record = Mapping[str, Any]


@dataclass(frozen=True)
class Pairing:
    """Trials of run A matched with trials of run B, and what could not be matched."""

    a: list[Record]
    b: list[Record]
    unpaired_a: int
    unpaired_b: int
    by: str


def pair_trials(a: Sequence[Record], b: Sequence[Record], *, by: str = 'trial') -> Pairing:
    """Match trials of two runs.

    ``by='trial'`` pairs records with the same task, round and seed (two runs of one plan). ``by='task'``
    pairs the k-th round of a task in A with the k-th round of that task in B, in round order: two runs on
    different round sets (seeds), so the same tasks but independent layouts. A later duplicate of a trial
    is ignored, as by ``robofollow report``.
    """
    if by not in PAIR_BY:
        raise RoboFollowError(f'pairing must be one of {", ".join(PAIR_BY)}, not {by!r}')

    def key(record: Record) -> tuple[Any, ...]:
        return (str(record['task_id']), record.get('round'), record.get('seed'))

    def first(records: Sequence[Record]) -> dict[tuple[Any, ...], Record]:
        kept: dict[tuple[Any, ...], Record] = {}
        for record in records:
            kept.setdefault(key(record), record)
        return kept

    mine, theirs = first(a), first(b)
    if by == 'trial':
        shared = [k for k in mine if k in theirs]
        return Pairing(
            [mine[k] for k in shared],
            [theirs[k] for k in shared],
            len(mine) - len(shared),
            len(theirs) - len(shared),
            by,
        )
    rounds_a: dict[str, list[Record]] = defaultdict(list)
    rounds_b: dict[str, list[Record]] = defaultdict(list)
    for record in mine.values():
        rounds_a[str(record['task_id'])].append(record)
    for record in theirs.values():
        rounds_b[str(record['task_id'])].append(record)
    paired_a: list[Record] = []
    paired_b: list[Record] = []
    for task_id, own in rounds_a.items():
        other = sorted(rounds_b.get(task_id, []), key=lambda r: (r.get('round') or 0, r.get('seed') or 0))
        own = sorted(own, key=lambda r: (r.get('round') or 0, r.get('seed') or 0))
        count = min(len(own), len(other))
        paired_a += own[:count]
        paired_b += other[:count]
    return Pairing(paired_a, paired_b, len(mine) - len(paired_a), len(theirs) - len(paired_b), by)


IDENTITY_FIELDS = {
    'variant': 'variant',
    'robot': 'robot',
    'max_queries': 'max queries',
    'actions_per_query': 'executed rows per query',
}


def check_comparable(
    identity_a: Mapping[str, Any], identity_b: Mapping[str, Any], *, names: tuple[str, str] = ('A', 'B')
) -> None:
    """Refuse two runs whose variant, robot, max queries or executed rows per query differ.

    A field missing from one identity (results without their run folder) is not compared.

    Raises:
        RoboFollowError: naming every field that differs.
    """
    differ = [
        f'{label} {identity_a[key]!r} vs {identity_b[key]!r}'
        for key, label in IDENTITY_FIELDS.items()
        if identity_a.get(key) is not None and identity_b.get(key) is not None and identity_a[key] != identity_b[key]
    ]
    if differ:
        raise RoboFollowError(
            f'{names[0]} and {names[1]} are not comparable trial by trial ({"; ".join(differ)}): '
            'compare runs of one variant, robot and episode limits'
        )


def records_identity(records: Sequence[Record], *, name: str) -> dict[str, Any]:
    """The variant and robot all ``records`` share.

    Raises:
        RoboFollowError: the records mix variants or robots.
    """
    identity: dict[str, Any] = {}
    for key in ('variant', 'robot'):
        values = {record.get(key) for record in records} - {None}
        if len(values) > 1:
            raise RoboFollowError(f'{name} mixes {key}s ({", ".join(sorted(map(str, values)))}): compare single runs')
        identity[key] = values.pop() if values else None
    return identity


@dataclass(frozen=True)
class DiffRow:
    """One row of a comparison: per metric A's and B's value, the difference A - B and its test."""

    scope: str
    row: str
    level: str
    trials: int
    tasks: int
    a: dict[str, float]
    b: dict[str, float]
    difference: dict[str, Interval]
    p_value: dict[str, float]
    test: dict[str, str]
    p_adjusted: dict[str, float] = field(default_factory=dict)
    verdict: dict[str, str] = field(default_factory=dict)
    confidence: float = 0.95

    @property
    def label(self) -> str:
        """``S1 L0``, ``L0`` or ``All``."""
        return f'{self.row} {self.level}' if self.scope == CELL else self.level

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            'scope': self.scope,
            'row': self.row,
            'level': self.level,
            'trials': self.trials,
            'tasks': self.tasks,
            'metrics': {
                metric: {
                    'a': self.a[metric],
                    'b': self.b[metric],
                    'difference': self.difference[metric].as_dict(),
                    'test': self.test[metric],
                    'p_value': self.p_value[metric],
                    'p_adjusted': self.p_adjusted.get(metric, self.p_value[metric]),
                    'verdict': self.verdict.get(metric),
                }
                for metric in METRICS
            },
        }


@dataclass(frozen=True)
class Comparison:
    """Every row of a comparison and how it was made."""

    rows: list[DiffRow]
    pairing: Pairing
    confidence: float
    seed: int
    resamples: int
    permutations: int

    @property
    def alpha(self) -> float:
        """The level of the tests, ``1 - confidence``."""
        return 1.0 - self.confidence

    def scoped(self, scope: str) -> list[DiffRow]:
        """The rows of one scope (``cell``, ``level`` or ``all``)."""
        return [row for row in self.rows if row.scope == scope]


@dataclass(frozen=True)
class PairedGroup:
    """One group (cell, or scene over all levels) of paired trials: the same tasks and counts in A and B."""

    a: TaskTable
    b: TaskTable


def paired_groups(a: Sequence[Record], b: Sequence[Record], *, pool_levels: bool) -> dict[tuple[int, str], PairedGroup]:
    """Group paired records (``a[i]`` with ``b[i]``) per scene × level, or per scene with every level pooled."""

    def relabel(records: Sequence[Record], reference: Sequence[Record]) -> list[dict[str, Any]]:
        # Both sides take A's scene, level and task so that a pair always lands in the same group.
        return [
            {
                **record,
                'scene': ref['scene'],
                'level_tag': 'L0' if pool_levels else ref['level_tag'],
                'task_id': f'{ref["level_tag"]}/{ref["task_id"]}',
            }
            for record, ref in zip(records, reference, strict=True)
        ]

    tables_a = task_tables(relabel(a, a))
    tables_b = task_tables(relabel(b, a))
    return {cell: PairedGroup(tables_a[cell], tables_b[cell]) for cell in tables_a}


def _weighted_differences(group: PairedGroup) -> NDArray:
    """Per task and metric the task's contribution to the group's difference (so the column sums are it)."""
    counts = group.a.counts
    means_a = group.a.sums / counts[:, None]
    means_b = group.b.sums / counts[:, None]
    weights = np.where(MACRO, 1.0 / counts.size, (counts / counts.sum())[:, None])
    return weights * (means_a - means_b)


def paired_row(
    groups: Sequence[PairedGroup],
    *,
    scope: str,
    row: str,
    level: str,
    confidence: float,
    rng: np.random.Generator,
    resamples: int,
    permutations: int,
) -> DiffRow:
    """The difference of the unweighted mean over ``groups`` of A and B, with its interval and test."""
    value_a = np.mean([group.a.estimate() for group in groups], axis=0)
    value_b = np.mean([group.b.estimate() for group in groups], axis=0)
    replicates = np.zeros((resamples, len(METRICS)))
    for group in groups:
        weights = resample_weights(rng, len(group.a.task_ids), resamples)
        replicates += group_statistic(weights, group.a.sums, group.a.counts, MACRO)
        replicates -= group_statistic(weights, group.b.sums, group.b.counts, MACRO)
    replicates /= len(groups)
    tasks = sum(len(group.a.task_ids) for group in groups)
    jackknifed = mean_of_groups_jackknife(
        [group.a.estimate() - group.b.estimate() for group in groups],
        [
            jackknife(group.a.sums, group.a.counts, MACRO) - jackknife(group.b.sums, group.b.counts, MACRO)
            for group in groups
        ],
    )
    low, high = bca_interval(replicates, value_a - value_b, jackknifed, clusters=tasks, confidence=confidence)
    differences = np.concatenate([_weighted_differences(group) for group in groups]) / len(groups)
    signs, _ = sign_matrix(tasks, rng=rng, permutations=permutations)
    flip_p = sign_flip_pvalues(differences.T, rng=rng, permutations=permutations, signs=signs)
    single_round = len(groups) == 1 and bool(np.all(groups[0].a.counts == 1))
    p_values, tests = {}, {}
    for column, metric in enumerate(METRICS):
        if metric == 'CR' and single_round:
            done_a = groups[0].a.sums[:, column] > 0.5
            done_b = groups[0].b.sums[:, column] > 0.5
            p_values[metric] = float(mcnemar_exact((done_a & ~done_b).sum(), (done_b & ~done_a).sum()))
            tests[metric] = MCNEMAR
        else:
            p_values[metric] = float(flip_p[column])
            tests[metric] = SIGN_FLIP
    difference = value_a - value_b
    trials = sum(group.a.trials for group in groups)
    methods = [f'paired {BOOTSTRAP}'] * len(METRICS)
    for column in np.flatnonzero(np.ptp(replicates, axis=0) == 0).tolist():
        # Every task differs by the same amount (e.g. 100 vs 0, or identical runs): no percentile spread.
        low[column], high[column] = no_spread_bounds(
            float(difference[column]), tasks=tasks, confidence=confidence, lowest=-1.0, highest=1.0
        )
        methods[column] = PAIRED_NO_SPREAD
    return DiffRow(
        scope=scope,
        row=row,
        level=level,
        trials=trials,
        tasks=tasks,
        a={metric: float(value_a[i]) for i, metric in enumerate(METRICS)},
        b={metric: float(value_b[i]) for i, metric in enumerate(METRICS)},
        difference={
            metric: Interval(float(difference[i]), float(low[i]), float(high[i]), methods[i])
            for i, metric in enumerate(METRICS)
        },
        p_value=p_values,
        test=tests,
        confidence=confidence,
    )


def _judge(rows: list[DiffRow], *, alpha: float, adjust: bool) -> list[DiffRow]:
    """The rows with their (Holm-adjusted, with ``adjust``) p-values and verdicts, one family per metric."""
    adjusted = {
        metric: holm([row.p_value[metric] for row in rows]) if adjust else [row.p_value[metric] for row in rows]
        for metric in METRICS
    }
    judged = []
    for index, row in enumerate(rows):
        p_values = {metric: float(adjusted[metric][index]) for metric in METRICS}
        verdicts = {
            metric: verdict(row.difference[metric].estimate, p_values[metric], alpha=alpha) for metric in METRICS
        }
        judged.append(dataclasses.replace(row, p_adjusted=p_values, verdict=verdicts))
    return judged


def compare_records(
    a: Sequence[Record],
    b: Sequence[Record],
    *,
    by: str = 'trial',
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    permutations: int = DEFAULT_PERMUTATIONS,
    levels_only: bool = False,
) -> Comparison:
    """Pair the trials of runs A and B and compare them per cell, per level and overall.

    Args:
        a, b: result records of the two runs.
        by: ``trial`` (task, round and seed) or ``task`` (k-th round with k-th round; see ``pair_trials``).
        confidence: level of the intervals; the tests are at ``1 - confidence``.
        seed: seeds every bootstrap resample and random sign flip.
        resamples: bootstrap resamples per row.
        permutations: random sign flips per test (groups of more than 12 tasks).
        levels_only: leave out the per-cell rows (the mirage gap shows levels only).

    Raises:
        RoboFollowError: no trial of A has a partner in B.
    """
    check_confidence(confidence)
    pairing = pair_trials(a, b, by=by)
    if not pairing.a:
        raise RoboFollowError(
            'no trial of A has a partner in B'
            + (' (different rounds? pair them with --pair-by task)' if by == 'trial' else '')
        )
    make_row = functools.partial(paired_row, confidence=confidence, resamples=resamples, permutations=permutations)
    cells = paired_groups(pairing.a, pairing.b, pool_levels=False)
    cell_rows = []
    if not levels_only:
        cell_rows = [
            make_row(
                [group],
                scope=CELL,
                row=row_name(scene),
                level=level,
                rng=row_rng(seed, f'cell/{row_name(scene)}/{level}'),
            )
            for (scene, level), group in cells.items()
        ]
    level_rows = [
        make_row(
            [group for (_, lvl), group in cells.items() if lvl == level],
            scope=LEVEL,
            row='Mean',
            level=level,
            rng=row_rng(seed, f'level/{level}'),
        )
        for level in LEVEL_ORDER
        if any(lvl == level for _, lvl in cells)
    ]
    scenes = paired_groups(pairing.a, pairing.b, pool_levels=True)
    overall = make_row(
        list(scenes.values()),
        scope=OVERALL,
        row='Mean',
        level=ALL,
        rng=row_rng(seed, 'all'),
    )
    alpha = 1.0 - confidence
    rows = [
        *_judge(cell_rows, alpha=alpha, adjust=True),
        *_judge(level_rows, alpha=alpha, adjust=True),
        *_judge([overall], alpha=alpha, adjust=False),
    ]
    return Comparison(rows, pairing, confidence, seed, resamples, permutations)
