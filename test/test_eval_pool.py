"""Policy-server pools (``{"endpoints": [...]}``): a dead endpoint leaves the pool, its trial runs elsewhere."""

from __future__ import annotations

import json

import eval_process
import pytest
from remote_support import ServedPolicyProcess, free_port

from robofollow_ros.cli import main

pytestmark = pytest.mark.sim
TASK = 'L0_pickup_yellow_block_2'
LOCAL_ONLY = ('wall_seconds', 'run_id')


def evaluate(out, policy, kwargs, *extra):
    args = ['eval', '--in-process', '--policy', policy, '--tasks', TASK, '--rounds', '3', '--max-queries', '3']
    return main([*args, '--out', str(out), '--quiet', '--policy-kwargs', json.dumps(kwargs), *extra])


def by_trial(out):
    records = eval_process.result_lines(out)
    keyed = {(r['task_id'], r['round']): {k: v for k, v in r.items() if k not in LOCAL_ONLY} for r in records}
    assert len(keyed) == len(records), 'a trial was recorded twice'
    return keyed


@pytest.mark.parametrize(('protocol', 'workers'), [('openpi', '2'), ('robotwin-tcp', '1')])
def test_a_pool_with_one_dead_endpoint_finishes_the_run_like_the_live_server_alone(tmp_path, protocol, workers):
    dead = f'127.0.0.1:{free_port()}'
    with ServedPolicyProcess('--policy', 'remote_support:make_wave', '--protocol', protocol) as server:
        live = f'127.0.0.1:{server.port}'
        pool = {'endpoints': [dead, live], 'timeout': 60}
        assert evaluate(tmp_path / 'pool', protocol, pool, '--workers', workers) == 0
        assert evaluate(tmp_path / 'alone', protocol, {'port': server.port, 'timeout': 60}) == 0
    pooled = by_trial(tmp_path / 'pool')
    assert len(pooled) == 3 and not any(record['policy_error'] for record in pooled.values())
    assert pooled == by_trial(tmp_path / 'alone')


def test_a_pool_of_dead_endpoints_stops_the_run_with_one_line(tmp_path, capsys):
    dead = [f'127.0.0.1:{free_port()}', f'127.0.0.1:{free_port()}']
    assert evaluate(tmp_path, 'openpi', {'endpoints': dead}) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f'robofollow eval: error: every policy server of the pool is unreachable ({", ".join(dead)})']
    assert eval_process.result_lines(tmp_path) == []
    assert json.loads((tmp_path / 'run.json').read_text(encoding='utf-8'))['status'] == 'failed'


@pytest.mark.parametrize('endpoints', ['127.0.0.1:8000', ['127.0.0.1'], ['127.0.0.1:99999'], []])
def test_malformed_endpoints_are_refused_in_one_line(tmp_path, capsys, endpoints):
    assert evaluate(tmp_path, 'openpi', {'endpoints': endpoints}) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith('robofollow eval: error: ') and ('endpoints' in line or 'host:port' in line)
