"""Whole in-process episodes against ``robofollow serve-policy`` subprocesses, over both wire protocols."""

from __future__ import annotations

import json
import signal
import socket
from types import SimpleNamespace

import numpy as np
import pytest
from remote_support import ServedPolicyProcess, free_port

from robofollow_ros.cli import main
from robofollow_ros.policy.factory import make_policy

pytestmark = pytest.mark.sim
TASK = 'L0_pickup_yellow_block_2'
PROTOCOLS = ('openpi', 'robotwin-tcp')
LOCAL_ONLY = ('wall_seconds', 'policy', 'isolation', 'episode_file', 'run_id')
"""The policy differs by name and by where it runs (a user policy in its own process, a built-in client)."""


def records(path):
    return [json.loads(line) for line in (path / 'results.jsonl').read_text(encoding='utf-8').splitlines()]


def evaluate(out, policy, *extra):
    args = ['eval', '--in-process', '--policy', policy, '--tasks', TASK, '--out', str(out), '--quiet', *extra]
    return main(args)


def client_kwargs(port):
    return json.dumps({'port': port, 'connect_retries': 1, 'timeout': 60})


@pytest.mark.parametrize('protocol', PROTOCOLS)
def test_a_served_policy_gives_the_same_records_as_the_policy_in_process(tmp_path, protocol):
    assert evaluate(tmp_path / 'direct', 'remote_support:make_wave', '--rounds', '2', '--record', 'json') == 0
    with ServedPolicyProcess('--policy', 'remote_support:make_wave', '--protocol', protocol) as server:
        assert '127.0.0.1' in server.announcement
        remote = ['--policy-kwargs', client_kwargs(server.port), '--rounds', '2', '--record', 'json']
        assert evaluate(tmp_path / 'remote', protocol, *remote) == 0
        status, _ = server.stop()
    assert status == 0

    direct, served = records(tmp_path / 'direct'), records(tmp_path / 'remote')
    assert len(direct) == len(served) == 2
    for here, there in zip(direct, served, strict=True):
        assert there['policy'] == protocol and there['policy_error'] is None
        assert there['queries'] == 10 and there['executed_rows'] == 70
        assert {k: v for k, v in here.items() if k not in LOCAL_ONLY} == {
            k: v for k, v in there.items() if k not in LOCAL_ONLY
        }
        direct_frames = json.loads((tmp_path / 'direct' / here['episode_file']).read_text(encoding='utf-8'))
        served_frames = json.loads((tmp_path / 'remote' / there['episode_file']).read_text(encoding='utf-8'))
        assert direct_frames == served_frames


@pytest.mark.parametrize('protocol', PROTOCOLS)
def test_a_server_killed_mid_episode_is_that_trials_policy_error_and_the_run_goes_on(tmp_path, protocol):
    served = ('--policy', 'remote_support:make_wave', '--policy-kwargs', '{"die_at": 3}', '--protocol', protocol)
    with ServedPolicyProcess(*served) as server:
        status = evaluate(tmp_path, protocol, '--policy-kwargs', client_kwargs(server.port), '--rounds', '3')
        assert server.process.wait(timeout=30) == -signal.SIGKILL
    assert status == 0
    first, *later = records(tmp_path)
    assert [record['round'] for record in (first, *later)] == [1, 2, 3]
    assert first['queries'] == 2 and first['executed_rows'] == 14
    assert first['error_kind'] == 'predict' and 'connection' in first['policy_error']
    for record in later:
        assert record['queries'] == 0 and record['error_kind'] == 'reset'
        assert 'not reachable' in record['policy_error']
    run = json.loads((tmp_path / 'run.json').read_text(encoding='utf-8'))
    assert run['status'] == 'complete' and run['completed_trials'] == 3


@pytest.mark.parametrize('protocol', PROTOCOLS)
@pytest.mark.parametrize('stop_with', [signal.SIGINT, signal.SIGTERM])
def test_serve_policy_stops_cleanly_on_sigint_and_sigterm(protocol, stop_with):
    with ServedPolicyProcess('--policy', 'hold', '--protocol', protocol) as server:
        status, stderr = server.stop(stop_with)
    assert status == 0, stderr
    with socket.socket() as probe:
        assert probe.connect_ex(('127.0.0.1', server.port)) != 0


@pytest.mark.parametrize('protocol', PROTOCOLS)
def test_a_dead_endpoint_is_one_clear_error_line_in_each_trials_record(tmp_path, capsys, protocol):
    port = free_port()
    assert evaluate(tmp_path, protocol, '--policy-kwargs', client_kwargs(port), '--rounds', '2') == 0
    for record in records(tmp_path):
        assert record['error_kind'] == 'build' and record['queries'] == 0
        error = record['policy_error']
        assert '\n' not in error and f'127.0.0.1:{port}' in error and 'not reachable after 1 attempt(s)' in error
    assert '2 with policy errors' in capsys.readouterr().out


@pytest.mark.parametrize('policy', ['expert', 'blind'])
def test_serving_a_privileged_policy_is_refused_in_one_line(capsys, policy):
    assert main(['serve-policy', '--policy', policy, '--port', '0']) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert 'privileged' in line and 'replay' in line


@pytest.mark.parametrize('protocol', PROTOCOLS)
def test_serving_on_a_taken_port_is_one_error_line(capsys, protocol):
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(['serve-policy', '--policy', 'hold', '--protocol', protocol, '--port', str(port)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith('robofollow serve-policy: error: cannot listen on 127.0.0.1:')


@pytest.mark.parametrize('protocol', PROTOCOLS)
def test_a_client_carries_on_with_a_server_restarted_between_episodes(protocol):
    images = {camera: np.zeros((240, 320, 3), np.uint8) for camera in ('cam_high', 'cam_left_wrist', 'cam_right_wrist')}
    observation = SimpleNamespace(images=images, state=np.zeros(14, np.float32))
    with ServedPolicyProcess('--policy', 'hold', '--protocol', protocol) as first:
        client = make_policy(protocol, kwargs={'port': first.port, 'connect_retries': 1})
        client.reset()
        client.set_instruction('hold')
        assert client.predict(observation).shape == (5, 14)
        assert first.stop()[0] == 0
    with ServedPolicyProcess('--policy', 'hold', '--protocol', protocol, '--port', str(first.port)) as second:
        client.reset()
        client.set_instruction('hold')
        assert client.predict(observation).shape == (5, 14)
        client.close()
        assert second.stop()[0] == 0


class RowRecorder:
    """Passes the expert through and keeps every row it commanded (at most 50 per query are executed)."""

    def __init__(self, expert) -> None:
        self.expert = expert
        self.rows: list[list[float]] = []

    def __getattr__(self, name):
        return getattr(self.expert, name)

    def predict(self, observation):
        chunk = np.asarray(self.expert.predict(observation), dtype=np.float32)[:50]
        self.rows.extend(chunk.tolist())
        return chunk


def test_a_served_replay_of_the_experts_rows_completes_the_task_like_the_replay_in_process(tmp_path):
    from robofollow_ros.benchmark import registry
    from robofollow_ros.evaluation.episode import run_episode
    from robofollow_ros.evaluation.guard import GuardedPolicy
    from robofollow_ros.sim.env import CellEnv

    task = registry.get_task(TASK)
    recorder = RowRecorder(make_policy('expert'))
    expert = GuardedPolicy.wrap(recorder, privileged=True, name='expert')
    with CellEnv(render=False) as env:
        run_episode(env, expert, task, seed=registry.trial_seed(TASK, 1), layout=registry.layout_of(task))
    expert.close()
    source = tmp_path / 'expert_rows.json'
    source.write_text(json.dumps({'frames': [{'joints': row} for row in recorder.rows]}), encoding='utf-8')
    replay_kwargs = json.dumps({'path': str(source)})

    assert evaluate(tmp_path / 'direct', 'replay', '--policy-kwargs', replay_kwargs) == 0
    with ServedPolicyProcess('--policy', 'replay', '--policy-kwargs', replay_kwargs) as server:
        assert evaluate(tmp_path / 'served', 'openpi', '--policy-kwargs', client_kwargs(server.port)) == 0
    [direct], [served] = records(tmp_path / 'direct'), records(tmp_path / 'served')
    assert direct['completion_ok'] is True and served['policy_error'] is None
    assert {k: v for k, v in direct.items() if k not in LOCAL_ONLY} == {
        k: v for k, v in served.items() if k not in LOCAL_ONLY
    }


def test_a_server_that_stays_down_stops_the_run_and_retry_errors_plays_those_trials_again(tmp_path, capsys):
    port = free_port()
    kwargs = json.dumps({'port': port, 'connect_retries': 1, 'timeout': 60})
    served = ('--policy', 'remote_support:make_wave', '--protocol', 'openpi', '--port', str(port))
    with ServedPolicyProcess(*served, '--policy-kwargs', '{"die_at": 3}'):
        status = evaluate(tmp_path, 'openpi', '--policy-kwargs', kwargs, '--rounds', '6', '--record', 'json')
    assert status == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert f'the policy server at 127.0.0.1:{port} refused connections through 3 trials in a row' in error
    assert 'with 3 trials to go' in error
    first = records(tmp_path)
    assert [record['round'] for record in first] == [1, 2, 3] and all(record['policy_error'] for record in first)
    run = json.loads((tmp_path / 'run.json').read_text(encoding='utf-8'))
    assert run['status'] == 'failed' and 'PolicyServerDownError' in run['reason']

    with ServedPolicyProcess(*served):
        again = ('--rounds', '6', '--record', 'json', '--retry-errors')
        assert evaluate(tmp_path, 'openpi', '--policy-kwargs', kwargs, *again) == 0
    assert '--retry-errors: 3 trials with a policy error run again' in capsys.readouterr().err
    final = records(tmp_path)
    assert sorted(record['round'] for record in final) == [1, 2, 3, 4, 5, 6]
    assert not any(record['policy_error'] for record in final)
    (aside,) = tmp_path.glob('retried-*')
    assert records(aside) == first
    assert all((aside / record['episode_file']).is_file() for record in first)
    assert all((tmp_path / record['episode_file']).is_file() for record in final)
    assert json.loads((tmp_path / 'run.json').read_text(encoding='utf-8'))['status'] == 'complete'


def test_retry_errors_without_failed_trials_changes_nothing(tmp_path):
    with ServedPolicyProcess('--policy', 'remote_support:make_wave', '--protocol', 'openpi') as server:
        kwargs = json.dumps({'port': server.port, 'timeout': 60})
        assert evaluate(tmp_path, 'openpi', '--policy-kwargs', kwargs, '--rounds', '2') == 0
        before = (tmp_path / 'results.jsonl').read_text(encoding='utf-8')
        assert evaluate(tmp_path, 'openpi', '--policy-kwargs', kwargs, '--rounds', '2', '--retry-errors') == 0
    assert (tmp_path / 'results.jsonl').read_text(encoding='utf-8') == before
    assert not list(tmp_path.glob('retried-*'))
