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


def run(args: argparse.Namespace) -> int:
    """Read, deduplicate, summarise, write the tables and the plot, print the Markdown."""
    from robofollow_ros.referee.aggregate import deduplicate, read_result_records, summarize
    from robofollow_ros.referee.report import build_table, plot, to_csv, to_json, to_markdown

    records = [record for name in args.results for record in read_result_records(Path(name))]
    if not records:
        raise RoboFollowError('no result records in ' + ', '.join(args.results))
    kept, skipped = deduplicate(records)
    for record in skipped:
        print(
            f'warning: duplicate record skipped: {record["task_id"]} round {record.get("round")} '
            f'seed {record.get("seed")} variant {record.get("variant")}',
            file=sys.stderr,
        )
    summaries = summarize(kept)
    table = build_table(summaries)
    out = Path(args.out) if args.out else Path(args.results[0]).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    markdown = to_markdown(table)
    (out / 'summary.md').write_text(markdown, encoding='utf-8')
    (out / 'summary.csv').write_text(to_csv(table), encoding='utf-8')
    (out / 'summary.json').write_text(to_json(table, summaries, duplicates_skipped=len(skipped)), encoding='utf-8')
    plot(table, out / 'summary.png')
    sys.stdout.write(markdown)
    print(f'\n{len(kept)} episodes in {len(summaries)} groups; tables and plot in {out}', file=sys.stderr)
    return 0
