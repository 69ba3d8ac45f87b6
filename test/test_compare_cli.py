"""``robofollow compare`` and the intervals of ``robofollow report``, on run folders written here.

The comparison page is opened in real headless Chromium like the report (test_html_report.py).
"""

from __future__ import annotations

import csv
import functools
import http.server
import json
import threading
from pathlib import Path

import numpy as np
import pytest
from test_bad_input import IMPOSSIBLE, one_line, result_record, results_with
from test_html_report import QuietHandler, open_browser

from robofollow_ros.cli import main
from robofollow_ros.diagnostics.mirage import mirage_gap, mirage_markdown
from robofollow_ros.referee.table1 import Table, figure_of
from robofollow_ros.statistics.cells import table_intervals
from robofollow_ros.statistics.compare import compare_records
from robofollow_ros.statistics.paired import A_BETTER, NO_DIFFERENCE

IDENTITY = {'variant': 'published', 'robot': 'aloha', 'max_queries': 10, 'actions_per_query': 50}


def records_of(policy: str, rate: float, *, rounds=(1,), seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    records = []
    for scene in (1, 2):
        for level in ('L0', 'L1'):
            for index in range(24):
                for round_ in rounds:
                    done = bool(rng.random() < rate)
                    records.append(
                        {
                            'task_id': f'{level}_s{scene}_{index}', 'scene': scene, 'level_tag': level,
                            'round': round_, 'seed': 42 + 100 * round_ + index, 'intent_score': 1.0 if done else 0.4,
                            'exec_score': 1.0 if done else 0.2, 'intent_ok': done, 'exec_ok': done,
                            'completion_ok': done, 'variant': 'published', 'robot': 'aloha', 'policy': policy,
                            'run_id': f'{policy}-{rounds[0]}', 'privileged': False,
                        }
                    )  # fmt: skip
    return records


def run_folder(root: Path, name: str, records: list[dict], **identity) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / 'results.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in records), encoding='utf-8')
    run = {'identity': {**IDENTITY, 'policy': records[0]['policy'], **identity}}
    (folder / 'run.json').write_text(json.dumps(run), encoding='utf-8')
    return folder


def test_compare_writes_every_output_and_gives_a_verdict_per_cell(tmp_path, capsys):
    strong = run_folder(tmp_path, 'strong', records_of('strong', 0.9))
    weak = run_folder(tmp_path, 'weak', records_of('weak', 0.2, seed=1)[:-5])
    out = tmp_path / 'cmp'
    assert main(['compare', str(strong), str(weak / 'results.jsonl'), '--out', str(out)]) == 0
    printed = capsys.readouterr().out
    assert '91 trials paired by task, round and seed; unpaired: 5 of A, 0 of B.' in printed
    assert printed == (out / 'comparison.md').read_text()
    document = json.loads((out / 'comparison.json').read_text())
    assert document['paired_trials'] == 91 and document['unpaired'] == {'a': 5, 'b': 0}
    rows = {(row['scope'], row['row'], row['level']): row for row in document['rows']}
    assert len([key for key in rows if key[0] == 'cell']) == 4 and ('all', 'Mean', 'All') in rows
    overall = rows[('all', 'Mean', 'All')]['metrics']['CR']
    assert overall['verdict'] == A_BETTER and overall['difference']['low'] > 0.5 and overall['p_value'] < 0.001
    assert rows[('cell', 'S1', 'L0')]['metrics']['CR']['test'].startswith('exact McNemar')
    lines = list(csv.DictReader((out / 'comparison.csv').open()))
    assert len(lines) == 3 * len(document['rows']) and {line['metric'] for line in lines} == {'IS', 'ES', 'CR'}
    assert (out / 'comparison.png').read_bytes()[:4] == b'\x89PNG' and not (out / 'index.html').exists()


def test_compare_pairs_other_rounds_by_task_and_finds_equal_runs_alike(tmp_path, capsys):
    first = run_folder(tmp_path, 'r1', records_of('blind', 0.3, rounds=(1,), seed=3))
    second = run_folder(tmp_path, 'r2', records_of('blind', 0.3, rounds=(2,), seed=4))
    assert main(['compare', str(first), str(second), '--out', str(tmp_path / 'x')]) == 2
    assert 'no trial of A has a partner in B (different rounds? pair them with --pair-by task)' in (
        capsys.readouterr().err
    )
    assert main(['compare', str(first), str(second), '--pair-by', 'task', '--out', str(tmp_path / 'cmp')]) == 0
    document = json.loads((tmp_path / 'cmp' / 'comparison.json').read_text())
    assert document['paired_trials'] == 96 and document['paired_by'] == 'task'
    overall = next(row for row in document['rows'] if row['scope'] == 'all')
    assert overall['metrics']['CR']['verdict'] == NO_DIFFERENCE


@pytest.mark.parametrize(
    ('field', 'value', 'message'),
    [('max_queries', 5, 'max queries 10 vs 5'), ('actions_per_query', 25, 'executed rows per query 50 vs 25'),
     ('robot', 'primitive', "robot 'aloha' vs 'primitive'"), ('variant', 'corrected', "variant 'published'")],
)  # fmt: skip
def test_compare_refuses_runs_that_are_not_comparable(tmp_path, capsys, field, value, message):
    a = run_folder(tmp_path, 'a', records_of('a', 0.5))
    # Records carry their variant and robot too; run.json alone holds the episode limits.
    records = [{**r, field: value} if field in r else r for r in records_of('b', 0.5)]
    b = run_folder(tmp_path, 'b', records, **{field: value})
    assert main(['compare', str(a), str(b), '--out', str(tmp_path / 'cmp')]) == 2
    error = capsys.readouterr().err.strip()
    assert message in error and error.count('\n') == 0
    assert not (tmp_path / 'cmp').exists()


@pytest.mark.parametrize(('field', 'message'), IMPOSSIBLE, ids=[field[:24] for field, _ in IMPOSSIBLE])
def test_compare_refuses_an_impossible_record_naming_file_line_and_field(tmp_path, capsys, field, message):
    a = run_folder(tmp_path, 'a', records_of('a', 0.5))
    b = results_with(tmp_path / 'b.jsonl', field)
    assert main(['compare', str(a), str(b), '--out', str(tmp_path / 'cmp')]) == 2
    captured = capsys.readouterr()
    assert one_line(captured.err) == f'robofollow compare: error: {b}:2: {message}\n'
    assert captured.out == '' and not (tmp_path / 'cmp').exists()


def test_compare_refuses_a_cut_off_last_record_and_a_run_json_it_cannot_read(tmp_path, capsys):
    a = run_folder(tmp_path, 'a', records_of('a', 0.5))
    b = run_folder(tmp_path, 'b', records_of('b', 0.5))
    with (b / 'results.jsonl').open('a', encoding='utf-8') as stream:
        stream.write(json.dumps(result_record())[:50])
    assert main(['compare', str(a), str(b), '--out', str(tmp_path / 'cmp')]) == 2
    lines = len(records_of('b', 0.5)) + 1
    assert f'{b / "results.jsonl"}:{lines}: the last record is cut short' in one_line(capsys.readouterr().err)
    (a / 'run.json').write_text('{"identity": {"max_queries": ' + '9' * 1_000_000 + '}}', encoding='utf-8')
    assert main(['compare', str(a), str(a), '--out', str(tmp_path / 'cmp')]) == 2
    assert f'{a / "run.json"}: not a run description (it holds an integer of more than ' in one_line(
        capsys.readouterr().err
    )
    (a / 'run.json').write_text('[]', encoding='utf-8')
    assert main(['compare', str(a), str(a), '--out', str(tmp_path / 'cmp')]) == 2
    assert f'{a / "run.json"}: not a run description (expected an object' in one_line(capsys.readouterr().err)
    assert not (tmp_path / 'cmp').exists()


def test_bad_options_are_one_line_errors(tmp_path, capsys):
    a = run_folder(tmp_path, 'a', records_of('a', 0.5))
    assert main(['compare', str(a), str(tmp_path / 'missing')]) == 2
    assert 'neither a run folder with results.jsonl nor a results file' in capsys.readouterr().err
    assert main(['compare', str(a), str(a), '--confidence', '0']) == 2
    assert '--confidence must lie between 0 and 100' in capsys.readouterr().err
    assert main(['report', str(a / 'results.jsonl'), '--baseline', 'none', '--plan-width', '-1']) == 2
    assert '--plan-width must lie between 0 and 100 points' in capsys.readouterr().err


def test_report_gives_every_figure_an_interval_and_plans_rounds(tmp_path, capsys):
    run = run_folder(tmp_path, 'run', records_of('p', 0.5, rounds=(1, 2)))
    out = tmp_path / 'report'
    args = ['report', str(run / 'results.jsonl'), '--baseline', 'none', '--out', str(out), '--confidence', '90']
    assert main([*args, '--plan-width', '10']) == 0
    printed = capsys.readouterr().out
    markdown = (out / 'summary.md').read_text()
    assert '90 % confidence intervals (IS / ES / CR, %; methods: bootstrap over tasks' in markdown
    assert 'Wilson, effective n (rounds share a task)' in markdown and 'bootstrap seed 20260' in markdown
    interval_rows = [line for line in markdown.splitlines() if line.startswith(('| S1', '| S2', '| **Mean'))]
    assert len(interval_rows) == 6 and all(line.count('–') >= 6 for line in interval_rows[3:])
    summary = json.loads((out / 'summary.json').read_text())
    cr = summary['intervals']['cells']['S1']['L0']['CR']
    assert summary['intervals']['confidence'] == 0.9 and cr['low'] < cr['estimate'] < cr['high']
    assert summary['intervals']['cells']['Mean']['L1']['IS']['method'].startswith('bootstrap over tasks within')
    row = next(csv.DictReader((out / 'summary.csv').open()))
    assert float(row['L0_CR_low']) < float(row['L0_CR']) < float(row['L0_CR_high'])
    assert 'Rounds per task needed for every 90 % interval to be at most ±10 points' in printed
    assert '2 round(s) observed' in (out / 'plan.md').read_text()
    # Seeded: the same command gives the same intervals, another --seed other bootstrap bounds.
    assert main(args) == 0
    assert json.loads((out / 'summary.json').read_text())['intervals'] == summary['intervals']
    assert main([*args, '--seed', '7']) == 0
    other = json.loads((out / 'summary.json').read_text())['intervals']
    assert other['seed'] == 7 and other['cells']['S1']['L0']['IS'] != summary['intervals']['cells']['S1']['L0']['IS']
    assert other['cells']['S1']['L0']['CR'] == summary['intervals']['cells']['S1']['L0']['CR']  # Wilson: no resampling


def test_the_plot_draws_each_interval_around_its_figure():
    records = records_of('p', 0.5)
    intervals = table_intervals(records)
    table = Table(levels=('L0', 'L1'), rows=('S1',), cells={'S1': {'L0': (50.0, 40.0, 50.0), 'L1': (60, 50, 55)}})
    figure = figure_of({'': table}, intervals={'': intervals})
    bars = [c for c in figure.axes[0].containers if c.has_yerr]
    assert len(bars) == 3
    segments = bars[2].lines[2][0].get_segments()
    expected = intervals['S1']['L0']['CR']
    assert segments[0][0][1] == pytest.approx(100 * expected.low) and segments[0][1][1] == pytest.approx(
        100 * expected.high
    )


def test_the_mirage_gap_is_paired():
    policy = records_of('expert', 0.95, seed=5)
    blind = records_of('blind', 0.15, seed=6)
    rows = mirage_gap(policy, blind)
    assert [row.level for row in rows] == ['L0', 'L1', 'all']
    for row in rows:
        interval = row.paired.difference['CR']
        assert interval.low < row.gap.completion < interval.high and row.paired.verdict['CR'] == A_BETTER
        assert row.paired.difference['IS'].estimate == pytest.approx(row.gap.intent)
    # The same rows, seed and streams as `robofollow compare` of the two runs: the same intervals.
    levels = compare_records(policy, blind).scoped('level')
    assert [row.difference for row in levels] == [row.paired.difference for row in rows[:2]]
    markdown = mirage_markdown(rows, policy='expert', baseline='blind')
    assert '| 95 % CI of the gap | Better |' in markdown and '| expert / expert / expert |' in markdown


def test_comparison_page_loads_in_chromium(tmp_path):
    a = run_folder(tmp_path, 'a', records_of('a', 0.8))
    b = run_folder(tmp_path, 'b', records_of('b', 0.3, seed=2))
    out = tmp_path / 'cmp'
    assert main(['compare', str(a), str(b), '--out', str(out), '--html']) == 0
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(QuietHandler, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    driver = open_browser(tmp_path / 'profile')
    try:
        driver.get(f'http://127.0.0.1:{server.server_address[1]}/index.html')
        title = driver.title
        rows = driver.execute_script(
            "return [...document.querySelectorAll('table.comparison tbody tr')].map(r => r.cells[0].textContent)"
        )
        verdicts = driver.execute_script("return [...document.querySelectorAll('td.A')].map(c => c.textContent)")
        width = driver.execute_script("return document.querySelector('img').naturalWidth")
        errors = [entry for entry in driver.get_log('browser') if entry['level'] == 'SEVERE']
    finally:
        driver.quit()
        server.shutdown()
    assert errors == [] and title == 'RoboFollow comparison a (a) vs b (b)'
    assert rows == ['S1 L0', 'S1 L1', 'S2 L0', 'S2 L1', 'L0', 'L1', 'All'] and width > 100
    assert verdicts and set(verdicts) == {A_BETTER}
