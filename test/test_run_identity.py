"""Run identity, the folder lock and run.json: results of different runs never mix, and run.json stays true."""

from __future__ import annotations

import json
import os
import signal
from typing import get_args

import eval_process
import pytest

from robofollow_ros.benchmark.types import Variant
from robofollow_ros.cli import main
from robofollow_ros.evaluation import suite
from robofollow_ros.evaluation.identity import RunIdentity
from robofollow_ros.evaluation.lock import RunLock

pytestmark = pytest.mark.sim

TASKS = 'L0_pickup_yellow_block_[23]'
HOLD = 'policy_doubles:HoldingPolicy'


def eval_args(out, *extra, policy=HOLD):
    return ['eval', '--in-process', '--policy', policy, '--tasks', TASKS, '--out', str(out), '--quiet', *extra]


def sleeping(seconds, *, thinking=None):
    """Options that make the sandboxed HOLD policy think ``seconds`` per query (and touch ``thinking`` as it starts:
    the file lies in the ``--policy-scratch`` folder, the one place the policy may write)."""
    values = {'sleep': seconds}
    options = []
    if thinking is not None:
        values['thinking'] = str(thinking)
        options = ['--policy-scratch', str(thinking.parent)]
    return [*options, '--policy-kwargs', json.dumps(values)]


def one_line(err):
    assert err.count('\n') == 1 and 'Traceback' not in err, err
    return err


def identity(**changes):
    base = {
        'policy': 'hold',
        'privileged': False,
        'variant': 'published',
        'max_queries': 10,
        'actions_per_query': 50,
        'query_timeout': 300.0,
        'package_version': '0.1.0',
        'metric_version': 'm1',
        'policy_kwargs': {'ckpt': 'a'},
    }
    return RunIdentity(**{**base, **changes})


def test_identity_digest_is_stable_and_every_field_counts():
    assert identity().digest == identity().digest
    assert RunIdentity.from_dict(identity().as_dict(), source='x') == identity()
    for change in ({'policy_kwargs': {'ckpt': 'b'}}, {'max_queries': 5}, {'variant': 'corrected'}, {'policy': 'x'}):
        assert identity(**change).digest != identity().digest
    assert identity().differences(identity(max_queries=5, policy_kwargs={'ckpt': 'b'})) == [
        'max_queries 10 there vs 5 here',
        'policy_kwargs {"ckpt": "a"} there vs {"ckpt": "b"} here',
    ]


@pytest.mark.parametrize(
    ('change', 'named'),
    [
        (['--max-queries', '3'], 'max_queries 10 there vs 3 here'),
        (['--policy-kwargs', '{"rows": 5}'], 'policy_kwargs {} there vs {"rows": 5} here'),
        (['--query-timeout', '9'], 'query_timeout 300.0 there vs 9.0 here'),
    ],
)
def test_resuming_with_another_identity_is_refused_in_one_line(tmp_path, capsys, change, named):
    out = tmp_path / 'run'
    assert main(eval_args(out)) == 0
    before = (out / 'results.jsonl').read_bytes()
    capsys.readouterr()
    assert main(eval_args(out, *change)) == 2
    err = one_line(capsys.readouterr().err)
    assert named in err and '--force-new' in err and 'new --out' in err
    assert (out / 'results.jsonl').read_bytes() == before


def test_resuming_with_another_variant_is_refused(tmp_path, capsys):
    out = tmp_path / 'run'
    assert main(eval_args(out)) == 0
    default = json.loads((out / 'identity.json').read_text(encoding='utf-8'))['variant']
    other = next(variant for variant in get_args(Variant) if variant != default)
    capsys.readouterr()
    assert main(eval_args(out, '--variant', other)) == 2
    assert f'variant "{default}" there vs "{other}" here' in one_line(capsys.readouterr().err)


def test_another_policy_is_refused_and_force_new_sets_the_old_run_aside(tmp_path, capsys):
    out = tmp_path / 'run'
    assert main(eval_args(out)) == 0
    old = (out / 'results.jsonl').read_text(encoding='utf-8')
    assert main(eval_args(out, policy='hold')) == 2
    assert 'policy "policy_doubles:HoldingPolicy" there vs "hold" here' in capsys.readouterr().err
    assert main(eval_args(out, '--force-new', policy='hold')) == 0
    [aside] = list(out.glob('superseded-*'))
    assert (aside / 'results.jsonl').read_text(encoding='utf-8') == old
    assert json.loads((aside / 'identity.json').read_text())['policy'] == HOLD
    new = eval_process.result_lines(out)
    assert [r['policy'] for r in new] == ['hold', 'hold']
    assert {r['run_id'] for r in new} == {json.loads((out / 'run.json').read_text())['run_id']}


def test_records_without_an_identity_are_not_resumed(tmp_path, capsys):
    out = tmp_path / 'run'
    assert main(eval_args(out)) == 0
    (out / 'identity.json').unlink()
    lines = (out / 'results.jsonl').read_text(encoding='utf-8').splitlines()
    legacy = [json.dumps({k: v for k, v in json.loads(line).items() if k != 'run_id'}) for line in lines]
    (out / 'results.jsonl').write_text('\n'.join(legacy) + '\n', encoding='utf-8')
    assert main(eval_args(out)) == 2
    assert 'records written without this run identity' in capsys.readouterr().err


def test_a_busy_folder_is_refused_and_a_dead_holder_is_taken_over(tmp_path, capsys):
    out = tmp_path / 'run'
    out.mkdir()
    with RunLock(out):
        assert main(eval_args(out)) == 2
        err = capsys.readouterr().err
        assert f'is in use by another run (pid {os.getpid()}' in err and err.count('\n') == 1
        assert not (out / 'results.jsonl').exists()
    (out / '.lock').write_text('{"pid": 999999, "host": "gone", "since": "yesterday"}\n', encoding='utf-8')
    assert main(eval_args(out)) == 0
    assert len(eval_process.result_lines(out)) == 2


def test_two_concurrent_runs_into_one_folder_write_every_trial_once(tmp_path):
    out = tmp_path / 'run'
    first = eval_process.start(eval_args(out, *sleeping(0.5)))
    eval_process.wait_for_file(out / 'run.json', first)
    second = eval_process.run(eval_args(out, *sleeping(0.5)))
    assert first.poll() is None, 'the first run must still be running while the second starts'
    assert second.returncode == 2
    assert second.stderr.count('\n') == 1 and f'in use by another run (pid {first.pid}' in second.stderr
    assert first.wait(timeout=300) == 0
    keys = [(r['task_id'], r['round']) for r in eval_process.result_lines(out)]
    assert sorted(keys) == sorted(set(keys)) and len(keys) == 2


@pytest.mark.parametrize(('signal_number', 'status'), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_leaves_run_json_interrupted_and_the_run_resumes(tmp_path, signal_number, status):
    out = tmp_path / 'run'
    process = eval_process.start(eval_args(out, *sleeping(0.2)))
    eval_process.wait_for_records(out, 1, process)
    process.send_signal(signal_number)
    _, err = process.communicate(timeout=120)
    assert process.returncode == status
    name = signal.Signals(signal_number).name
    assert err.strip().splitlines() == [f'robofollow eval: interrupted ({name}); run the same command again to resume']
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    written = eval_process.result_lines(out)
    assert run['status'] == 'interrupted' and run['reason'] == name
    assert run['completed_trials'] == len(written) >= 1 and run['expected_trials'] == 2
    assert main(eval_args(out, *sleeping(0.2))) == 0
    assert len(eval_process.result_lines(out)) == 2
    assert json.loads((out / 'run.json').read_text(encoding='utf-8'))['status'] == 'complete'


def test_an_error_leaves_run_json_failed_with_the_reason(tmp_path, monkeypatch):
    out = tmp_path / 'run'

    def broken_disk(*args, **kwargs):
        raise OSError(28, 'No space left on device')

    monkeypatch.setattr(suite, 'save_episode', broken_disk)
    with pytest.raises(OSError):
        main(eval_args(out, '--record', 'json'))
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    assert run['status'] == 'failed' and 'No space left on device' in run['reason']
    assert run['completed_trials'] == 0


def test_out_of_range_options_are_refused_up_front(tmp_path, capsys):
    a_file = tmp_path / 'file'
    a_file.write_text('x', encoding='utf-8')
    cases = [
        (eval_args(tmp_path / 'a', '--max-queries', '0'), '--max-queries'),
        (eval_args(tmp_path / 'b', '--query-timeout', '0'), '--query-timeout'),
        (eval_args(tmp_path / 'c', '--rounds', '0'), '--rounds'),
        (eval_args(a_file), 'is a file, not a folder'),
        (eval_args(a_file / 'below'), 'cannot create --out'),
        (eval_args(tmp_path / 'd', policy='telepathy'), "unknown policy 'telepathy'"),
    ]
    for args, message in cases:
        assert main(args) == 2
        err = capsys.readouterr().err
        assert message in err and err.count('\n') == 1, err
    assert not any((tmp_path / name).exists() for name in 'abcd')


def test_report_refuses_to_merge_runs_of_different_policies(tmp_path, capsys):
    hold, other = tmp_path / 'hold', tmp_path / 'other'
    assert main(eval_args(hold, policy='hold')) == 0
    assert main(eval_args(other)) == 0
    capsys.readouterr()
    assert main(['report', str(hold / 'results.jsonl'), str(other / 'results.jsonl'), '--out', str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert 'hold records of 2 different runs' in err and 'hold run' in err and err.count('\n') == 1
    assert main(['report', str(hold / 'results.jsonl'), str(hold / 'results.jsonl'), '--out', str(tmp_path)]) == 0


def test_ctrl_c_while_the_policy_is_thinking_stops_without_waiting_for_it(tmp_path):
    out = tmp_path / 'run'
    thinking = tmp_path / 'scratch' / 'thinking'
    thinking.parent.mkdir()
    process = eval_process.start(eval_args(out, *sleeping(600, thinking=thinking)))
    eval_process.wait_for_file(thinking, process)  # written by predict itself: the policy is thinking now
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)  # a run that waited for the policy would hang for 600 s
    assert process.returncode == 130 and 'interrupted (SIGINT)' in err
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    assert run['status'] == 'interrupted' and run['completed_trials'] == 0
