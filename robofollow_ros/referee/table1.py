"""Report tables in the layout of the paper's Table 1 and a plot of IS / ES / CR from L0 to L3.

Rows are scenes, columns L0-L3 with IS / ES / CR each, as percentages with one decimal. The ``Mean`` row
is the unweighted mean of the rounded scene values, as on the project website, over the scenes that have
that level, rounded to one decimal too. Every figure has a confidence interval
(``robofollow_ros.statistics.cells.table_intervals``; methods in docs/statistics.md), in a second table.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robofollow_ros.benchmark.constants import LEVEL_ORDER
from robofollow_ros.referee.aggregate import GroupSummary
from robofollow_ros.statistics import DEFAULT_SEED
from robofollow_ros.statistics.cells import Intervals, methods_used

METRICS = ('IS', 'ES', 'CR')


@dataclass(frozen=True)
class Table:
    """Table 1: ``cells[row][level] = (IS, ES, CR)`` in percent; rows ``S1``..``S4`` then ``Mean``."""

    levels: tuple[str, ...]
    rows: tuple[str, ...]
    cells: dict[str, dict[str, tuple[float, float, float]]]


def _percent(value: float) -> float:
    return round(100.0 * value, 1)


def build_table(summaries: Sequence[GroupSummary]) -> Table:
    """Arrange scene × level summaries as Table 1 (levels other than L0-L3 are left out)."""
    cells: dict[str, dict[str, tuple[float, float, float]]] = {}
    for summary in summaries:
        if summary.level not in LEVEL_ORDER:
            continue
        cells.setdefault(f'S{summary.scene}', {})[summary.level] = (
            _percent(summary.mean_intent_score),
            _percent(summary.mean_exec_score),
            _percent(summary.completion_rate),
        )
    rows = tuple(sorted(cells))
    levels = tuple(level for level in LEVEL_ORDER if any(level in cells[row] for row in rows))
    mean: dict[str, tuple[float, float, float]] = {}
    for level in levels:
        values = [cells[row][level] for row in rows if level in cells[row]]
        intent, execution, completion = (round(sum(v[k] for v in values) / len(values), 1) for k in range(3))
        mean[level] = (intent, execution, completion)
    if rows:
        cells['Mean'] = mean
        rows = (*rows, 'Mean')
    return Table(levels=levels, rows=rows, cells=cells)


def _fmt(value: float) -> str:
    return f'{value:.1f}'


def to_markdown(table: Table) -> str:
    """The table as GitHub Markdown, ``IS / ES / CR`` per level."""
    header = '| Scene | ' + ' | '.join(f'{level} IS / ES / CR' for level in table.levels) + ' |'
    rule = '|---|' + '---|' * len(table.levels)
    lines = [header, rule]
    for row in table.rows:
        cells = []
        for level in table.levels:
            value = table.cells[row].get(level)
            cells.append(' / '.join(_fmt(v) for v in value) if value else '–')
        name = f'**{row}**' if row == 'Mean' else row
        lines.append(f'| {name} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines) + '\n'


def bounds_text(intervals: Intervals, row: str, level: str) -> str:
    """``4.0–23.1 / 4.0–23.1 / 1.1–28.3``: the IS / ES / CR interval of one cell in percent (``–`` without one)."""
    metrics = intervals.get(row, {}).get(level)
    if not metrics:
        return '–'
    return ' / '.join(
        '–' if math.isnan(metrics[m].low) else f'{100 * metrics[m].low:.1f}–{100 * metrics[m].high:.1f}'
        for m in METRICS
    )


def intervals_markdown(table: Table, intervals: Intervals, *, confidence: float, seed: int) -> str:
    """The intervals of every figure of ``table`` as a Markdown table, with the methods and the seed."""
    lines = [
        f'{100 * confidence:g} % confidence intervals (IS / ES / CR, %; methods: {"; ".join(methods_used(intervals))};'
        f' bootstrap seed {seed}; docs/statistics.md)',
        '',
        '| Scene | ' + ' | '.join(f'{level} IS / ES / CR' for level in table.levels) + ' |',
        '|---|' + '---|' * len(table.levels),
    ]
    for row in table.rows:
        name = f'**{row}**' if row == 'Mean' else row
        lines.append(f'| {name} | ' + ' | '.join(bounds_text(intervals, row, level) for level in table.levels) + ' |')
    return '\n'.join(lines) + '\n'


def to_csv(table: Table, intervals: Intervals | None = None) -> str:
    """The table as CSV: one column per level and metric (``L0_IS``...), then the interval bounds (``L0_IS_low``,
    ``L0_IS_high``..., percent) when given."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator='\n')
    header = ['scene', *(f'{level}_{metric}' for level in table.levels for metric in METRICS)]
    if intervals is not None:
        header += [
            f'{level}_{metric}_{bound}' for level in table.levels for metric in METRICS for bound in ('low', 'high')
        ]
    writer.writerow(header)
    for row in table.rows:
        values: list[Any] = []
        for level in table.levels:
            values += list(table.cells[row].get(level, ('', '', '')))
        if intervals is not None:
            for level in table.levels:
                metrics = intervals.get(row, {}).get(level)
                for metric in METRICS:
                    interval = metrics[metric] if metrics else None
                    if interval is None or math.isnan(interval.low):
                        values += ['', '']
                    else:
                        values += [round(100 * interval.low, 1), round(100 * interval.high, 1)]
        writer.writerow([row, *values])
    return out.getvalue()


def intervals_document(intervals: Intervals, *, confidence: float, seed: int) -> dict[str, Any]:
    """``{'confidence', 'seed', 'methods', 'cells': {row: {level: {metric: {estimate, low, high, method}}}}}``
    (fractions; ``null`` bounds where there is no interval)."""

    def clean(value: float) -> float | None:
        return None if math.isnan(value) else value

    return {
        'confidence': confidence,
        'seed': seed,
        'methods': methods_used(intervals),
        'cells': {
            row: {
                level: {
                    metric: {**interval.as_dict(), 'low': clean(interval.low), 'high': clean(interval.high)}
                    for metric, interval in metrics.items()
                }
                for level, metrics in levels.items()
            }
            for row, levels in intervals.items()
        },
    }


def to_json(
    table: Table, summaries: Sequence[GroupSummary], *, duplicates_skipped: int = 0, variant: str | None = None
) -> str:
    """The groups (fractions), the table (percent) and bookkeeping (variant, duplicates skipped) as JSON."""
    document = {
        'variant': variant,
        'groups': [summary.as_dict() for summary in summaries],
        'table': {
            row: {level: dict(zip(METRICS, value, strict=True)) for level, value in table.cells[row].items()}
            for row in table.rows
        },
        'mean_rule': 'unweighted mean of the rounded scene values over the scenes present at each level',
        'duplicates_skipped': duplicates_skipped,
    }
    return json.dumps(document, indent=2) + '\n'


METRIC_STYLES: dict[str, dict[str, str | int]] = {
    'IS': {'marker': 'o', 'linestyle': '-', 'markersize': 8},
    'ES': {'marker': 's', 'linestyle': '--', 'markersize': 6, 'markerfacecolor': 'none'},
    'CR': {'marker': '^', 'linestyle': ':', 'markersize': 6},
}
METRIC_OFFSETS: dict[str, float] = {'IS': -0.06, 'ES': 0.0, 'CR': 0.06}
"""Distinct marker, line and a small horizontal offset per metric, so that IS and ES stay visible when equal."""
Y_LIMITS = (-5.0, 108.0)


def figure_of(
    tables: dict[str, Table], *, title: str | None = None, intervals: Mapping[str, Intervals] | None = None
) -> Any:
    """A matplotlib figure: one panel per scene (and the mean); per policy and metric one styled line, with
    error bars for the policies that have ``intervals``."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    first = next(iter(tables.values()))
    rows = first.rows or ('Mean',)
    figure, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 3.4), sharey=True, squeeze=False)
    colours = plt.rcParams['axes.prop_cycle'].by_key()['color']
    for axis, row in zip(axes[0], rows, strict=True):
        for number, (name, table) in enumerate(tables.items()):
            levels = [level for level in table.levels if level in table.cells.get(row, {})]
            positions = [table.levels.index(level) for level in levels]
            for index, metric in enumerate(METRICS):
                style, offset = METRIC_STYLES[metric], METRIC_OFFSETS[metric]
                label = metric if len(tables) == 1 else f'{name} {metric}'
                colour = colours[(index if len(tables) == 1 else number) % len(colours)]
                xs = [position + offset for position in positions]
                ys = [table.cells[row][level][index] for level in levels]
                axis.plot(xs, ys, color=colour, label=label, **style)
                bars = (intervals or {}).get(name, {}).get(row, {})
                known = [(x, bars[level][metric]) for x, level in zip(xs, levels, strict=True) if level in bars]
                known = [(x, interval) for x, interval in known if not math.isnan(interval.low)]
                if known:
                    axis.errorbar(
                        [x for x, _ in known],
                        [100 * interval.estimate for _, interval in known],
                        yerr=[
                            [100 * (interval.estimate - interval.low) for _, interval in known],
                            [100 * (interval.high - interval.estimate) for _, interval in known],
                        ],
                        fmt='none',
                        ecolor=colour,
                        elinewidth=1.0,
                        capsize=2,
                        alpha=0.7,
                    )
        axis.set_xticks(range(len(first.levels)), first.levels)
        axis.set_xlim(-0.4, len(first.levels) - 0.6)
        axis.set_title(row)
        axis.set_ylim(*Y_LIMITS)
        axis.grid(alpha=0.3)
    axes[0][0].set_ylabel('%')
    axes[0][-1].legend(loc='center left', bbox_to_anchor=(1.02, 0.5), fontsize='small')
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return figure


def _save(figure: Any, path: str | Path) -> None:
    import matplotlib.pyplot as plt

    figure.savefig(path, dpi=100, bbox_inches='tight')
    plt.close(figure)


def plot(table: Table, path: str | Path, *, title: str | None = None, intervals: Intervals | None = None) -> None:
    """Write a PNG: one panel per scene (and the mean), IS / ES / CR against the level (with their intervals)."""
    _save(figure_of({'': table}, title=title, intervals={'': intervals} if intervals else None), path)


def plot_comparison(tables: dict[str, Table], path: str | Path, *, title: str | None = None) -> None:
    """Write a PNG comparing policies: one colour per policy, one marker and line style per metric."""
    _save(figure_of(tables, title=title), path)


@dataclass(frozen=True)
class Report:
    """A written report: the summaries, the table and where its files are."""

    summaries: list[GroupSummary]
    table: Table
    markdown: str
    out: Path
    duplicates_skipped: list[dict[str, Any]]
    variant: str | None = None
    intervals: Intervals | None = None


ISOLATION_LABELS: dict[str, str] = {
    'sandbox': 'sandboxed process',
    'process': 'own process, no sandbox',
    'trusted': 'in-process, trusted',
    'built-in': 'built-in, in-process',
}
"""How reports word each ``Isolation`` of a record (``policy.factory.Isolation``)."""


def run_title(about: Mapping[str, Any]) -> str:
    """``Policy expert (privileged: ground-truth access; built-in, in-process) · run 1a2b3c4d5e6f · variant
    published``: the policy, its privilege, isolation and network (``--policy-network``), the run and the scoring
    variant; a run on a real cell adds ``real cell aloha_ros2_control, object poses from tracker``."""
    parts = [f'Policy {about.get("policy") or "unknown"}']
    notes = []
    if about.get('privileged') is not None:
        notes.append('privileged: ground-truth access' if about['privileged'] else 'not privileged')
    if about.get('isolation'):
        notes.append(ISOLATION_LABELS.get(str(about['isolation']), str(about['isolation'])))
    if about.get('policy_network'):
        notes.append(f'network to {about["policy_network"]}')
    if notes:
        parts[0] += f' ({"; ".join(notes)})'
    if about.get('run_id'):
        parts.append(f'run {about["run_id"]}')
    if about.get('robot_profile'):
        runtime, source = about.get('runtime') or 'real', about.get('pose_source')
        parts.append(f'{runtime} cell {about["robot_profile"]}, object poses from {source}')
    if about.get('variant'):
        parts.append(f'variant {about["variant"]}')
    return ' · '.join(parts)


def write_report(
    records: Sequence[dict[str, Any]],
    out: str | Path,
    *,
    about: Mapping[str, Any] | None = None,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> Report:
    """Deduplicate ``records``, summarise them and write summary.md / .csv / .json / .png into ``out``.

    Args:
        records: result records of one run.
        out: output folder.
        about: the run the records come from (``policy``, ``privileged``, ``isolation``, ``run_id``); it titles the
            Markdown and the plot (with the records' variant) and is stored in summary.json.
        confidence: level of the intervals on every figure (e.g. 0.95).
        seed: seed of the bootstrap resamples.

    Raises:
        RoboFollowError: the records mix variants (nothing is written).
    """
    from robofollow_ros.referee.aggregate import deduplicate, single_variant, summarize
    from robofollow_ros.statistics.cells import table_intervals

    variant = single_variant(records)
    kept, skipped = deduplicate(records)
    summaries = summarize(kept)
    table = build_table(summaries)
    intervals = table_intervals(kept, confidence=confidence, seed=seed)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    title = run_title({**about, 'variant': variant}) if about else None
    markdown = (
        (f'{title}\n\n' if title else '')
        + to_markdown(table)
        + '\n'
        + intervals_markdown(table, intervals, confidence=confidence, seed=seed)
    )
    document = json.loads(to_json(table, summaries, duplicates_skipped=len(skipped), variant=variant))
    document['intervals'] = intervals_document(intervals, confidence=confidence, seed=seed)
    document['run'] = dict(about or {})
    (folder / 'summary.md').write_text(markdown, encoding='utf-8')
    (folder / 'summary.csv').write_text(to_csv(table, intervals), encoding='utf-8')
    (folder / 'summary.json').write_text(json.dumps(document, indent=2) + '\n', encoding='utf-8')
    plot(table, folder / 'summary.png', title=title, intervals=intervals)
    return Report(
        summaries=summaries,
        table=table,
        markdown=markdown,
        out=folder,
        duplicates_skipped=skipped,
        variant=variant,
        intervals=intervals,
    )
