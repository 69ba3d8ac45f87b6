"""``robofollow report``: Table 1 (IS / ES / CR per scene and level) from result records."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from robofollow_ros.cli.options import add_confidence_arguments, confidence_fraction
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.statistics import DEFAULT_SEED

HELP = 'summary tables (Markdown, CSV, JSON) and a plot from result records'
DESCRIPTION = """\
Summarise result records (JSON Lines files or JSON arrays, e.g. results.jsonl of an evaluation run or
the output of `robofollow score`) per scene and level: mean Intent Score, mean Execution Score and the
task-macro Completion Rate, in percent, laid out like the paper's Table 1, with the unweighted mean over
scenes. Writes summary.md, summary.csv, summary.json and summary.png to --out and prints the Markdown.
Records of the same trial (task, variant, round, seed) seen again are skipped with a warning. All records
must come from one run (same policy and run identity, see `robofollow eval`): records of different runs
are refused rather than merged into one table; report each run on its own. So are records of different
variants (published, corrected): their numbers are not comparable.

Every figure has a confidence interval (--confidence, default 95 %): Wilson for completion rates, a
bootstrap over tasks for the scores, a stratified bootstrap for the Mean row (seeded by --seed; methods in
docs/statistics.md). --plan-width W prints how many rounds per task would bring every interval to at most
±W points (plan.md).

Diagnostics follow the table (diagnostics.md, diagnostics.json, confusion.png): the mirage gap, IS / ES /
CR of the policy next to the language-blind baseline on the same trials per level, and the intent
confusion, what the policy went for in trials whose Intent is not full. With --baseline auto (default)
the baseline is run once in-process on exactly the report's trials, into OUT/blind-baseline (resumable);
give a blind run's results instead, or none.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``robofollow report``."""
    parser.add_argument(
        'results',
        nargs='+',
        metavar='RESULTS',
        help='JSON Lines or JSON array of result records, or a run folder (its results.jsonl)',
    )
    parser.add_argument('--out', metavar='DIR', help='output directory (default: next to the first RESULTS file)')
    parser.add_argument('--html', action='store_true', help='also write index.html: tables, plot, trials with videos')
    parser.add_argument(
        '--baseline',
        default='auto',
        metavar='auto|none|RESULTS',
        help='language-blind baseline for the mirage gap: run it here (auto, default), none, or its results '
        '(file or run folder)',
    )
    add_confidence_arguments(parser, seed=DEFAULT_SEED)
    parser.add_argument(
        '--plan-width',
        type=float,
        default=None,
        metavar='POINTS',
        help='print the rounds per task needed for every interval to be at most ±POINTS (plan.md)',
    )


def results_file(name: str) -> Path:
    """The results file ``name`` names: itself, or for a run folder its ``results.jsonl``.

    Raises:
        RoboFollowError: a folder without ``results.jsonl``.
    """
    path = Path(name)
    if not path.is_dir():
        return path
    inside = path / 'results.jsonl'
    if not inside.is_file():
        raise RoboFollowError(f'{path}: a folder without results.jsonl (give a run folder or a results file)')
    return inside


def one_run(records: Sequence[dict[str, Any]], *, sources: Sequence[str]) -> dict[str, Any] | None:
    """The run all ``records`` belong to (``policy``, ``privileged``, ``isolation``, ``run_id``, and on a real
    cell ``runtime``, ``robot_profile``, ``pose_source``; ``None`` if they name none).

    Raises:
        RoboFollowError: the records come from more than one run (policy or run identity differ).
    """
    runs: dict[tuple[Any, Any], dict[str, Any]] = {}
    for record in records:
        about = {key: record.get(key) for key in ('policy', 'privileged', 'isolation', 'run_id')}
        extra = ('runtime', 'robot_profile', 'pose_source', 'policy_network')
        about.update({key: record[key] for key in extra if key in record})
        runs.setdefault((about['policy'], about['run_id']), about)
    if len(runs) > 1:
        listed = '; '.join(f'{policy or "unknown policy"} run {run_id or "without id"}' for policy, run_id in runs)
        raise RoboFollowError(
            f'{", ".join(sources)} hold records of {len(runs)} different runs ({listed}): '
            'a table describes one run; report each run on its own'
        )
    about = next(iter(runs.values()), {})
    return about if any(value is not None for value in about.values()) else None


def _run_json(path: Path) -> dict[str, Any]:
    """A run folder's run.json, or an empty map when there is none or it does not read."""
    import json

    try:
        run = json.loads(path.read_text(encoding='utf-8'))
    except (OSError, ValueError):
        return {}
    return run if isinstance(run, dict) else {}


def run(args: argparse.Namespace) -> int:
    """Read, deduplicate, summarise, write the tables and the plot, print the Markdown."""
    from robofollow_ros.diagnostics.mirage_and_confusion import write_diagnostics
    from robofollow_ros.evaluation.digests import check_file_unchanged
    from robofollow_ros.evaluation.status import RUN_NAME, stale_running
    from robofollow_ros.referee.aggregate import deduplicate, read_result_records
    from robofollow_ros.referee.table1 import write_report

    confidence = confidence_fraction(args.confidence)
    if args.plan_width is not None and not 0.0 < args.plan_width < 100.0:
        raise RoboFollowError(f'--plan-width must lie between 0 and 100 points, got {args.plan_width:g}')
    files = [results_file(name) for name in args.results]
    for path in files:
        for unverified in check_file_unchanged(path, what=f'cannot report {path}'):
            print(f'warning: {unverified}', file=sys.stderr)
        stale = stale_running(_run_json(path.parent / RUN_NAME))
        if stale is not None:
            print(f'warning: {path.parent}: {stale}', file=sys.stderr)
    records = [record for path in files for record in read_result_records(path)]
    if not records:
        raise RoboFollowError('no result records in ' + ', '.join(map(str, files)))
    # A baseline file is read before anything is written or printed, so that a wrong path costs nothing.
    try:
        given = None if args.baseline in ('auto', 'none') else read_result_records(results_file(args.baseline))
    except RoboFollowError as error:
        raise RoboFollowError(f'--baseline: {error}') from None
    out = Path(args.out) if args.out else files[0].resolve().parent
    report_about = one_run(records, sources=args.results)
    report = write_report(records, out, about=report_about, confidence=confidence, seed=args.seed)
    for record in report.duplicates_skipped:
        print(
            f'warning: duplicate record skipped: {record["task_id"]} round {record.get("round")} '
            f'seed {record.get("seed")} variant {record.get("variant")}',
            file=sys.stderr,
        )
    sys.stdout.write(report.markdown)
    kept, _ = deduplicate(records)
    policy = (report_about or {}).get('policy') or 'policy'
    baseline, note = _baseline(args.baseline, kept, out=out, policy=policy, given=given)
    diagnostics = write_diagnostics(
        kept, out, policy=policy, baseline=baseline, baseline_note=note, confidence=confidence, seed=args.seed
    )
    sys.stdout.write('\n' + diagnostics.markdown)
    if args.plan_width is not None:
        from robofollow_ros.statistics.planning import plan_markdown, plan_rounds

        plan = plan_markdown(
            plan_rounds(kept, half_width=args.plan_width / 100.0, confidence=confidence), report.table.levels
        )
        (out / 'plan.md').write_text(plan, encoding='utf-8')
        sys.stdout.write('\n' + plan)
    if args.html:
        from robofollow_ros.data.html_report import write_html_report

        page = write_html_report(
            kept,
            report.table,
            page_dir=out,
            run_dir=files[0].resolve().parent,
            diagnostics=diagnostics,
            intervals=report.intervals,
            confidence=confidence,
        )
        print(f'HTML report: {page}', file=sys.stderr)
    episodes = sum(summary.episodes for summary in report.summaries)
    print(
        f'\n{episodes} episodes in {len(report.summaries)} groups, variant {report.variant}; tables and plot in {out}',
        file=sys.stderr,
    )
    return 0


def _baseline(
    choice: str,
    records: Sequence[dict[str, Any]],
    *,
    out: Path,
    policy: str,
    given: list[dict[str, Any]] | None,
) -> tuple[list[dict[str, Any]] | None, str | None]:
    """The baseline's records for the mirage gap (``given``: read from --baseline), or ``None`` and why not."""
    from robofollow_ros.diagnostics.mirage_and_confusion import BASELINE_DIR, BASELINE_POLICY, blind_baseline

    if choice == 'none':
        return None, 'no baseline (--baseline none)'
    if policy == BASELINE_POLICY:
        return None, 'this run is the language-blind baseline itself'
    if given is not None:
        return given, None
    folder = out / BASELINE_DIR
    print(
        f'mirage gap: running the language-blind baseline on the same {len(records)} trials in {folder}',
        file=sys.stderr,
    )
    try:
        return blind_baseline(records, out=folder), None
    except RoboFollowError as error:
        print(f'warning: no mirage gap: {error}', file=sys.stderr)
        return None, f'no baseline ({error})'
