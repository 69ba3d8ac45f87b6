"""Whatever a policy does wrong, the trial records it and the run goes on to the next trial."""

from __future__ import annotations

import json
import threading
import time

import pytest

from robofollow_ros.cli import main

pytestmark = pytest.mark.sim

TASKS = 'L0_pickup_yellow_block_[23]'


def evaluate(tmp_path, policy, *extra):
    out = tmp_path / 'run'
    args = ['eval', '--in-process', '--policy', policy, '--tasks', TASKS, '--out', str(out), '--quiet', *extra]
    status = main(args)
    lines = (out / 'results.jsonl').read_text(encoding='utf-8').splitlines()
    return status, [json.loads(line) for line in lines], json.loads((out / 'run.json').read_text(encoding='utf-8'))


@pytest.mark.parametrize(
    ('policy', 'kind', 'message'),
    [
        ('policy_doubles:raising_factory', 'build', 'RuntimeError: checkpoint not found'),
        ('policy_doubles:not_a_policy', 'build', "returned a 'object' that lacks reset, set_instruction, predict"),
        ('policy_doubles:ResetRaises', 'reset', 'reset raised ValueError: reset exploded'),
        ('policy_doubles:InstructionRaises', 'set_instruction', 'set_instruction raised LookupError: no tokenizer'),
        ('policy_doubles:ExitingPolicy', 'predict', 'predict raised SystemExit: 3'),
        ('policy_doubles:InterruptingPolicy', 'predict', 'predict raised KeyboardInterrupt'),
        ('policy_doubles:BoolPolicy', 'invalid_chunk', 'real numbers (float or int), got dtype bool'),
        ('policy_doubles:OneDimensionalPolicy', 'invalid_chunk', 'got [14]'),
    ],
)
def test_every_policy_failure_is_recorded_per_trial_and_the_run_completes(tmp_path, capsys, policy, kind, message):
    status, records, run = evaluate(tmp_path, policy)
    assert status == 0
    assert len(records) == 2
    for record in records:
        assert record['error_kind'] == kind and message in record['policy_error']
        assert record['completion_ok'] is False
    assert run['status'] == 'complete' and run['completed_trials'] == 2
    assert run['counts']['errors_by_kind'] == {kind: 2}
    assert f'2 with policy errors ({kind} 2)' in capsys.readouterr().out
    if kind == 'build':
        assert all(record['scored'] is False and record['queries'] == 0 for record in records)


def test_a_query_past_the_deadline_is_a_timeout_and_the_next_trial_gets_a_fresh_instance(tmp_path, capsys):
    scratch = tmp_path / 'scratch'  # the one folder a sandboxed policy may write
    scratch.mkdir()
    marker = scratch / 'slow'
    kwargs = json.dumps({'marker': str(marker)})
    args = ('--query-timeout', '0.5', '--policy-kwargs', kwargs, '--policy-scratch', str(scratch))
    status, records, _ = evaluate(tmp_path, 'policy_doubles:SlowFirstInstance', *args)
    assert status == 0
    first, second = records
    assert first['error_kind'] == 'timeout' and 'predict did not return within 0.5 s' in first['policy_error']
    assert first['queries'] == 0 and first['scored'] is False
    assert second['policy_error'] is None and second['queries'] == 10
    assert marker.read_text(encoding='utf-8') == 'slow\nfast\n', 'one slow instance, then a fresh one'
    end = capsys.readouterr().out.splitlines()[0]
    assert end.startswith('2 trials: 1 scored, 1 with policy errors (timeout 1), 0 completed')


def test_a_factory_that_keeps_failing_leaves_no_thread_behind(tmp_path):
    before = threading.active_count()
    status, records, _ = evaluate(tmp_path, 'policy_doubles:raising_factory', '--rounds', '3')
    assert status == 0 and len(records) == 6
    deadline = time.monotonic() + 30
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= before
