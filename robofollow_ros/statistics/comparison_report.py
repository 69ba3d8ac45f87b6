"""A comparison written out: comparison.md / .csv / .json / .png and, on request, index.html."""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robofollow_ros.benchmark.constants import LEVEL_ORDER
from robofollow_ros.statistics.cells import METRICS
from robofollow_ros.statistics.compare import ALL, CELL, LEVEL, OVERALL, Comparison, DiffRow
from robofollow_ros.statistics.intervals import Interval
from robofollow_ros.statistics.paired import A_BETTER, B_BETTER

NAMES = {'md': 'comparison.md', 'csv': 'comparison.csv', 'json': 'comparison.json', 'png': 'comparison.png'}
PAGE_NAME = 'index.html'
SHORT = {A_BETTER: 'A', B_BETTER: 'B'}


def signed(interval: Interval) -> str:
    """``+12.3 [+5.0, +19.6]`` in points."""
    return f'{100 * interval.estimate:+.1f} [{100 * interval.low:+.1f}, {100 * interval.high:+.1f}]'


def short_verdict(row: DiffRow, metric: str) -> str:
    """``A``, ``B`` or ``–`` (no detectable difference)."""
    return SHORT.get(row.verdict[metric], '–')


def headline(comparison: Comparison, names: Mapping[str, str]) -> list[str]:
    """The lines saying what was compared with what, how many trials paired, and how."""
    pairing = comparison.pairing
    how = 'task, round and seed' if pairing.by == 'trial' else 'task (k-th round with k-th round)'
    return [
        f'A = {names["A"]}, B = {names["B"]}; difference A - B in points, {100 * comparison.confidence:g} % '
        f'paired-bootstrap interval; tests at {100 * comparison.alpha:.3g} %.',
        f'{len(pairing.a)} trials paired by {how}; unpaired: {pairing.unpaired_a} of A, {pairing.unpaired_b} of B.',
        f'Seed {comparison.seed}, {comparison.resamples} bootstrap resamples, {comparison.permutations} sign flips '
        '(exact below 13 tasks). Verdicts: cells Holm-adjusted over the cells, levels over the levels, All alone.',
    ]


def to_markdown(comparison: Comparison, names: Mapping[str, str]) -> str:
    """The levels and ``All`` (difference, interval, p, verdict per metric), then the cells' verdicts."""
    lines = [*headline(comparison, names), '']
    lines += [
        '| Level | Trials | ' + ' | '.join(f'{m} A - B [CI]; p; verdict' for m in METRICS) + ' |',
        '|---|---|' + '---|' * len(METRICS),
    ]
    for row in [*comparison.scoped(LEVEL), *comparison.scoped(OVERALL)]:
        name = f'**{ALL}**' if row.scope == OVERALL else row.level
        cells = [f'{signed(row.difference[m])}; {row.p_adjusted[m]:.2g}; {row.verdict[m]}' for m in METRICS]
        lines.append(f'| {name} | {row.trials} | ' + ' | '.join(cells) + ' |')
    cell_rows = comparison.scoped(CELL)
    if cell_rows:
        levels = [level for level in LEVEL_ORDER if any(row.level == level for row in cell_rows)]
        lines += [
            '',
            'Per cell, IS / ES / CR difference in points and the verdict (A, B, or – for no detectable difference):',
            '',
            '| Scene | ' + ' | '.join(levels) + ' |',
            '|---|' + '---|' * len(levels),
        ]
        by_cell = {(row.row, row.level): row for row in cell_rows}
        for scene in dict.fromkeys(row.row for row in cell_rows):
            values = []
            for level in levels:
                cell = by_cell.get((scene, level))
                values.append(
                    ' / '.join(f'{100 * cell.difference[m].estimate:+.1f} {short_verdict(cell, m)}' for m in METRICS)
                    if cell
                    else '–'
                )
            lines.append(f'| {scene} | ' + ' | '.join(values) + ' |')
    return '\n'.join(lines) + '\n'


def to_csv(comparison: Comparison) -> str:
    """One line per row and metric: values of A and B, difference and bounds (fractions), test, p, verdict."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator='\n')
    writer.writerow(
        ['scope', 'row', 'level', 'trials', 'tasks', 'metric', 'a', 'b', 'difference', 'low', 'high', 'interval_method',
         'test', 'p_value', 'p_adjusted', 'verdict']
    )  # fmt: skip
    for row in comparison.rows:
        for metric in METRICS:
            interval = row.difference[metric]
            writer.writerow(
                [row.scope, row.row, row.level, row.trials, row.tasks, metric, f'{row.a[metric]:.6g}',
                 f'{row.b[metric]:.6g}', f'{interval.estimate:.6g}', f'{interval.low:.6g}', f'{interval.high:.6g}',
                 interval.method, row.test[metric], f'{row.p_value[metric]:.6g}', f'{row.p_adjusted[metric]:.6g}',
                 row.verdict[metric]]
            )  # fmt: skip
    return out.getvalue()


def to_document(comparison: Comparison, names: Mapping[str, str], about: Mapping[str, Any]) -> dict[str, Any]:
    """The whole comparison as a JSON-able document."""
    pairing = comparison.pairing
    return {
        'a': names['A'],
        'b': names['B'],
        'runs': dict(about),
        'confidence': comparison.confidence,
        'seed': comparison.seed,
        'resamples': comparison.resamples,
        'permutations': comparison.permutations,
        'paired_by': pairing.by,
        'paired_trials': len(pairing.a),
        'unpaired': {'a': pairing.unpaired_a, 'b': pairing.unpaired_b},
        'multiplicity': 'Holm over the cells (per metric), over the levels (per metric); All alone',
        'rows': [row.as_dict() for row in comparison.rows],
    }


def plot(comparison: Comparison, path: Path, *, title: str) -> None:
    """Per level and ``All``: the difference A - B of IS / ES / CR with its interval, and the zero line."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    rows = [*comparison.scoped(LEVEL), *comparison.scoped(OVERALL)]
    figure, axis = plt.subplots(figsize=(1.4 * len(rows) + 2.5, 3.6))
    markers = {'IS': 'o', 'ES': 's', 'CR': '^'}
    for index, metric in enumerate(METRICS):
        xs = [position + (index - 1) * 0.15 for position in range(len(rows))]
        ys = [100 * row.difference[metric].estimate for row in rows]
        below = [100 * (row.difference[metric].estimate - row.difference[metric].low) for row in rows]
        above = [100 * (row.difference[metric].high - row.difference[metric].estimate) for row in rows]
        axis.errorbar(xs, ys, yerr=[below, above], fmt=markers[metric], capsize=3, label=metric)
    axis.axhline(0.0, color='grey', linewidth=0.8)
    axis.set_xticks(range(len(rows)), [row.level for row in rows])
    axis.set_ylabel(f'A - B, points ({100 * comparison.confidence:g} % CI)')
    axis.set_ylim(-105, 105)
    axis.grid(alpha=0.3)
    axis.legend(loc='center left', bbox_to_anchor=(1.02, 0.5), fontsize='small')
    axis.set_title(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=100, bbox_inches='tight')
    plt.close(figure)


STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #1d2330; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 24px; } p.meta { color: #5a6275; font-size: 13px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #d5d9e2; padding: 4px 8px; text-align: center; font-variant-numeric: tabular-nums; }
th { background: #eef1f6; } td.A { color: #187a32; font-weight: 600; } td.B { color: #b3261e; font-weight: 600; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def to_html(comparison: Comparison, names: Mapping[str, str], *, plot_name: str = NAMES['png']) -> str:
    """A self-contained page (apart from the plot next to it): the headline, every row, the plot."""
    head = ''.join(f'<th>{m} A - B [CI]</th><th>{m} p</th><th>{m} verdict</th>' for m in METRICS)
    rows = []
    for row in comparison.rows:
        cells = ''.join(
            f'<td>{_e(signed(row.difference[m]))}</td><td>{row.p_adjusted[m]:.2g}</td>'
            f'<td class="{_e(short_verdict(row, m))}">{_e(row.verdict[m])}</td>'
            for m in METRICS
        )
        rows.append(f'<tr class="{row.scope}"><th>{_e(row.label)}</th><td>{row.trials}</td>{cells}</tr>')
    meta = ''.join(f'<p class="meta">{_e(line)}</p>' for line in headline(comparison, names))
    body = (
        f'<h1>RoboFollow comparison: {_e(names["A"])} vs {_e(names["B"])}</h1>{meta}'
        f'<img alt="Differences per level with confidence intervals" src="{_e(plot_name)}" width="640">'
        f'<h2>Differences per level, overall and per cell</h2><table class="comparison"><thead><tr><th>Row</th>'
        f'<th>Trials</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">'
        f'<title>RoboFollow comparison {_e(names["A"])} vs {_e(names["B"])}</title><style>{STYLE}</style></head>'
        f'<body>{body}</body></html>\n'
    )


@dataclass(frozen=True)
class WrittenComparison:
    """What ``write_comparison`` wrote."""

    markdown: str
    out: Path
    page: Path | None


def write_comparison(
    comparison: Comparison,
    out: Path,
    *,
    names: Mapping[str, str],
    about: Mapping[str, Any],
    page: bool = False,
) -> WrittenComparison:
    """Write comparison.md / .csv / .json / .png (and index.html with ``page``) into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    markdown = to_markdown(comparison, names)
    (out / NAMES['md']).write_text(markdown, encoding='utf-8')
    (out / NAMES['csv']).write_text(to_csv(comparison), encoding='utf-8')
    document = to_document(comparison, names, about)
    (out / NAMES['json']).write_text(json.dumps(document, indent=2) + '\n', encoding='utf-8')
    plot(comparison, out / NAMES['png'], title=f'A = {names["A"]}, B = {names["B"]}')
    written = None
    if page:
        written = out / PAGE_NAME
        written.write_text(to_html(comparison, names), encoding='utf-8')
    return WrittenComparison(markdown, out, written)
