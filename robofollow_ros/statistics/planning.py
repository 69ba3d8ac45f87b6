"""Rounds needed: how many rounds per task would bring each interval's half-width below a target.

The variance of a group's mean over ``T`` tasks with ``m`` rounds each is ``between / T + within / (T m)``:
rounds shrink only the within-task part. With several rounds observed, the two parts are estimated by a
one-way analysis of variance; with one round they cannot be told apart and all of the variance is taken as
within-task, so the answer is the fewest rounds that could do (a lower bound). A group with no spread at
all gets the variance of a rate shrunk towards one half (Agresti-Coull: two successes and two failures
added), so that 16 perfect trials do not claim that one round suffices.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from robofollow_ros.benchmark.constants import LEVEL_ORDER
from robofollow_ros.statistics.cells import MEAN_ROW, METRICS, TaskTable, row_name, task_tables
from robofollow_ros.statistics.intervals import z_value


@dataclass(frozen=True)
class Components:
    """Variance of one metric of a group: between tasks and within a task, and its number of tasks."""

    between: float
    within: float
    tasks: int
    rounds_observed: float

    def half_width(self, rounds: float, z: float) -> float:
        """Normal-approximation half-width of the group's interval with ``rounds`` rounds per task."""
        return z * math.sqrt(self.between / self.tasks + self.within / (self.tasks * rounds))


def variance_components(table: TaskTable, column: int) -> Components:
    """Between- and within-task variance of one metric of a group (one-way ANOVA, method of moments)."""
    counts = table.counts
    tasks = counts.size
    trials = counts.sum()
    means = table.sums[:, column] / counts
    grand = table.sums[:, column].sum() / trials
    total = (table.squares[:, column].sum() - trials * grand * grand) / max(trials - 1, 1)
    rounds = float(trials / tasks)
    if total <= 1e-12:
        shrunk = (grand * trials + 2.0) / (trials + 4.0)
        return Components(0.0, shrunk * (1.0 - shrunk), tasks, rounds)
    if np.all(counts == 1) or tasks < 2:
        return Components(0.0, float(total), tasks, rounds)
    within = float((table.squares[:, column] - counts * means * means).sum() / (trials - tasks))
    spread = float(((means - grand) ** 2).sum() / (tasks - 1))
    between = max(0.0, spread - within / rounds)
    return Components(between, within, tasks, rounds)


def rounds_for(components: Sequence[Components], *, half_width: float, z: float) -> int | None:
    """Fewest rounds per task for the unweighted mean of these groups to reach ``half_width``; ``None`` if
    more rounds cannot (the between-task part alone is wider: more tasks are needed)."""
    count = len(components)
    target = (half_width / z) ** 2 * count * count
    between = sum(c.between / c.tasks for c in components)
    within = sum(c.within / c.tasks for c in components)
    if target <= between:
        return None
    return max(1, math.ceil(within / (target - between) - 1e-9))


@dataclass(frozen=True)
class RoundsPlan:
    """Rounds per task needed per row (``S1``.. and ``Mean``), level and metric, for a target half-width."""

    half_width: float
    confidence: float
    rounds: dict[str, dict[str, dict[str, int | None]]]
    rounds_observed: float


def plan_rounds(records: Sequence[Mapping[str, Any]], *, half_width: float, confidence: float = 0.95) -> RoundsPlan:
    """Rounds per task that would bring every interval of Table 1 below ``half_width`` (a fraction, e.g. 0.05)."""
    if not 0.0 < half_width < 1.0:
        raise ValueError(f'the half-width must lie between 0 and 1 (a fraction), got {half_width}')
    z = z_value(confidence)
    tables = task_tables(records)
    components = {
        cell: [variance_components(table, column) for column in range(len(METRICS))] for cell, table in tables.items()
    }
    rounds: dict[str, dict[str, dict[str, int | None]]] = {}
    for (scene, level), parts in components.items():
        rounds.setdefault(row_name(scene), {})[level] = {
            metric: rounds_for([parts[i]], half_width=half_width, z=z) for i, metric in enumerate(METRICS)
        }
    for level in LEVEL_ORDER:
        members = [parts for (_, lvl), parts in components.items() if lvl == level]
        if members:
            rounds.setdefault(MEAN_ROW, {})[level] = {
                metric: rounds_for([parts[i] for parts in members], half_width=half_width, z=z)
                for i, metric in enumerate(METRICS)
            }
    observed = float(np.mean([t.counts.mean() for t in tables.values()])) if tables else 0.0
    return RoundsPlan(half_width, confidence, rounds, observed)


def plan_markdown(plan: RoundsPlan, levels: Sequence[str]) -> str:
    """The plan as a Markdown table: rounds per task for IS / ES / CR; ``tasks`` where rounds cannot do."""

    def show(value: int | None) -> str:
        return 'more tasks' if value is None else str(value)

    lines = [
        f'Rounds per task needed for every {100 * plan.confidence:g} % interval to be at most '
        f"±{100 * plan.half_width:g} points (IS / ES / CR; from this run's variance, "
        f'{plan.rounds_observed:g} round(s) observed'
        + ('; with one round this is a lower bound' if plan.rounds_observed <= 1 else '')
        + ')',
        '',
        '| Scene | ' + ' | '.join(f'{level} IS / ES / CR' for level in levels) + ' |',
        '|---|' + '---|' * len(levels),
    ]
    for row, by_level in plan.rounds.items():
        cells = [
            ' / '.join(show(by_level[level][m]) for m in METRICS) if level in by_level else '–' for level in levels
        ]
        name = f'**{row}**' if row == MEAN_ROW else row
        lines.append(f'| {name} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines) + '\n'
