"""The mirage gap: a policy's IS / ES / CR next to the language-blind baseline on the same trials.

A policy that scores well but barely above a baseline that ignores the instruction is not following
instructions; it is executing the most likely task of the scene. The gap per level makes that visible.
Since both runs play the same trials, the gap gets the paired treatment of ``robofollow compare``: a
paired-bootstrap interval and a paired test per level (Holm-adjusted over the levels) and overall.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from robofollow_ros.referee.aggregate import GroupSummary, summarize
from robofollow_ros.statistics import DEFAULT_SEED
from robofollow_ros.statistics.cells import METRICS
from robofollow_ros.statistics.compare import ALL, DiffRow, compare_records
from robofollow_ros.statistics.paired import A_BETTER, B_BETTER

TrialId = tuple[str, Any, Any]
ALL_LEVELS = 'all'


def trial_id(record: Mapping[str, Any]) -> TrialId:
    """What makes two records the same trial for the comparison: task, round and seed."""
    return str(record['task_id']), record.get('round'), record.get('seed')


@dataclass(frozen=True)
class Scores:
    """Mean over scenes of IS, ES and CR (fractions), as the paper's Mean row."""

    intent: float
    exec: float
    completion: float


@dataclass(frozen=True)
class GapRow:
    """One level: trials compared, the policy's and the baseline's scores, and policy minus baseline."""

    level: str
    trials: int
    policy: Scores
    baseline: Scores
    paired: DiffRow | None = None
    """The gap's interval, test and verdict (``None`` when the level's trials are outside Table 1's L0-L3)."""

    @property
    def gap(self) -> Scores:
        """Policy minus baseline."""
        return Scores(
            self.policy.intent - self.baseline.intent,
            self.policy.exec - self.baseline.exec,
            self.policy.completion - self.baseline.completion,
        )


def _mean_over_scenes(summaries: Sequence[GroupSummary]) -> Scores:
    n = len(summaries)
    return Scores(
        sum(s.mean_intent_score for s in summaries) / n,
        sum(s.mean_exec_score for s in summaries) / n,
        sum(s.completion_rate for s in summaries) / n,
    )


def common_trials(
    policy: Iterable[Mapping[str, Any]], baseline: Iterable[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The records of both runs restricted to the trials both have (first record of a trial wins)."""
    mine: dict[TrialId, dict[str, Any]] = {}
    for record in policy:
        mine.setdefault(trial_id(record), dict(record))
    theirs: dict[TrialId, dict[str, Any]] = {}
    for record in baseline:
        theirs.setdefault(trial_id(record), dict(record))
    shared = [key for key in mine if key in theirs]
    return [mine[key] for key in shared], [theirs[key] for key in shared]


def mirage_gap(
    policy: Iterable[Mapping[str, Any]],
    baseline: Iterable[Mapping[str, Any]],
    *,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> list[GapRow]:
    """Per level (then ``all``), scores of both runs over their common trials, the gap and its interval and test."""
    mine, theirs = common_trials(policy, baseline)
    levels = sorted({str(r['level_tag']) for r in mine})
    paired: dict[str, DiffRow] = {}
    if mine:
        comparison = compare_records(mine, theirs, confidence=confidence, seed=seed, levels_only=True)
        paired = {ALL_LEVELS if row.level == ALL else row.level: row for row in comparison.rows}
    rows = []
    for level in [*levels, ALL_LEVELS]:
        selected = [i for i, r in enumerate(mine) if level == ALL_LEVELS or str(r['level_tag']) == level]
        ours = summarize([{**mine[i], 'level_tag': level} for i in selected])
        base = summarize([{**theirs[i], 'level_tag': level} for i in selected])
        rows.append(GapRow(level, len(selected), _mean_over_scenes(ours), _mean_over_scenes(base), paired.get(level)))
    return rows


def gap_interval_triple(row: GapRow) -> str:
    """``[lo, hi] / [lo, hi] / [lo, hi]``: the gap's interval of IS / ES / CR in points (``–`` without one)."""
    if row.paired is None:
        return '–'
    return ' / '.join(
        f'[{100 * row.paired.difference[m].low:+.1f}, {100 * row.paired.difference[m].high:+.1f}]' for m in METRICS
    )


def gap_verdict_triple(row: GapRow, *, policy: str, baseline: str) -> str:
    """``policy / baseline / –`` per metric: which side the paired test finds better, if any."""
    if row.paired is None:
        return '–'
    names = {A_BETTER: policy, B_BETTER: baseline}
    return ' / '.join(names.get(row.paired.verdict[m], '–') for m in METRICS)


def percent_triple(scores: Scores, *, signed: bool = False) -> str:
    """``IS / ES / CR`` in percent with one decimal (``+`` signs for a gap)."""
    sign = '+' if signed else ''
    return ' / '.join(f'{100 * v:{sign}.1f}' for v in (scores.intent, scores.exec, scores.completion))


def mirage_markdown(rows: Sequence[GapRow], *, policy: str, baseline: str) -> str:
    """The gap table as Markdown (IS / ES / CR in percent, mean over scenes)."""
    lines = [
        f'Mirage gap: `{policy}` against the language-blind `{baseline}` on the same trials '
        '(IS / ES / CR in %, mean over scenes)',
        '',
        f'| Level | Trials | {policy} | {baseline} | Gap | {confidence_label(rows)} CI of the gap | Better |',
        '|---|---|---|---|---|---|---|',
    ]
    for row in rows:
        level = '**All**' if row.level == ALL_LEVELS else row.level
        lines.append(
            f'| {level} | {row.trials} | {percent_triple(row.policy)} | {percent_triple(row.baseline)} | '
            f'{percent_triple(row.gap, signed=True)} | {gap_interval_triple(row)} | '
            f'{gap_verdict_triple(row, policy=policy, baseline=baseline)} |'
        )
    lines += [
        '',
        f'CI: paired bootstrap over tasks; Better: `{policy}` or `{baseline}` where a paired test (exact McNemar or '
        'sign flips, Holm-adjusted over the levels) finds a difference, – where it finds none at this size '
        '(docs/statistics.md).',
    ]
    return '\n'.join(lines) + '\n'


def confidence_label(rows: Sequence[GapRow]) -> str:
    """``95 %`` (the level of the rows' intervals)."""
    levels = {row.paired.confidence for row in rows if row.paired is not None}
    return f'{100 * levels.pop():g} %' if len(levels) == 1 else ''
