"""The supervisor stops nodes at any moment: while they start (no traceback, nothing reported), after a clean
completion that a busy machine slows down (not killed), and still kills and reports a node that does not stop; the
Fast DDS shared-memory segments of a killed node do not outlive the graph."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys

import pytest
from graph_helpers import ROOT, graph_env, wait_until

from robofollow_ros.graph.shared_memory import SHM_DIR, in_use, remove_abandoned

pytestmark = pytest.mark.ros

NOMINAL_DOMAIN = 19
SLOW_IMPORTS = ROOT / 'test' / 'slow_imports'
EXIT_GRACE = 15.0
"""The supervisor's grace for a node that is exiting, shortened for the test (``slow_exit`` takes 7 s)."""

SUPERVISE = """
import json, sys
from robofollow_ros.graph import supervisor
from stopping_nodes import graph

supervisor.EXIT_GRACE_SECONDS = float(sys.argv[2])
print('supervising', flush=True)
raise SystemExit(supervisor.Supervisor(graph(sys.argv[1]), environment=json.loads(sys.argv[3])).run())
"""


def _supervise(graph: str, nodes: dict[str, str]) -> subprocess.Popen[str]:
    """A supervisor of ``graph`` (``stopping_nodes.graph``) in a new session, its nodes with ``nodes`` on top of the
    graph environment; returns once it runs."""
    process = subprocess.Popen(
        [sys.executable, '-c', SUPERVISE, graph, str(EXIT_GRACE), json.dumps(nodes)],
        env=graph_env(NOMINAL_DOMAIN),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == 'supervising'
    return process


def _finish(process: subprocess.Popen[str], timeout: float) -> str:
    try:
        return process.communicate(timeout=timeout)[0]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()


@pytest.mark.parametrize(
    ('signal_name', 'where', 'to_group'),
    [
        ('SIGINT', 'rclpy', True),  # Ctrl-C: the terminal signals the supervisor and every node at once
        ('SIGTERM', 'rclpy', False),  # a service manager stops the supervisor alone
        ('SIGINT', ':startup', True),  # before the interpreter reached any code of the project
    ],
)
def test_a_node_stopped_while_it_starts_exits_silently(tmp_path, signal_name, where, to_group) -> None:
    starting = tmp_path / 'starting'
    nodes = {
        'PYTHONPATH': os.pathsep.join([str(SLOW_IMPORTS), graph_env(NOMINAL_DOMAIN)['PYTHONPATH']]),
        'ROBOFOLLOW_TEST_SLOW_IMPORT': where,
        'ROBOFOLLOW_TEST_STARTING': str(starting),
    }
    process = _supervise('starting', nodes)
    wait_until(starting.exists, timeout=120, what=f'the referee node to reach {where}', poll=0.01)
    number = signal.Signals[signal_name]
    if to_group:
        os.killpg(process.pid, number)
    else:
        process.send_signal(number)
    output = _finish(process, timeout=60)
    assert process.returncode == 128 + number, output
    for mark in ('Traceback', 'KeyboardInterrupt', 'while stopping'):
        assert mark not in output, output


def test_a_clean_exit_slower_than_the_stop_grace_is_not_killed_and_a_node_that_does_not_stop_is(tmp_path) -> None:
    process = _supervise('completion', {'ROBOFOLLOW_TEST_READY': str(tmp_path)})
    output = _finish(process, timeout=120)
    assert process.returncode == 0, output
    assert 'node slow_exit' not in output, output
    stuck = 'node stuck exited with code -9 (SIGKILL) while stopping (killed: it had not begun to exit 5 s after'
    hung = 'node hung exited with code -9 (SIGKILL) while stopping (killed: still exiting '
    assert stuck in output and hung in output, output
    assert 'Traceback' not in output, output
    # The killed participants' shared-memory segments (16 MiB each) are gone with them.
    by_node = {node: (tmp_path / node).read_text(encoding='utf-8').split() for node in ('stuck', 'hung')}
    assert all(by_node.values()), by_node  # one segment each, two with LOCALHOST discovery (rmw adds its own)
    held = [lock for locks in by_node.values() for lock in locks]
    left = [lock for lock in held if (SHM_DIR / lock).exists() or (SHM_DIR / lock.removesuffix('_el')).exists()]
    assert not left, left


def test_only_segments_that_nobody_holds_are_removed_and_ports_are_left_alone(tmp_path) -> None:
    def make(*names: str) -> None:
        for name in names:
            (tmp_path / name).write_bytes(b'')

    make('fastdds_0123456789abcdef', 'fastdds_0123456789abcdef_el')  # a killed participant's segment
    make('fastrtps_00000000000000ff', 'fastrtps_00000000000000ff_el')  # Fast DDS 2, killed
    make('fastdds_fedcba9876543210', 'fastdds_fedcba9876543210_el')  # a live participant's segment
    make('fastdds_1111111111111111', 'fastdds_1111111111111111_el')  # abandoned, but not one of ours
    make('fastdds_port7411', 'fastdds_port7411_el', 'sem.fastdds_port7411_mutex')  # a port: any process may open it
    live = os.open(tmp_path / 'fastdds_fedcba9876543210_el', os.O_RDONLY)
    try:
        fcntl.flock(live, fcntl.LOCK_EX | fcntl.LOCK_NB)
        ours = ['fastdds_0123456789abcdef_el', 'fastrtps_00000000000000ff_el', 'fastdds_fedcba9876543210_el']
        removed = remove_abandoned([*ours, 'fastdds_port7411_el', 'not_fast_dds_el'], shm_dir=tmp_path)
        assert in_use('fastdds_fedcba9876543210', shm_dir=tmp_path)
    finally:
        os.close(live)
    assert sorted(path.name for path in removed) == [
        'fastdds_0123456789abcdef',
        'fastdds_0123456789abcdef_el',
        'fastrtps_00000000000000ff',
        'fastrtps_00000000000000ff_el',
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        'fastdds_1111111111111111',
        'fastdds_1111111111111111_el',
        'fastdds_fedcba9876543210',
        'fastdds_fedcba9876543210_el',
        'fastdds_port7411',
        'fastdds_port7411_el',
        'sem.fastdds_port7411_mutex',
    ]
