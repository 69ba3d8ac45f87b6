"""``robofollow compare``: two runs compared trial by trial, with paired intervals, tests and verdicts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from robofollow_ros.cli.options import add_confidence_arguments, confidence_fraction
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.statistics import DEFAULT_PERMUTATIONS, DEFAULT_RESAMPLES, DEFAULT_SEED

HELP = 'compare two runs trial by trial: differences in IS / ES / CR with intervals, tests and verdicts'
DESCRIPTION = """\
Compare run A with run B over the trials both played. Each run is its folder (holding results.jsonl and
run.json) or a results file. Trials pair by task, round and seed (--pair-by trial, two runs of one plan),
or, for runs on different rounds, the k-th round of a task in A with its k-th round in B (--pair-by task).
Runs whose variant, robot, max queries or executed rows per query differ are refused.

For every scene x level cell, every level (the mean over scenes, as Table 1's Mean row) and All, the
difference A - B in IS, ES and CR with a paired-bootstrap confidence interval over tasks, a paired test
(exact McNemar for completion with one round per task, otherwise a sign-flip permutation test over tasks)
and a verdict: "A better", "B better" or "no detectable difference at this size" (cells Holm-adjusted over
the cells, levels over the levels). Writes comparison.md, .csv, .json and .png (and index.html with
--html) to --out and prints the Markdown. Methods: docs/statistics.md.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``robofollow compare``."""
    parser.add_argument('run_a', metavar='RUN_A', help='run folder or results file of A')
    parser.add_argument('run_b', metavar='RUN_B', help='run folder or results file of B')
    parser.add_argument('--out', metavar='DIR', help='output directory (default: ./comparison)')
    parser.add_argument('--html', action='store_true', help='also write index.html')
    parser.add_argument(
        '--pair-by',
        choices=('trial', 'task'),
        default='trial',
        help='pair by task, round and seed (trial, default) or k-th round with k-th round of a task (task)',
    )
    add_confidence_arguments(parser, seed=DEFAULT_SEED)
    parser.add_argument(
        '--resamples', type=int, default=DEFAULT_RESAMPLES, help=f'bootstrap resamples (default {DEFAULT_RESAMPLES})'
    )
    parser.add_argument(
        '--permutations',
        type=int,
        default=DEFAULT_PERMUTATIONS,
        help=f'random sign flips per test (default {DEFAULT_PERMUTATIONS})',
    )


def load_run(source: str) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    """The records of a run folder or results file, the run's identity (from run.json when there is one) and a
    name for it.

    Raises:
        RoboFollowError: no results file, or no records in it.
    """
    from robofollow_ros.referee.aggregate import read_result_records
    from robofollow_ros.textfiles import parse_json, read_utf8

    path = Path(source)
    results = path / 'results.jsonl' if path.is_dir() else path
    if not results.is_file():
        raise RoboFollowError(f'{source}: neither a run folder with results.jsonl nor a results file')
    records = read_result_records(results)
    if not records:
        raise RoboFollowError(f'{results}: no result records')
    identity: dict[str, Any] = {}
    run_file = results.parent / 'run.json'
    if run_file.is_file():
        text = read_utf8(run_file, what='run description')
        document = parse_json(text, where=str(run_file), what='a run description')
        identity = (document.get('identity') if isinstance(document, dict) else None) or {}
        if not isinstance(document, dict) or not isinstance(identity, dict):
            raise RoboFollowError(f'{run_file}: not a run description (expected an object with an "identity" object)')
    policy = identity.get('policy') or records[0].get('policy') or 'run'
    name = f'{policy} ({results.parent.name})'
    return records, identity, name


def run(args: argparse.Namespace) -> int:
    """Load both runs, check they are comparable, compare, write and print."""
    from robofollow_ros.statistics.compare import check_comparable, compare_records, records_identity
    from robofollow_ros.statistics.comparison_report import write_comparison

    confidence = confidence_fraction(args.confidence)
    if args.resamples < 100 or args.permutations < 100:
        raise RoboFollowError('--resamples and --permutations must be at least 100')
    records_a, identity_a, name_a = load_run(args.run_a)
    records_b, identity_b, name_b = load_run(args.run_b)
    if name_a == name_b:
        name_a, name_b = f'{name_a} [A]', f'{name_b} [B]'
    check_comparable(
        {**identity_a, **{k: v for k, v in records_identity(records_a, name=args.run_a).items() if v is not None}},
        {**identity_b, **{k: v for k, v in records_identity(records_b, name=args.run_b).items() if v is not None}},
        names=(args.run_a, args.run_b),
    )
    comparison = compare_records(
        records_a,
        records_b,
        by=args.pair_by,
        confidence=confidence,
        seed=args.seed,
        resamples=args.resamples,
        permutations=args.permutations,
    )
    out = Path(args.out) if args.out else Path('comparison')
    names = {'A': name_a, 'B': name_b}
    about = {'a': {'source': args.run_a, **identity_a}, 'b': {'source': args.run_b, **identity_b}}
    written = write_comparison(comparison, out, names=names, about=about, page=args.html)
    sys.stdout.write(written.markdown)
    if written.page:
        print(f'HTML comparison: {written.page}', file=sys.stderr)
    print(f'\ncomparison in {out}', file=sys.stderr)
    return 0
