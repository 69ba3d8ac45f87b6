"""Remote policies behind the graph's bridge: ``robofollow serve-policy`` over openpi and robotwin-tcp, each
through a full episode, and a policy server killed mid-episode (that trial records the failure, the run goes on)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from graph_helpers import ROOT, finish, graph_env, read_records, run_launch, start_launch, wait_until
from remote_support import free_port

from robofollow_ros.evaluation.endpoints import reachable

pytestmark = pytest.mark.ros

TASKS = 'L0_pickup_yellow_block_1_left,L0_pickup_yellow_block_1_right,L0_pickup_yellow_block_2'


def _serve(domain: int, policy: str, protocol: str, port: int, kwargs: str = '{}') -> subprocess.Popen[str]:
    command = [sys.executable, '-m', 'robofollow_ros', 'serve-policy', '--policy', policy, '--protocol', protocol]
    server = subprocess.Popen(
        [*command, '--port', str(port), '--policy-kwargs', kwargs],
        env=graph_env(domain),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(lambda: reachable(f'127.0.0.1:{port}'), timeout=60, what=f'serve-policy on port {port}')
    except BaseException:
        server.kill()
        server.communicate()
        raise
    return server


@pytest.mark.parametrize(
    ('domain', 'protocol', 'client'), [(40, 'openpi', 'openpi'), (41, 'robotwin-tcp', 'robotwin-tcp')]
)
def test_serve_policy_behind_the_bridge_runs_a_full_episode(domain, protocol, client, tmp_path) -> None:
    port = free_port()
    server = _serve(domain, 'hold', protocol, port)
    try:
        kwargs = json.dumps({'port': port, 'connect_retries': 10})
        result = run_launch(
            domain, policy=client, policy_kwargs=kwargs, task_ids=TASKS.split(',')[0], out=str(tmp_path)
        )
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)
    assert result.returncode == 0, result.stdout[-4000:]
    (record,) = read_records(tmp_path / 'results.jsonl')
    assert record['policy'] == client and record['policy_error'] is None
    assert record['queries'] == 10 and record['executed_rows'] == 50 and record['scored'] is True


def test_a_policy_server_killed_mid_episode_records_a_policy_error_and_the_run_goes_on(tmp_path) -> None:
    port = free_port()
    server = _serve(42, 'graph_policies:slow_hold', 'openpi', port, kwargs='{"delay": 0.4}')
    kwargs = json.dumps({'port': port, 'connect_retries': 1, 'retry_interval': 0.1, 'timeout': 10.0})
    try:
        launcher = start_launch(42, policy='openpi', policy_kwargs=kwargs, task_ids=TASKS, out=str(tmp_path))
        results = tmp_path / 'results.jsonl'
        wait_until(lambda: results.exists() and len(read_records(results)) >= 1, timeout=120, what='a first result')
        time.sleep(1.0)
    finally:
        server.kill()
        server.communicate(timeout=30)
    output = finish(launcher, timeout=180)
    assert launcher.returncode == 0, output[-4000:]
    records = read_records(results)
    assert [r['task_id'] for r in records] == TASKS.split(',')
    assert records[0]['policy_error'] is None
    assert records[1]['policy_error'] and 0 < records[1]['queries'] < 10
    assert all(record['policy_error'] for record in records[1:])
