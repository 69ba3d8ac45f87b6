"""Speed of ``robofollow compare`` on two runs of 5,540 trials (all 554 tasks x 10 rounds), synthesised.

Writes two run folders (results.jsonl with records shaped like the evaluator's, stage details included, and
run.json) whose per-task success probabilities differ by about 10 points, then times, median of --repeats:
  - baseline: reading both results files (``read_result_records``), what any command on them pays first;
  - compare_records: pairing, bootstrap intervals, tests and verdicts of every cell, level and All;
  - the whole command (``robofollow compare A B --out ...``: reading, comparing, writing md/csv/json/png).
Prints seconds and the ratio of each to the baseline.

    .venv/bin/python bench/bench_compare.py [--rounds 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from robofollow_ros.benchmark.registry import eval_tasks
from robofollow_ros.benchmark.seeds import trial_seed
from robofollow_ros.cli import main
from robofollow_ros.referee.aggregate import read_result_records
from robofollow_ros.statistics.compare import compare_records

IDENTITY = {'variant': 'published', 'robot': 'aloha', 'max_queries': 10, 'actions_per_query': 50}


def synthetic_run(folder: Path, *, policy: str, shift: float, rounds: int, seed: int) -> Path:
    """A run folder of every evaluation task x ``rounds`` with task success probabilities ``p_task + shift``."""
    rng = np.random.default_rng(seed)
    task_rng = np.random.default_rng(0)
    folder.mkdir(parents=True)
    with (folder / 'results.jsonl').open('w', encoding='utf-8') as out:
        for task in eval_tasks():
            rate = float(np.clip(task_rng.beta(2, 2) + shift, 0, 1))
            for round_ in range(1, rounds + 1):
                stages = int(rng.binomial(5, rate))
                score = 0.2 * stages
                record = {
                    'task_id': task.task_id, 'scene': task.scene, 'level_tag': task.level_tag, 'layout': task.layout,
                    'instruction': task.instruction, 'round': round_, 'seed': trial_seed(task.task_id, round_),
                    'intent_score': score, 'exec_score': score, 'intent_ok': stages == 5, 'exec_ok': stages == 5,
                    'completion_ok': bool(rng.random() < rate), 'variant': 'published', 'robot': 'aloha',
                    'policy': policy, 'run_id': f'{policy}-bench',
                    'stages': [{'name': f'stage{k}', 'intent': 0.2, 'exec': 0.2, 'max': 0.2,
                                'intent_reason': 'synthetic', 'exec_reason': 'synthetic'} for k in range(stages)],
                }  # fmt: skip
                out.write(json.dumps(record) + '\n')
    (folder / 'run.json').write_text(json.dumps({'identity': {**IDENTITY, 'policy': policy}}), encoding='utf-8')
    return folder


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--rounds', type=int, default=10)
    parser.add_argument('--repeats', type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        a = synthetic_run(root / 'a', policy='a', shift=0.05, rounds=args.rounds, seed=1)
        b = synthetic_run(root / 'b', policy='b', shift=-0.05, rounds=args.rounds, seed=2)
        records_a, records_b = read_result_records(a / 'results.jsonl'), read_result_records(b / 'results.jsonl')
        print(f'{len(records_a)} + {len(records_b)} trials')

        def read_both() -> None:
            read_result_records(a / 'results.jsonl')
            read_result_records(b / 'results.jsonl')

        def command() -> None:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                assert main(['compare', str(a), str(b), '--out', str(root / 'out')]) == 0

        baseline = median_seconds(read_both, args.repeats)
        timings = {
            'read both results files (baseline)': baseline,
            'compare_records': median_seconds(lambda: compare_records(records_a, records_b), args.repeats),
            'robofollow compare (whole command)': median_seconds(command, args.repeats),
        }
        for name, seconds in timings.items():
            print(f'{name:40s} {seconds:7.2f} s   x{seconds / baseline:5.2f} of the baseline')


if __name__ == '__main__':
    main_bench()
