"""``robofollow eval --workers N``: the same records as one process, lost workers replaced, signals stop all."""

from __future__ import annotations

import json
import os
import signal
import time

import eval_process
import pytest
from scale_support import TRIALS, alive, child_pids, cli_args, comparable, is_worker, suite_options

from robofollow_ros.cli import main
from robofollow_ros.cli.score import score_path
from robofollow_ros.evaluation.records import Trial
from robofollow_ros.evaluation.suite import plan_trials, run_identity, run_suite
from robofollow_ros.evaluation.video import END_CARD_SECONDS, decode_frames
from robofollow_ros.evaluation.workers import LocalWorkers

SCORES = ('task_id', 'round', 'intent_score', 'exec_score', 'completion_ok', 'frames', 'selection')


@pytest.fixture(scope='module')
def one_process(tmp_path_factory):
    out = tmp_path_factory.mktemp('one') / 'run'
    records = run_suite(suite_options(out), progress=False)
    assert len(records) == TRIALS
    return comparable(records)


def test_two_workers_give_the_records_of_one_process(tmp_path, one_process):
    records = run_suite(suite_options(tmp_path / 'run', workers=2), progress=False)
    assert comparable(records) == one_process
    lines = eval_process.result_lines(tmp_path / 'run')
    assert comparable(lines) == one_process
    run = json.loads((tmp_path / 'run' / 'run.json').read_text(encoding='utf-8'))
    assert run['status'] == 'complete' and run['completed_trials'] == TRIALS


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(tmp_path, one_process):
    options = suite_options(tmp_path / 'run', workers=2)
    executor = LocalWorkers(options, identity=run_identity(options, privileged=True))
    trials: list[Trial] = plan_trials(options)
    results = []
    for result in executor.results(trials):
        results.append(result)
        if len(results) == 4:
            victim = executor.pids[0]
            os.kill(victim, signal.SIGKILL)
    assert executor.replaced == 1 and len(executor.pids) == 3
    assert comparable(result.record for result in results) == one_process
    assert not any(alive(pid) for pid in executor.pids)


@pytest.mark.parametrize(('signal_number', 'status'), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_every_worker_and_the_run_resumes(tmp_path, one_process, signal_number, status):
    out = tmp_path / 'run'
    process = eval_process.start(cli_args(out, '--workers', '2'))
    eval_process.wait_for_records(out, 3, process)
    workers = [pid for pid in child_pids(process.pid) if is_worker(pid)]
    assert len(workers) == 2
    process.send_signal(signal_number)
    _, err = process.communicate(timeout=120)
    assert process.returncode == status, err
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in workers)
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    written = eval_process.result_lines(out)
    assert run['status'] == 'interrupted' and run['completed_trials'] == len(written) < TRIALS
    assert main(cli_args(out, '--workers', '2')) == 0
    assert comparable(eval_process.result_lines(out)) == one_process


def test_workers_below_one_are_refused(tmp_path, capsys):
    assert main(cli_args(tmp_path / 'run', '--workers', '0')) == 2
    assert capsys.readouterr().err.strip() == 'robofollow eval: error: --workers must be at least 1'


def test_two_workers_record_bags_and_videos_through_the_one_writer(tmp_path):
    tasks = ['--tasks', 'L0_pickup_*_1_*']
    one, two = tmp_path / 'one', tmp_path / 'two'
    assert main([*cli_args(one, '--record', 'bag', '--video', *tasks)]) == 0
    assert main([*cli_args(two, '--record', 'bag', '--video', '--workers', '2', *tasks)]) == 0
    records = comparable(eval_process.result_lines(two))
    assert records == comparable(eval_process.result_lines(one)) and len(records) >= 4
    for record in records.values():
        rescored = score_path(two / record['episode_file'])
        assert {key: rescored[key] for key in SCORES} == {key: record[key] for key in SCORES}
        frames = decode_frames(two / record['video_file'])
        assert len(frames) == record['frames'] + round(END_CARD_SECONDS * 17)
    assert sorted(path.name for path in (two / 'episodes').iterdir()) == sorted(
        path.name for path in (one / 'episodes').iterdir()
    )
