"""A static HTML page per run: Table 1, the plot, the diagnostics, and one row per trial linking its video and file.

The page is self-contained apart from the files it links (``summary.png`` next to it, the run's videos and episode
files by relative paths), so a run folder can be copied or served as it is.
"""

from __future__ import annotations

import html
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from robofollow_ros.diagnostics.confusion import CATEGORIES
from robofollow_ros.diagnostics.mirage import ALL_LEVELS, gap_interval_triple, gap_verdict_triple, percent_triple
from robofollow_ros.diagnostics.mirage_and_confusion import PLOT_NAME, Diagnostics
from robofollow_ros.evaluation.status import stale_running
from robofollow_ros.referee.table1 import METRICS, Table, bounds_text
from robofollow_ros.statistics.cells import Intervals, methods_used

PAGE_NAME = 'index.html'

STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #1d2330; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; }
.meta { color: #5a6275; font-size: 13px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #d5d9e2; padding: 4px 8px; vertical-align: top; }
th { background: #eef1f6; }
table.table1 td, table.intervals td, table.diag td { text-align: center; font-variant-numeric: tabular-nums; }
tr.mean td { font-weight: 600; background: #f7f8fb; }
td.ok { color: #187a32; font-weight: 600; } td.fail { color: #b3261e; font-weight: 600; }
ul.stages { margin: 0; padding-left: 16px; } video { width: 300px; display: block; }
td.task { max-width: 200px; word-break: break-all; } td.instruction { min-width: 200px; max-width: 280px; }
td.stages { min-width: 260px; }
img.plot { max-width: 100%; height: auto; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _link(path: Path, page_dir: Path) -> str:
    return html.escape(Path(os.path.relpath(path, page_dir)).as_posix(), quote=True)


def _run_file_link(run_dir: Path, name: object, page_dir: Path) -> str | None:
    """The link to a file a record names, or ``None`` when the path leads outside the run folder (a results file
    is data anyone may have edited; the page never points at the rest of the disk)."""
    relative = Path(str(name))
    try:
        inside = not relative.is_absolute() and (run_dir / relative).resolve().is_relative_to(run_dir.resolve())
    except (OSError, RuntimeError):
        return None
    return _link(run_dir / relative, page_dir) if inside else None


def table_html(table: Table) -> str:
    """Table 1 as an HTML table (IS / ES / CR per level, percent)."""
    head = ''.join(f'<th colspan="3">{_e(level)}</th>' for level in table.levels)
    sub = ''.join(f'<th>{metric}</th>' for _ in table.levels for metric in METRICS)
    rows = []
    for row in table.rows:
        cells = []
        for level in table.levels:
            value = table.cells[row].get(level)
            cells += [f'<td>{v:.1f}</td>' for v in value] if value else ['<td>–</td>'] * 3
        css = ' class="mean"' if row == 'Mean' else ''
        rows.append(f'<tr{css}><th>{_e(row)}</th>{"".join(cells)}</tr>')
    return (
        f'<table class="table1"><thead><tr><th rowspan="2">Scene</th>{head}</tr><tr>{sub}</tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table>'
    )


def intervals_html(table: Table, intervals: Intervals, *, confidence: float) -> str:
    """The confidence interval of every figure of Table 1 (percent), with the methods used."""
    head = ''.join(f'<th>{_e(level)} IS / ES / CR</th>' for level in table.levels)
    rows = []
    for row in table.rows:
        cells = ''.join(f'<td>{_e(bounds_text(intervals, row, level))}</td>' for level in table.levels)
        css = ' class="mean"' if row == 'Mean' else ''
        rows.append(f'<tr{css}><th>{_e(row)}</th>{cells}</tr>')
    return (
        f'<h2>{100 * confidence:g} % confidence intervals (%)</h2>'
        f'<p class="meta">Methods: {_e("; ".join(methods_used(intervals)))} (docs/statistics.md)</p>'
        f'<table class="intervals"><thead><tr><th>Scene</th>{head}</tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table>'
    )


def _stages(record: Mapping[str, Any]) -> str:
    items = []
    for stage in record.get('stages', []):
        reasons = ' / '.join(dict.fromkeys(str(r) for r in (stage.get('intent_reason'), stage.get('exec_reason')) if r))
        items.append(
            f'<li><b>{_e(stage["name"])}</b> IS {stage["intent"]:.2f} ES {stage["exec"]:.2f} / '
            f'{stage["max"]:.2f}: {_e(reasons)}</li>'
        )
    if not items:
        items.append(f'<li>{_e(record.get("exec_msg") or record.get("intent_msg") or "not scored")}</li>')
    return f'<ul class="stages">{"".join(items)}</ul>'


def trial_rows_html(records: Sequence[Mapping[str, Any]], *, run_dir: Path, page_dir: Path) -> str:
    """One row per trial: id, round, instruction, IS / ES / CR, stage reasons, video and trajectory links (only to
    files inside ``run_dir``)."""
    rows = []
    for record in records:
        media = []
        source = _run_file_link(run_dir, record['video_file'], page_dir) if record.get('video_file') else None
        if source is not None:
            media.append(
                f'<video controls muted preload="metadata" src="{source}"></video><a href="{source}">video</a>'
            )
        episode = _run_file_link(run_dir, record['episode_file'], page_dir) if record.get('episode_file') else None
        if episode is not None:
            media.append(f'<a href="{episode}">trajectory</a>')
        done = bool(record.get('completion_ok'))
        rows.append(
            '<tr class="trial">'
            f'<td class="task">{_e(record["task_id"])}</td><td>{_e(record.get("level_tag", ""))}</td>'
            f'<td>{_e(record.get("round", ""))}</td><td>{_e(record.get("seed", ""))}</td>'
            f'<td class="instruction">{_e(record.get("instruction", ""))}</td>'
            f'<td>{float(record.get("intent_score", 0.0)):.2f}</td><td>{float(record.get("exec_score", 0.0)):.2f}</td>'
            f'<td class="{"ok" if done else "fail"}">{"yes" if done else "no"}</td>'
            f'<td class="stages">{_stages(record)}</td><td>{" ".join(media)}</td></tr>'
        )
    head = ''.join(
        f'<th>{name}</th>'
        for name in ('Task', 'Level', 'Round', 'Seed', 'Instruction', 'IS', 'ES', 'CR', 'Stages', 'Episode')
    )
    return f'<table class="trials"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def diagnostics_html(diagnostics: Diagnostics, *, plot_name: str = PLOT_NAME) -> str:
    """The mirage gap (when a baseline was run) and the intent confusion, as HTML sections."""
    parts = []
    if diagnostics.gap:
        rows = ''.join(
            f'<tr><th>{_e("All" if row.level == ALL_LEVELS else row.level)}</th><td>{row.trials}</td>'
            f'<td>{percent_triple(row.policy)}</td><td>{percent_triple(row.baseline)}</td>'
            f'<td>{percent_triple(row.gap, signed=True)}</td><td>{_e(gap_interval_triple(row))}</td>'
            f'<td>{_e(gap_verdict_triple(row, policy="policy", baseline="blind"))}</td></tr>'
            for row in diagnostics.gap
        )
        parts.append(
            '<h2>Mirage gap: the policy against the language-blind baseline on the same trials</h2>'
            '<table class="diag gap"><thead><tr><th>Level</th><th>Trials</th><th>Policy IS / ES / CR</th>'
            f'<th>Blind IS / ES / CR</th><th>Gap</th><th>CI of the gap</th><th>Better</th></tr></thead>'
            f'<tbody>{rows}</tbody></table>'
        )
    confusion = diagnostics.confusion
    used = [c for c in CATEGORIES if any(confusion.counts.get(g, Counter()).get(c) for g in confusion.groups())]
    head = ''.join(f'<th>{_e(c)}</th>' for c in used)
    rows = ''.join(
        f'<tr><th>S{row["scene"]} {_e(row["level"])}</th><td>{row["trials"]}</td><td>{row["not_full"]}</td>'
        + ''.join(f'<td>{row[c]}</td>' for c in used)
        + '</tr>'
        for row in confusion.rows()
    )
    parts.append(
        '<h2>Intent confusion: what was chosen in trials whose Intent is not full</h2>'
        '<table class="diag confusion"><thead><tr><th>Group</th><th>Trials</th><th>Not full</th>'
        f'{head}</tr></thead><tbody>{rows}</tbody></table>'
        f'<img alt="Intent confusion per scene and level" src="{_e(plot_name)}" width="640">'
    )
    return ''.join(parts)


def write_html_report(
    records: Sequence[Mapping[str, Any]],
    table: Table,
    *,
    page_dir: Path,
    run_dir: Path,
    plot_name: str = 'summary.png',
    diagnostics: Diagnostics | None = None,
    intervals: Intervals | None = None,
    confidence: float = 0.95,
) -> Path:
    """Write ``page_dir/index.html`` for the run whose records (and linked files) live in ``run_dir``.

    With ``diagnostics`` (``diagnostics.mirage_and_confusion.write_diagnostics``, written to ``page_dir``), the page
    also shows the mirage gap and the intent confusion; with ``intervals`` (``robofollow_ros.statistics.cells``),
    the confidence interval of every figure of Table 1.
    """
    run_file = run_dir / 'run.json'
    details = ''
    if run_file.exists():
        run = json.loads(run_file.read_text(encoding='utf-8'))
        options = run.get('options', {})
        details = (
            f'policy <b>{_e(options.get("policy", "?"))}</b>, variant {_e(options.get("variant", "?"))}, '
            f'{_e(run.get("completed_trials", len(records)))} trials, '
            f'robofollow_ros {_e(run.get("robofollow_ros", "?"))}, '
            f'status {_e(run.get("status", "?"))}'
        )
        stale = stale_running(run)
        if stale is not None:
            details += f' ({_e(stale)})'

    completed = sum(bool(r.get('completion_ok')) for r in records)
    body = (
        f'<h1>RoboFollow run: {_e(run_dir.name)}</h1><p class="meta">{details}</p>'
        f'<p class="meta">{len(records)} trials, {completed} complete</p>'
        f'<h2>Table 1: IS / ES / CR (%) per scene and level</h2>{table_html(table)}'
        f'{intervals_html(table, intervals, confidence=confidence) if intervals else ""}'
        f'<h2>From L0 to L3</h2><img class="plot" alt="IS, ES and CR per level" src="{_e(plot_name)}">'
        f'{diagnostics_html(diagnostics) if diagnostics is not None else ""}'
        f'<h2>Trials</h2>{trial_rows_html(records, run_dir=run_dir, page_dir=page_dir)}'
    )
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">'
        f'<title>RoboFollow run {_e(run_dir.name)}</title><style>{STYLE}</style></head>'
        f'<body>{body}</body></html>\n'
    )
    page_dir.mkdir(parents=True, exist_ok=True)
    path = page_dir / PAGE_NAME
    path.write_text(page, encoding='utf-8')
    return path
