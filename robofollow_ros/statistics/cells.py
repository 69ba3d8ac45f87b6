"""Result records grouped per scene × level and per task, and the confidence intervals of every report figure.

A group's IS and ES are means over its trials and its CR the task-macro completion rate (protocol §4.8),
exactly as ``robofollow_ros.referee.aggregate.summarize`` computes them; the ``Mean`` row is the unweighted
mean of the scene values at each level.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from robofollow_ros.benchmark.constants import LEVEL_ORDER
from robofollow_ros.statistics import DEFAULT_RESAMPLES, DEFAULT_SEED, row_rng
from robofollow_ros.statistics.intervals import (
    NO_SPREAD,
    SINGLE_TASK,
    STRATIFIED,
    Interval,
    bca_interval,
    check_confidence,
    group_statistic,
    jackknife,
    mean_intervals,
    mean_of_groups_jackknife,
    no_spread_bounds,
    rate_interval,
    resample_weights,
)

METRICS = ('IS', 'ES', 'CR')
FIELDS = ('intent_score', 'exec_score', 'completion_ok')
MACRO = np.array([False, False, True])
"""IS and ES average trials; CR averages tasks."""
MEAN_ROW = 'Mean'

Cell = tuple[int, str]
"""(scene, level)."""
Intervals = dict[str, dict[str, dict[str, Interval]]]
"""``intervals[row][level][metric]``; rows ``S1``..``S4`` and ``Mean``."""


@dataclass(frozen=True)
class TaskTable:
    """One scene × level group: per task (rows) and metric (columns) the sum and sum of squares of its trials."""

    task_ids: tuple[str, ...]
    sums: NDArray
    squares: NDArray
    counts: NDArray

    @property
    def trials(self) -> int:
        """Trials in the group."""
        return int(self.counts.sum())

    def estimate(self) -> NDArray:
        """IS, ES, CR of the group (fractions)."""
        return group_statistic(np.ones(len(self.task_ids)), self.sums, self.counts, MACRO)


def trial_values(record: Mapping[str, Any]) -> tuple[float, float, float]:
    """IS, ES and completion (0 or 1) of a record."""
    return float(record['intent_score']), float(record['exec_score']), float(bool(record['completion_ok']))


def row_name(scene: int) -> str:
    """``S1``... as in Table 1."""
    return f'S{scene}'


def task_tables(records: Sequence[Mapping[str, Any]]) -> dict[Cell, TaskTable]:
    """Group records per scene × level (levels L0-L3 only, as in Table 1) and per task, in table order."""
    grouped: dict[Cell, dict[str, list[tuple[float, float, float]]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        level = str(record['level_tag'])
        if level in LEVEL_ORDER:
            grouped[(int(record['scene']), level)][str(record['task_id'])].append(trial_values(record))
    tables = {}
    for cell in sorted(grouped, key=lambda key: (key[0], LEVEL_ORDER.index(key[1]))):
        tasks = grouped[cell]
        values = [np.asarray(tasks[task_id], dtype=float) for task_id in tasks]
        tables[cell] = TaskTable(
            task_ids=tuple(tasks),
            sums=np.array([v.sum(axis=0) for v in values]),
            squares=np.array([(v * v).sum(axis=0) for v in values]),
            counts=np.array([len(v) for v in values], dtype=float),
        )
    return tables


def cell_intervals(
    table: TaskTable, *, confidence: float, rng: np.random.Generator, resamples: int
) -> dict[str, Interval]:
    """IS and ES by one bootstrap over tasks, CR by Wilson (effective n when rounds share a task)."""
    scores = mean_intervals(
        table.sums[:, :2], table.counts, MACRO[:2], confidence=confidence, rng=rng, resamples=resamples
    )
    completion = rate_interval(table.sums[:, 2], table.counts, confidence=confidence)
    return dict(zip(METRICS, [*scores, completion], strict=True))


def stratified_mean(
    tables: Sequence[TaskTable], *, confidence: float, rng: np.random.Generator, resamples: int
) -> dict[str, Interval]:
    """Intervals of the unweighted mean over groups: each group's tasks are resampled on their own."""
    estimates = [table.estimate() for table in tables]
    estimate = np.mean(estimates, axis=0)
    replicates = np.zeros((resamples, len(METRICS)))
    for table in tables:
        weights = resample_weights(rng, len(table.task_ids), resamples)
        replicates += group_statistic(weights, table.sums, table.counts, MACRO)
    replicates /= len(tables)
    tasks = sum(len(table.task_ids) for table in tables)
    jackknifed = mean_of_groups_jackknife(estimates, [jackknife(table.sums, table.counts, MACRO) for table in tables])
    low, high = bca_interval(replicates, estimate, jackknifed, clusters=tasks, confidence=confidence)
    result = {}
    for column, metric in enumerate(METRICS):
        value = float(estimate[column])
        if tasks < 2:
            result[metric] = Interval(value, math.nan, math.nan, SINGLE_TASK)
        elif np.ptp(replicates[:, column]) == 0:
            low_value, high_value = no_spread_bounds(value, tasks=tasks, confidence=confidence)
            result[metric] = Interval(value, low_value, high_value, NO_SPREAD)
        else:
            result[metric] = Interval(value, float(low[column]), float(high[column]), STRATIFIED)
    return result


def table_intervals(
    records: Sequence[Mapping[str, Any]],
    *,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
) -> Intervals:
    """Intervals of every figure of Table 1: per scene × level and for the ``Mean`` row of each level."""
    check_confidence(confidence)
    tables = task_tables(records)
    intervals: Intervals = {}
    for (scene, level), table in tables.items():
        rng = row_rng(seed, f'cell/{row_name(scene)}/{level}')
        intervals.setdefault(row_name(scene), {})[level] = cell_intervals(
            table, confidence=confidence, rng=rng, resamples=resamples
        )
    if intervals:
        means = intervals.setdefault(MEAN_ROW, {})
        for level in LEVEL_ORDER:
            members = [table for (_, lvl), table in tables.items() if lvl == level]
            if members:
                means[level] = stratified_mean(
                    members, confidence=confidence, rng=row_rng(seed, f'level/{level}'), resamples=resamples
                )
    return intervals


def methods_used(intervals: Intervals) -> list[str]:
    """The distinct methods of ``intervals``, in order of first use."""
    seen: dict[str, None] = {}
    for levels in intervals.values():
        for metrics in levels.values():
            for interval in metrics.values():
                seen.setdefault(interval.method, None)
    return list(seen)
