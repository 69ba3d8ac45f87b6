"""``robofollow report``: Table 1 (IS / ES / CR per scene and level) from result records."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from robofollow_ros.errors import RoboFollowError

HELP = 'summary tables (Markdown, CSV, JSON) and a plot from result records'
DESCRIPTION = """\
Summarise result records (JSON Lines files or JSON arrays, e.g. results.jsonl of an evaluation run or
the output of `robofollow score`) per scene and level: mean Intent Score, mean Execution Score and the
task-macro Completion Rate, in percent, laid out like the paper's Table 1, with the unweighted mean over
scenes. Writes summary.md, summary.csv, summary.json and summary.png to --out and prints the Markdown.
Records of the same trial (task, variant, round, seed) seen again are skipped with a warning.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``robofollow report``."""
    parser.add_argument('results', nargs='+', metavar='RESULTS', help='JSON Lines or JSON array of result records')
    parser.add_argument('--out', metavar='DIR', help='output directory (default: next to the first RESULTS file)')
    parser.add_argument('--html', action='store_true', help='also write index.html: tables, plot, trials with videos')


def run(args: argparse.Namespace) -> int:
    """Read, deduplicate, summarise, write the tables and the plot, print the Markdown."""
    from robofollow_ros.referee.aggregate import read_result_records
    from robofollow_ros.referee.report import write_report

    records = [record for name in args.results for record in read_result_records(Path(name))]
    if not records:
        raise RoboFollowError('no result records in ' + ', '.join(args.results))
    out = Path(args.out) if args.out else Path(args.results[0]).resolve().parent
    report = write_report(records, out)
    for record in report.duplicates_skipped:
        print(
            f'warning: duplicate record skipped: {record["task_id"]} round {record.get("round")} '
            f'seed {record.get("seed")} variant {record.get("variant")}',
            file=sys.stderr,
        )
    if args.html:
        from robofollow_ros.data.html_report import write_html_report
        from robofollow_ros.referee.aggregate import deduplicate

        kept, _ = deduplicate(records)
        page = write_html_report(kept, report.table, page_dir=out, run_dir=Path(args.results[0]).resolve().parent)
        print(f'HTML report: {page}', file=sys.stderr)
    sys.stdout.write(report.markdown)
    episodes = sum(summary.episodes for summary in report.summaries)
    print(f'\n{episodes} episodes in {len(report.summaries)} groups; tables and plot in {out}', file=sys.stderr)
    return 0
