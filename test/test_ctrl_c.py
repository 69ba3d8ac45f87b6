"""Ctrl-C and SIGTERM on the command line: one line and the conventional exit status, whenever they arrive."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import eval_process
import pytest
from test_run_identity import eval_args, sleeping

# The console script runs ``robofollow_ros.cli:main``; this adds one subcommand module that is slow to import.
WITH_A_SLOW_SUBCOMMAND = """
import sys
from robofollow_ros import cli
cli.SUBCOMMANDS['slow-start'] = 'slow_start_up'
sys.exit(cli.main(['tasks', '--count']))
"""


@pytest.mark.parametrize(('signal_number', 'status'), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_start_up_imports_is_one_line(tmp_path, signal_number, status):
    starting = tmp_path / 'starting'
    process = subprocess.Popen(
        [sys.executable, '-c', WITH_A_SLOW_SUBCOMMAND],
        env=eval_process.environment(ROBOFOLLOW_TEST_STARTING=str(starting)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    eval_process.wait_for_file(starting, process)
    process.send_signal(signal_number)
    out, err = process.communicate(timeout=120)
    name = signal.Signals(signal_number).name
    assert (process.returncode, out) == (status, '')
    assert err == f'robofollow: interrupted ({name}) while starting; nothing was run\n'


@pytest.mark.sim
def test_ctrl_c_as_the_run_starts_is_an_interrupt_not_a_failure(tmp_path):
    # run.json appears just before the first trial imports and builds the simulator: a Ctrl-C landing inside
    # MuJoCo's import used to come out as "ImportError: initialization failed" (exit 1, run.json "failed").
    out = tmp_path / 'run'
    process = eval_process.start(eval_args(out, *sleeping(600)))
    eval_process.wait_for_file(out / 'run.json', process)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert err == 'robofollow eval: interrupted (SIGINT); run the same command again to resume\n'
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    assert (run['status'], run['reason'], run['completed_trials']) == ('interrupted', 'SIGINT', 0)


@pytest.mark.sim
def test_a_killed_run_that_could_not_say_so_is_told_apart_from_a_running_one(tmp_path, capsys):
    # SIGKILL (or the OOM killer) leaves run.json "running": it records its process and host, and the report of
    # the folder says the run is not running any more (the html page too).
    from robofollow_ros.cli import main
    from robofollow_ros.evaluation.status import stale_running

    out = tmp_path / 'run'
    process = eval_process.start(eval_args(out, *sleeping(600)))
    eval_process.wait_for_file(out / 'run.json', process)
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    assert run['status'] == 'running' and run['pid'] == process.pid and stale_running(run) is None
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    assert json.loads((out / 'run.json').read_text(encoding='utf-8'))['status'] == 'running'
    stale = stale_running(run)
    assert stale == (
        f'run.json says running, but its process {process.pid} is gone (killed?): the same command resumes the run'
    )
    (out / 'results.jsonl').write_text('', encoding='utf-8')
    main(['report', str(out / 'results.jsonl')])
    assert f'warning: {out}: {stale}' in capsys.readouterr().err
