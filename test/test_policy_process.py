"""A user policy runs in its own sandboxed process: it reaches nothing of the simulator, and its death, hunger and
hangs are recorded failures of one trial; ``--trusted-policy`` runs it in-process and every file says so.

The policies here report through files in a ``--policy-scratch`` folder, the one place a sandboxed policy may write.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import eval_process
import numpy as np
import pytest
from graph_helpers import alive, wait_until

from robofollow_ros.cli import main
from robofollow_ros.evaluation.identity import read_identity
from robofollow_ros.referee.trajectory_json import load_trajectory

pytestmark = pytest.mark.sim

TASK = 'L0_pickup_yellow_block_2'
TWO_TASKS = 'L0_pickup_yellow_block_[23]'


def evaluate(out, policy, *extra, tasks=TASK):
    args = ['eval', '--in-process', '--policy', policy, '--tasks', tasks, '--out', str(out), '--quiet', *extra]
    assert main(args) == 0
    lines = (out / 'results.jsonl').read_text(encoding='utf-8').splitlines()
    return [json.loads(line) for line in lines], json.loads((out / 'run.json').read_text(encoding='utf-8'))


def kwargs(**values):
    return ['--policy-kwargs', json.dumps(values)]


def scratch_of(tmp_path):
    """A ``--policy-scratch`` folder and its option."""
    scratch = tmp_path / 'scratch'
    scratch.mkdir(exist_ok=True)
    return scratch, ['--policy-scratch', str(scratch)]


def sandbox_processes(scratch):
    """The processes of the sandboxes bound to ``scratch`` (bwrap names it) and everything they started."""
    from pathlib import Path

    parents: dict[int, int] = {}
    roots = set()
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / 'cmdline').read_bytes()
            parents[int(entry.name)] = int((entry / 'stat').read_text().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if str(scratch).encode() in command and command.split(b'\0')[0].endswith(b'bwrap'):
            roots.add(int(entry.name))
    found = set(roots)
    while grown := {pid for pid, parent in parents.items() if parent in found and pid not in found}:
        found |= grown
    return sorted(found)


def object_positions(out, record):
    return load_trajectory(out / record['episode_file']).trajectory.obj_pos


def test_a_policy_searching_its_process_finds_no_simulator_task_or_referee_and_moves_nothing(tmp_path):
    scratch, option = scratch_of(tmp_path)
    report = scratch / 'snoop.jsonl'
    baseline, _ = evaluate(tmp_path / 'hold', 'policy_doubles:HoldingPolicy', '--record', 'json')
    records, run = evaluate(
        tmp_path / 'snoop', 'policy_doubles:Snooper', '--record', 'json', *option, *kwargs(report=str(report))
    )
    [entry] = [json.loads(line) for line in report.read_text(encoding='utf-8').splitlines()]
    assert entry['found'] == [] and entry['lifted'] == 0
    assert entry['modules'] == [], 'the policy process imported the simulator, evaluator, task registry or referee'
    assert entry['pid'] != os.getpid()
    [record], [reference] = records, baseline
    assert record['policy_error'] is None and record['isolation'] == 'sandbox' and run['isolation'] == 'sandbox'
    moved, still = object_positions(tmp_path / 'snoop', record), object_positions(tmp_path / 'hold', reference)
    assert sorted(moved) == sorted(still)
    for name in still:
        np.testing.assert_allclose(moved[name], still[name], atol=1e-9, err_msg=name)


def test_in_worker_processes_the_policy_has_its_own_process_too(tmp_path):
    scratch, option = scratch_of(tmp_path)
    report = scratch / 'snoop.jsonl'
    args = ('--workers', '2', *option, *kwargs(report=str(report)))
    records, _ = evaluate(tmp_path / 'run', 'policy_doubles:Snooper', *args, tasks=TWO_TASKS)
    entries = [json.loads(line) for line in report.read_text(encoding='utf-8').splitlines()]
    assert len(entries) == 2 and all(entry['found'] == [] and entry['modules'] == [] for entry in entries)
    assert all(record['isolation'] == 'sandbox' and record['policy_error'] is None for record in records)


@pytest.mark.parametrize(('how', 'ended'), [('exit', 'exit code 7'), ('signal', 'killed by SIGKILL')])
def test_a_policy_that_kills_its_process_is_a_crash_of_one_trial_and_the_run_completes(tmp_path, capsys, how, ended):
    scratch, option = scratch_of(tmp_path)
    marker = scratch / 'exited'
    policy_kwargs = [*option, *kwargs(marker=str(marker), how=how)]
    records, run = evaluate(tmp_path / 'run', 'policy_doubles:ExitsOnce', *policy_kwargs, tasks=TWO_TASKS)
    first, second = records
    assert first['error_kind'] == 'crash' and ended in first['policy_error']
    assert 'during predict' in first['policy_error'] and first['queries'] == 0
    assert second['policy_error'] is None and second['queries'] == 10
    assert int(marker.read_text()) != os.getpid()
    assert run['status'] == 'complete' and run['counts']['errors_by_kind'] == {'crash': 1}
    assert '1 with policy errors (crash 1)' in capsys.readouterr().out


def test_a_policy_past_its_memory_limit_is_a_recorded_failure(tmp_path):
    records, run = evaluate(
        tmp_path / 'run', 'policy_doubles:Hog', '--policy-memory-limit', '256', *kwargs(mebibytes=1024)
    )
    [record] = records
    assert record['error_kind'] == 'memory', record['policy_error']
    assert 'at most 256 MiB' in record['policy_error'] and 'MemoryError' in record['policy_error']
    assert run['status'] == 'complete' and run['options']['policy_memory_limit'] == 256


def test_a_hanging_policy_process_is_killed_at_its_deadline(tmp_path):
    scratch, option = scratch_of(tmp_path)
    pids = scratch / 'pids'
    records, run = evaluate(
        tmp_path / 'run',
        'policy_doubles:Hangs',
        '--query-timeout',
        '1',
        *option,
        *kwargs(pids=str(pids)),
        tasks=TWO_TASKS,
    )
    assert [record['error_kind'] for record in records] == ['timeout', 'timeout']
    assert all('policy process killed' in record['policy_error'] for record in records)
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 2 and os.getpid() not in started
    assert sandbox_processes(scratch) == [], 'a killed policy left processes of its sandbox behind'
    assert run['status'] == 'complete'


def test_trusted_policy_runs_in_process_and_every_file_says_so(tmp_path):
    pids = tmp_path / 'pids'
    out = tmp_path / 'run'
    [record], run = evaluate(out, 'policy_doubles:WhereAmI', '--trusted-policy', *kwargs(pids=str(pids)))
    assert [int(line.split()[0]) for line in pids.read_text().splitlines()] == [os.getpid()]
    assert record['isolation'] == 'trusted' and run['isolation'] == 'trusted'
    assert run['identity']['isolation'] == 'trusted' and read_identity(out).isolation == 'trusted'
    assert main(['report', str(out / 'results.jsonl'), '--out', str(out / 'report')]) == 0
    heading = (out / 'report' / 'summary.md').read_text(encoding='utf-8').splitlines()[0]
    assert heading.startswith('Policy policy_doubles:WhereAmI (not privileged; in-process, trusted) · run ')


def test_trusted_and_isolated_runs_of_one_policy_are_different_runs(tmp_path, capsys):
    out = tmp_path / 'run'
    evaluate(out, 'policy_doubles:HoldingPolicy')
    assert (
        main(
            [
                'eval',
                '--in-process',
                '--policy',
                'policy_doubles:HoldingPolicy',
                '--tasks',
                TASK,
                '--out',
                str(out),
                '--quiet',
                '--trusted-policy',
            ]
        )
        == 2
    )
    assert 'isolation "sandbox" there vs "trusted" here' in ' '.join(capsys.readouterr().err.split())


def test_the_isolated_policy_sees_what_an_in_process_one_sees(tmp_path):
    """The same observation reaches the policy in its own process: three read-only images, the float32 state."""
    scratch, option = scratch_of(tmp_path)
    report = scratch / 'seen.jsonl'
    records, _ = evaluate(
        tmp_path / 'run', 'policy_doubles:Describer', '--max-queries', '2', *option, *kwargs(report=str(report))
    )
    seen = [json.loads(line) for line in report.read_text(encoding='utf-8').splitlines()]
    assert len(seen) == 2 and records[0]['policy_error'] is None
    for entry in seen:
        assert entry['type'] == 'robofollow_ros.policy.observation.Observation'
        assert entry['images'] == {name: [[240, 320, 3], 'uint8', False] for name in entry['images']}
        assert sorted(entry['images']) == ['cam_high', 'cam_left_wrist', 'cam_right_wrist']
        assert entry['state'] == [[14], 'float32', False]
        assert entry['instruction'] == records[0]['instruction']
        assert entry['pid'] != os.getpid()


@pytest.mark.parametrize('stop', [signal.SIGINT, signal.SIGKILL])
def test_a_policy_process_does_not_outlive_its_evaluator(tmp_path, stop):
    """Ctrl-C stops the run at once and kills the busy policy; a killed evaluator's policy exits by itself."""
    scratch, option = scratch_of(tmp_path)
    pids = scratch / 'pids'
    out = tmp_path / 'run'
    args = ['eval', '--in-process', '--policy', 'policy_doubles:Hangs', '--tasks', TASK, '--out', str(out), '--quiet']
    process = eval_process.start([*args, *option, *kwargs(pids=str(pids))], PYTHONFAULTHANDLER='1')
    wait_until(lambda: pids.exists() and pids.read_text().strip(), timeout=120, what='the first query')
    time.sleep(0.5)  # the evaluator now waits for the answer
    sandboxed = sandbox_processes(scratch)
    assert len(sandboxed) >= 3 and process.pid not in sandboxed, sandboxed  # bwrap, its init, the policy
    process.send_signal(stop)
    try:
        _, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)  # PYTHONFAULTHANDLER: the stacks of a run that did not stop
        raise AssertionError(f'the run did not stop: {process.communicate()[1][-6000:]}') from None
    if stop == signal.SIGINT:
        assert process.returncode == 130 and 'interrupted (SIGINT)' in err
        assert not any(alive(pid) for pid in sandboxed), 'the interrupted run left its policy process behind'
    else:
        wait_until(lambda: not any(alive(pid) for pid in sandboxed), timeout=10, what='the orphaned policy to exit')


def test_images_reach_the_policy_process_inside_the_frames_where_there_is_no_shared_memory(tmp_path, monkeypatch):
    """The fallback for platforms without ``memfd_create``: the same observation, sent through the pipe."""
    from types import SimpleNamespace

    from robofollow_ros.evaluation.guard import GuardedPolicy
    from robofollow_ros.policy.factory import resolve_policy
    from robofollow_ros.policy.isolation.sandbox import SandboxOptions
    from robofollow_ros.policy.isolation.shared_images import SharedImages

    monkeypatch.setattr(SharedImages, 'available', staticmethod(lambda: False))
    report = tmp_path / 'seen.jsonl'
    factory = resolve_policy('policy_doubles:Describer', kwargs={'report': str(report)})
    policy = GuardedPolicy(factory, timeout=60, sandbox=SandboxOptions(scratch=tmp_path))
    try:
        images = {name: np.full((4, 6, 3), index, dtype=np.uint8) for index, name in enumerate(('a', 'b'))}
        chunk = policy.predict(SimpleNamespace(images=images, state=np.arange(14.0)), max_rows=50)
    finally:
        policy.close()
    np.testing.assert_array_equal(chunk, np.tile(np.arange(14.0, dtype=np.float32), (3, 1)))
    [entry] = [json.loads(line) for line in report.read_text(encoding='utf-8').splitlines()]
    assert entry['images'] == {'a': [[4, 6, 3], 'uint8', False], 'b': [[4, 6, 3], 'uint8', False]}
    assert entry['sums'] == {'a': 0, 'b': 72}
    assert entry['pid'] != os.getpid() and policy.pid != os.getpid()


def test_the_evaluator_never_imports_the_policy_module_and_a_missing_factory_is_a_build_failure(tmp_path, capsys):
    """Only the top-level package is looked for here (nothing of it runs); the rest surfaces in the policy's process."""
    assert main(['eval', '--in-process', '--policy', 'no_such_module_xyz:make', '--out', str(tmp_path / 'x')]) == 2
    assert "cannot import policy module 'no_such_module_xyz'" in capsys.readouterr().err
    records, run = evaluate(tmp_path / 'run', 'policy_doubles:NoSuchFactory')
    [record] = records
    assert (
        record['error_kind'] == 'build' and "module 'policy_doubles' has no 'NoSuchFactory'" in record['policy_error']
    )
    assert run['status'] == 'complete'
