"""``robofollow report``: a run folder stands for its results.jsonl; a wrong --baseline fails before any output."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from test_referee_cli import RECORDS

from robofollow_ros.cli import main


def run_folder(tmp_path, name='expert'):
    folder = tmp_path / 'runs' / name
    folder.mkdir(parents=True)
    (folder / 'results.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in RECORDS), encoding='utf-8')
    return folder


def test_report_reads_a_run_folder(tmp_path, capsys):
    folder = run_folder(tmp_path)
    assert main(['report', str(folder), '--baseline', 'none']) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith((folder / 'summary.md').read_text(encoding='utf-8'))  # written into the run folder
    summary = json.loads((folder / 'summary.json').read_text(encoding='utf-8'))
    assert (summary['groups'][0]['group'], summary['groups'][0]['episodes']) == ('scene1/L0', 3)
    baseline = run_folder(tmp_path, 'blind')
    assert main(['report', str(folder), '--baseline', str(baseline), '--out', str(tmp_path / 'with_baseline')]) == 0
    assert 'no baseline' not in (tmp_path / 'with_baseline' / 'diagnostics.md').read_text(encoding='utf-8')


def test_a_folder_without_results_is_one_line(tmp_path, capsys):
    assert main(['report', str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ''
    assert captured.err.count('\n') == 1
    assert f'robofollow report: error: {tmp_path}: a folder without results.jsonl' in captured.err


def test_a_missing_baseline_fails_before_anything_is_printed_or_written(tmp_path, capsys):
    folder = run_folder(tmp_path)
    out = tmp_path / 'report'
    missing = tmp_path / 'missing'
    assert main(['report', str(folder), '--out', str(out), '--baseline', str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ''
    assert captured.err.count('\n') == 1 and f'--baseline: cannot read results {missing}' in captured.err
    assert not out.exists()


def test_a_fifo_results_file_is_refused_without_opening_it(tmp_path):
    fifo = tmp_path / 'results.jsonl'
    os.mkfifo(fifo)
    # A subprocess, so that a reader blocked on the FIFO fails the test by its timeout instead of hanging it.
    done = subprocess.run(
        [sys.executable, '-m', 'robofollow_ros', 'report', str(fifo)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and done.stdout == ''
    assert done.stderr.count('\n') == 1 and f'cannot read results {fifo}: not a regular file' in done.stderr
