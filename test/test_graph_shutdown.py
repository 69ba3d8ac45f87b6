"""Stopping the graph: Ctrl-C and SIGTERM mid-trial, a node whose launcher dies, a node killed under the graph.

Every node stops cleanly (no traceback, no node that had to be killed), ``run.json`` names what happened, no node
process outlives its launcher, and the run resumes to a complete one whose bags carry their final names.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from graph_helpers import (
    ROOT,
    alive,
    finish,
    graph_env,
    node_pids,
    read_records,
    run_launch,
    start_launch,
    stop_leftovers,
    wait_until,
    where_they_wait,
)

from robofollow_ros.benchmark import registry

pytestmark = pytest.mark.ros

PATTERN = 'L0_pickup_yellow_block'
TASKS = [task.task_id for task in registry.eval_tasks(scene=1, level=0) if PATTERN in task.task_id]
SLOW = {'policy': 'graph_policies:slow_hold', 'policy_kwargs': '{"delay": 0.1}'}
"""About one second per episode (the expert's take 0.2 s): a signal after the first result lands mid-trial."""
UNCLEAN = ('Traceback', '[FATAL]', 'Exception', 'while stopping', 'error:')


@pytest.fixture(autouse=True)
def _no_leftover_launchers():
    yield
    stop_leftovers()


def _records(out: Path) -> list[dict]:
    path = out / 'results.jsonl'
    return read_records(path) if path.exists() else []


def _run_json(out: Path) -> dict:
    return json.loads((out / 'run.json').read_text(encoding='utf-8'))


def _assert_clean(output: str) -> None:
    for mark in UNCLEAN:
        assert mark not in output, f'{mark!r} in the output:\n{output[-4000:]}'


def test_sigint_and_sigterm_mid_trial_stop_every_node_cleanly_and_the_run_resumes(tmp_path) -> None:
    out = tmp_path / 'run'
    task_ids = ','.join(TASKS)

    # Ctrl-C: the terminal signals the whole process group of `robofollow eval` (over the graph).
    command = [sys.executable, '-m', 'robofollow_ros', 'eval', '--policy', SLOW['policy']]
    command += ['--policy-kwargs', SLOW['policy_kwargs'], '--scene', '1', '--level', '0', '--tasks', PATTERN]
    command += ['--record', 'bag', '--out', str(out), '--quiet']
    evaluation = subprocess.Popen(
        command,
        env=graph_env(46),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        wait_until(lambda: len(_records(out)) >= 1, timeout=180, what='a first result')
        nodes = node_pids(evaluation.pid)
        assert set(nodes) == {'sim', 'policy_bridge', 'referee', 'recorder', 'evaluator'}
        os.killpg(evaluation.pid, signal.SIGINT)
        output = finish(evaluation, timeout=60)
    finally:
        if evaluation.poll() is None:
            os.killpg(evaluation.pid, signal.SIGKILL)
            evaluation.communicate()
    assert evaluation.returncode == 130, output[-4000:]
    _assert_clean(output)
    assert output.count('interrupted') == 1, output[-4000:]
    assert 'robofollow eval: interrupted (SIGINT); run the same command again to resume' in output
    wait_until(lambda: not any(alive(pid) for pid in nodes.values()), timeout=10, what='every node to exit')
    run = _run_json(out)
    assert (run['status'], run['reason']) == ('interrupted', 'SIGINT')
    done = len(_records(out))
    assert 1 <= done < len(TASKS)

    # SIGTERM to the launcher alone (as a service manager stops it).
    launcher = start_launch(47, **SLOW, task_ids=task_ids, record='bag', out=str(out))
    wait_until(lambda: len(_records(out)) > done, timeout=180, what='a result of the resumed run')
    nodes = node_pids(launcher.pid)
    launcher.send_signal(signal.SIGTERM)
    output = finish(launcher, timeout=60)
    assert launcher.returncode == 143, output[-4000:]
    _assert_clean(output)
    assert 'robofollow launch: interrupted (SIGTERM)' in output
    wait_until(lambda: not any(alive(pid) for pid in nodes.values()), timeout=10, what='every node to exit')
    run = _run_json(out)
    assert (run['status'], run['reason']) == ('interrupted', 'SIGTERM')

    # The resume completes the run: every trial once, every bag under its final name and nothing hidden left.
    result = run_launch(48, **SLOW, task_ids=task_ids, record='bag', out=str(out))
    assert result.returncode == 0, result.stdout[-4000:]
    _assert_clean(result.stdout)
    assert _run_json(out)['status'] == 'complete'
    records = _records(out)
    assert sorted(record['task_id'] for record in records) == sorted(TASKS)
    episodes = out / 'episodes'
    assert sorted(entry.name for entry in episodes.iterdir()) == sorted(f'{task}__r01' for task in TASKS)
    for record in records:
        _assert_final_bag(out / record['episode_file'])


def _assert_final_bag(bag: Path) -> None:
    """A bag named like an in-process one: ``<stem>/<stem>.mcap`` and a metadata.yaml that names that file."""
    assert sorted(path.name for path in bag.iterdir()) == sorted([f'{bag.name}.mcap', 'metadata.yaml'])
    metadata = yaml.safe_load((bag / 'metadata.yaml').read_text(encoding='utf-8'))
    assert metadata['rosbag2_bagfile_information']['relative_file_paths'] == [f'{bag.name}.mcap']


def test_a_killed_sim_fails_the_run_naming_the_node(tmp_path) -> None:
    launcher = start_launch(49, **SLOW, task_ids=','.join(TASKS), out=str(tmp_path))
    wait_until(lambda: len(_records(tmp_path)) >= 1, timeout=180, what='a first result')
    nodes = node_pids(launcher.pid)
    os.kill(nodes['sim'], signal.SIGKILL)
    output = finish(launcher, timeout=60)
    assert launcher.returncode == 137, output[-4000:]
    assert 'Traceback' not in output and '[FATAL]' not in output, output[-4000:]
    wait_until(lambda: not any(alive(pid) for pid in nodes.values()), timeout=10, what='every node to exit')
    run = _run_json(tmp_path)
    assert (run['status'], run['reason']) == ('failed', 'node sim exited with code -9 (SIGKILL)')


PARENT = """
import subprocess, sys
child = subprocess.Popen(sys.argv[1:])
print(child.pid, flush=True)
child.wait()
"""
WATCHED = """
from robofollow_ros.ros import shutdown
shutdown.set_death_signal = lambda number: False  # as where prctl is not available
shutdown.install_stop_handlers()
print(shutdown.die_with_parent(poll=0.1), flush=True)
shutdown.STOP.wait(60)
raise SystemExit(0 if shutdown.STOP.name == 'SIGTERM' else 1)
"""


def _orphan(command: list[str], *, domain: int, ready: str) -> int:
    """Start ``command`` under a throw-away parent, wait for ``ready`` in its output, SIGKILL the parent; the pid."""
    parent = subprocess.Popen(
        [sys.executable, '-c', PARENT, *command],
        env=graph_env(domain),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        pid = int(parent.stdout.readline())
        lines = []
        for line in parent.stdout:
            lines.append(line)
            if ready in line:
                break
        else:
            raise AssertionError(f'{command} never said {ready!r}:\n{"".join(lines)[-3000:]}')
        parent.kill()
        parent.wait()
    finally:
        if parent.poll() is None:
            parent.kill()
    return pid


def test_a_node_exits_when_its_parent_process_dies() -> None:
    command = [sys.executable, '-m', 'robofollow_ros.nodes.policy_bridge', '--ros-args', '-p', 'policy:=hold']
    pid = _orphan(command, domain=40, ready="policy 'hold' ready")
    try:
        wait_until(lambda: not alive(pid), timeout=15, what='the orphaned policy bridge to exit')
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


WRITES_AFTER_ITS_READER_LEFT = """
import sys
from robofollow_ros.ros import shutdown
if sys.argv[1] == 'protected':
    shutdown.survive_a_lost_reader()
sys.stdin.readline()
for _ in range(100):
    print('progress line' * 100, flush=True)
print('still running', file=sys.stderr, flush=True)
"""


@pytest.mark.parametrize('mode', ['protected', 'plain'])
def test_a_node_whose_output_reader_is_gone_goes_on_without_an_error(mode) -> None:
    # A killed launcher leaves its nodes writing into pipes nobody reads; the write must not end the node's work.
    child = subprocess.Popen(
        [sys.executable, '-c', WRITES_AFTER_ITS_READER_LEFT, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    child.stdout.close()
    child.stdin.write('go\n')
    child.stdin.close()
    error = child.stderr.read()
    assert child.wait(timeout=30) == (0 if mode == 'protected' else 1), error
    assert ('BrokenPipeError' in error) == (mode == 'plain'), error


def test_without_prctl_a_thread_watching_the_parent_stops_the_process() -> None:
    pid = _orphan([sys.executable, '-c', WATCHED], domain=41, ready='watch')
    try:
        wait_until(lambda: not alive(pid), timeout=15, what='the orphaned process to exit')
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


LAUNCH_LIKE = """
import subprocess, sys, tempfile, time, yaml
from pathlib import Path
from robofollow_ros.graph.declaration import graph_environment, graph_instances, load_graph
from robofollow_ros.graph.supervisor import node_command

# Starts the graph's nodes the way ros2 launch does: its own children, their output read through pipes, and no
# death signal of its own. Killed with SIGKILL (as SIGTERM kills the real ros2 launch at once), it orphans them.
graph = load_graph('sim', dict(item.split(':=', 1) for item in sys.argv[1:]))
folder = Path(tempfile.mkdtemp())
for instance in graph_instances(graph, base=0):
    node = instance.node
    params = folder / f'{node.name}.yaml'
    params.write_text(yaml.safe_dump({node.name: {'ros__parameters': node.parameters}}))
    process = subprocess.Popen(node_command(node, params), env=graph_environment(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    print(node.name, process.pid, flush=True)
time.sleep(600)
"""


def test_nodes_orphaned_by_a_killed_launcher_exit_and_the_run_says_sigterm(tmp_path) -> None:
    arguments = [f'{k}:={v}' for k, v in {**SLOW, 'task_ids': ','.join(TASKS), 'out': str(tmp_path)}.items()]
    launcher = subprocess.Popen(
        [sys.executable, '-c', LAUNCH_LIKE, *arguments],
        env=graph_env(39),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    nodes: dict[str, str] = {}
    try:
        nodes = dict(launcher.stdout.readline().split() for _ in range(4))
        wait_until(lambda: len(_records(tmp_path)) >= 1, timeout=180, what='a first result')
        launcher.kill()
        launcher.wait()
        pids = {name: int(pid) for name, pid in nodes.items()}
        wait_until(
            lambda: not any(alive(pid) for pid in pids.values()),
            timeout=30,
            what='the orphaned nodes to exit',
            detail=lambda: f'still running: {where_they_wait(pids)}',
        )
    finally:
        for pid in nodes.values():
            if alive(int(pid)):
                os.kill(int(pid), signal.SIGKILL)
    run = _run_json(tmp_path)
    assert (run['status'], run['reason']) == ('interrupted', 'SIGTERM')


HANGING_STOP = """
import os, signal, sys, time
from robofollow_ros.ros import shutdown
if sys.argv[1] == 'orphan':
    shutdown._PARENT_AT_START = -1  # as if the launcher that started this node were gone
shutdown.ORPHAN_EXIT_SECONDS = 0.5
shutdown.install_stop_handlers()
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(float(sys.argv[2]))  # a shutdown that hangs (or takes this long)
"""


def test_an_orphaned_node_whose_shutdown_hangs_ends_itself_and_one_with_a_launcher_does_not() -> None:
    # CI once saw an orphaned evaluator wait 30 s in Fast DDS's threads after its launcher was killed: nobody is left
    # to SIGKILL it. A node with its launcher alive is left to the launcher's own escalation.
    orphan = subprocess.run(
        [sys.executable, '-c', HANGING_STOP, 'orphan', '60'], cwd=ROOT, timeout=30, capture_output=True, text=True
    )
    assert orphan.returncode == 128 + signal.SIGTERM, orphan.stderr
    child = subprocess.run(
        [sys.executable, '-c', HANGING_STOP, 'child', '1.5'], cwd=ROOT, timeout=30, capture_output=True, text=True
    )
    assert child.returncode == 0, child.stderr
