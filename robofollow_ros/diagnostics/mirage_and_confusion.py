"""Diagnostics in every report: the mirage gap against the language-blind baseline, and intent confusion.

``robofollow report`` calls ``write_diagnostics`` after Table 1. The baseline is either given (the
results of a ``blind`` run on the same trials) or run here once, in-process, on exactly the trials of the
report (``blind_baseline``; resumable, cached beside the report).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robofollow_ros.diagnostics.confusion import CATEGORIES, ConfusionTable, confusion_table
from robofollow_ros.diagnostics.mirage import GapRow, mirage_gap, mirage_markdown
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.statistics import DEFAULT_SEED

BASELINE_POLICY = 'blind'
BASELINE_DIR = 'blind-baseline'
MARKDOWN_NAME = 'diagnostics.md'
JSON_NAME = 'diagnostics.json'
PLOT_NAME = 'confusion.png'


def blind_baseline(records: Sequence[Mapping[str, Any]], *, out: Path, progress: bool = False) -> list[dict[str, Any]]:
    """Run the language-blind baseline in-process on the trials of ``records`` into ``out`` (resumable).

    Raises:
        RoboFollowError: the records do not name their trials (task, round) or mix variants or robots.
    """
    from robofollow_ros.benchmark.constants import DEFAULT_VARIANT
    from robofollow_ros.benchmark.parsing import parse_variant
    from robofollow_ros.evaluation.suite import SuiteOptions, run_suite
    from robofollow_ros.referee.aggregate import single_variant

    if any(record.get('round') is None for record in records):
        raise RoboFollowError('records without a round cannot be matched to baseline trials')
    robots = {record.get('robot') or 'primitive' for record in records}
    if len(robots) > 1:
        raise RoboFollowError(f'records of several robots ({", ".join(sorted(robots))})')
    rounds = sorted({int(record['round']) for record in records})
    task_ids = sorted({str(record['task_id']) for record in records})
    options = SuiteOptions(
        out=out,
        policy=BASELINE_POLICY,
        task_ids=task_ids,
        first_round=rounds[0],
        rounds=rounds[-1] - rounds[0] + 1,
        variant=parse_variant(single_variant(records) or DEFAULT_VARIANT),
        robot=robots.pop(),
    )
    return run_suite(options, progress=progress)


def confusion_markdown(table: ConfusionTable) -> str:
    """The confusion table with the most frequent 'what instead of what' of each group."""
    lines = [
        'Intent confusion: what the policy went for in trials whose Intent is not full',
        '',
        table.markdown().rstrip('\n'),
        '',
    ]
    for (scene, level), details in table.top_details().items():
        listed = '; '.join(f'{detail} ({count})' for detail, count in details)
        lines.append(f'- S{scene} {level}: {listed}')
    return '\n'.join(lines) + '\n'


def plot_confusion(table: ConfusionTable, path: Path, *, title: str) -> None:
    """Stacked bars: per scene and level, the share of trials in each confusion category."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    groups = table.groups()
    used = [c for c in CATEGORIES if any(table.counts.get(g, Counter()).get(c) for g in groups)]
    figure, axes = plt.subplots(figsize=(max(6.0, 0.55 * len(groups) + 3.0), 4.2), constrained_layout=True)
    bottoms = [0.0] * len(groups)
    colours = plt.get_cmap('tab20')
    labels = [f'S{scene}\n{level}' for scene, level in groups]
    for index, category in enumerate(used):
        shares = [100.0 * table.counts.get(g, Counter()).get(category, 0) / table.trials[g] for g in groups]
        axes.bar(labels, shares, bottom=bottoms, label=category, color=colours(index % 20), edgecolor='white')
        bottoms = [b + s for b, s in zip(bottoms, shares, strict=True)]
    axes.set_ylim(0, 105)
    axes.set_ylabel('% of all trials')
    axes.set_title(title, fontsize=10)
    if used:
        axes.legend(fontsize=7, loc='upper left', bbox_to_anchor=(1.0, 1.0), frameon=False)
    figure.savefig(path, dpi=110)
    plt.close(figure)


@dataclass(frozen=True)
class Diagnostics:
    """What ``write_diagnostics`` wrote: the Markdown, the gap rows (if a baseline was given) and the table."""

    markdown: str
    gap: list[GapRow] | None
    confusion: ConfusionTable


def write_diagnostics(
    records: Sequence[Mapping[str, Any]],
    out: Path,
    *,
    policy: str,
    baseline: Sequence[Mapping[str, Any]] | None,
    baseline_note: str | None = None,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> Diagnostics:
    """Write diagnostics.md, diagnostics.json and confusion.png into ``out``.

    Args:
        records: the run's result records.
        out: the report folder.
        policy: the policy's name, for headings.
        baseline: the language-blind baseline's records on the same trials, or ``None`` for no gap table.
        baseline_note: why there is no gap table (shown instead of it).
        confidence: level of the gap's paired intervals (its tests are at ``1 - confidence``).
        seed: seed of their resampling.
    """
    out.mkdir(parents=True, exist_ok=True)
    sections = []
    gap = None
    if baseline is not None:
        gap = mirage_gap(records, baseline, confidence=confidence, seed=seed)
        sections.append(mirage_markdown(gap, policy=policy, baseline=BASELINE_POLICY))
    elif baseline_note:
        sections.append(f'Mirage gap: {baseline_note}\n')
    table = confusion_table(records)
    sections.append(confusion_markdown(table))
    markdown = '\n'.join(sections)
    (out / MARKDOWN_NAME).write_text(markdown, encoding='utf-8')
    plot_confusion(
        table,
        out / PLOT_NAME,
        title=f'Intent confusion of {policy}\n(trials whose Intent is not full, by what was chosen)',
    )
    document = {
        'policy': policy,
        'baseline': BASELINE_POLICY if baseline is not None else None,
        'mirage_gap': [
            {
                'level': row.level,
                'trials': row.trials,
                'policy': vars(row.policy),
                'baseline': vars(row.baseline),
                'gap': vars(row.gap),
                'paired': row.paired.as_dict() if row.paired is not None else None,
            }
            for row in gap or []
        ],
        'confusion': table.rows(),
    }
    (out / JSON_NAME).write_text(json.dumps(document, indent=2) + '\n', encoding='utf-8')
    return Diagnostics(markdown=markdown, gap=gap, confusion=table)
