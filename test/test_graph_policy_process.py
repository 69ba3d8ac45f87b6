"""Over the ROS graph the policy bridge runs a user policy in its own sandboxed process too: it reaches nothing of the
bridge (the episode's task and ground truth), and a policy that kills its process is one trial's crash. The policies
report through files in the ``policy_scratch`` folder, the one place a sandboxed policy may write."""

from __future__ import annotations

import json

import pytest
from graph_helpers import read_records, run_launch

pytestmark = pytest.mark.ros

SHORT_TASK = 'L0_pickup_yellow_block_1_left'
TWO_TASKS = 'L0_pickup_yellow_block_1_left,L0_pickup_yellow_block_2'


def test_a_policy_searching_the_bridge_finds_no_task_and_its_records_say_sandbox(tmp_path) -> None:
    (tmp_path / 'scratch').mkdir()
    report = tmp_path / 'scratch' / 'snoop.jsonl'
    out = tmp_path / 'run'
    result = run_launch(
        59,
        policy_scratch=str(report.parent),
        policy='policy_doubles:Snooper',
        policy_kwargs=json.dumps({'report': str(report)}),
        task_ids=SHORT_TASK,
        out=str(out),
    )
    assert result.returncode == 0, result.stdout[-4000:]
    [entry] = [json.loads(line) for line in report.read_text(encoding='utf-8').splitlines()]
    assert entry['found'] == [], 'the policy reached objects of the bridge (task, ground truth, ROS nodes)'
    assert entry['modules'] == [], 'the policy process imported the bridge, the task registry or rclpy'
    [record] = read_records(out / 'results.jsonl')
    assert record['policy_error'] is None and record['isolation'] == 'sandbox'
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    assert run['isolation'] == 'sandbox' and run['identity']['isolation'] == 'sandbox'


def test_a_policy_that_kills_its_process_in_the_bridge_is_a_crash_and_the_graph_goes_on(tmp_path) -> None:
    (tmp_path / 'scratch').mkdir()
    marker = tmp_path / 'scratch' / 'exited'
    out = tmp_path / 'run'
    result = run_launch(
        58,
        policy_scratch=str(marker.parent),
        policy='policy_doubles:ExitsOnce',
        policy_kwargs=json.dumps({'marker': str(marker)}),
        task_ids=TWO_TASKS,
        out=str(out),
    )
    assert result.returncode == 0, result.stdout[-4000:]
    first, second = read_records(out / 'results.jsonl')
    assert first['error_kind'] == 'crash' and 'exit code 7' in first['policy_error']
    assert second['policy_error'] is None and second['queries'] == 10
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    assert run['status'] == 'complete' and run['counts']['errors_by_kind'] == {'crash': 1}


@pytest.mark.parametrize(
    ('domain', 'trusted', 'runs_in'), [(55, 'false', 'isolation.host'), (56, 'true', 'policy_bridge')]
)
def test_the_bridge_runs_a_user_policy_in_its_own_process_unless_trusted(tmp_path, domain, trusted, runs_in) -> None:
    scratch = tmp_path / 'scratch'
    scratch.mkdir()
    pids = scratch / 'pids'
    out = tmp_path / 'run'
    result = run_launch(
        domain,
        policy_scratch=str(scratch),
        policy='policy_doubles:WhereAmI',
        policy_kwargs=json.dumps({'pids': str(pids)}),
        trusted_policy=trusted,
        task_ids=SHORT_TASK,
        out=str(out),
    )
    assert result.returncode == 0, result.stdout[-4000:]
    [(_, main)] = [line.split() for line in pids.read_text(encoding='utf-8').splitlines()]
    assert main.endswith(runs_in)
    isolation = 'trusted' if trusted == 'true' else 'sandbox'
    [record] = read_records(out / 'results.jsonl')
    assert record['isolation'] == isolation and record['policy_error'] is None
    assert json.loads((out / 'run.json').read_text(encoding='utf-8'))['identity']['isolation'] == isolation
