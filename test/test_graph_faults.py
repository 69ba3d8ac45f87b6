"""Faults of the node graph, each over real DDS: bad chunks, a killed evaluator, a killed sim, SIGTERM, bad input."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from graph_helpers import (
    ROOT,
    alive,
    finish,
    graph_env,
    node_pids,
    read_records,
    run_launch,
    start_launch,
    wait_until,
)

from robofollow_ros.bags import load_episode
from robofollow_ros.benchmark import registry

pytestmark = pytest.mark.ros

SHORT_TASK = 'L0_pickup_yellow_block_1_left'
SCENE1 = ','.join(task.task_id for task in registry.eval_tasks(scene=1, level=0)[:8])


def _results(out: Path) -> list[dict]:
    path = out / 'results.jsonl'
    return read_records(path) if path.exists() else []


@pytest.mark.parametrize(
    ('domain', 'policy', 'executed', 'reason'),
    [
        (30, 'graph_policies:nan_policy', 0, 'non-finite value at row 2, column 3'),
        (31, 'graph_policies:hold_then_out_of_limits', 10, 'outside its limits'),
        (32, 'graph_policies:hold_then_too_fast', 10, 'right_shoulder by 1.0000 in one row'),
    ],
)
def test_a_bad_chunk_is_rejected_and_the_arms_do_not_move(domain, policy, executed, reason, tmp_path) -> None:
    result = run_launch(domain, policy=policy, task_ids=SHORT_TASK, record='bag', out=str(tmp_path))
    assert result.returncode == 0, result.stdout[-4000:]
    (record,) = read_records(tmp_path / 'results.jsonl')
    assert reason in record['policy_error']
    assert record['executed_rows'] == executed and record['queries'] == (1 if executed else 0)
    assert 'holding the arms' in result.stdout
    recording = load_episode(tmp_path / record['episode_file'])
    assert len(recording.trajectory) == executed + 1
    joints = recording.joint_positions
    assert np.abs(joints - joints[0]).max() < 0.01


def test_a_killed_evaluator_restarts_without_losing_or_repeating_a_trial(tmp_path) -> None:
    launcher = start_launch(33, policy='expert', task_ids=SCENE1, out=str(tmp_path))
    wait_until(lambda: len(_results(tmp_path)) >= 2, timeout=120, what='two results')
    os.kill(node_pids(launcher.pid)['evaluator'], signal.SIGKILL)
    output = finish(launcher)
    assert launcher.returncode != 0, output[-3000:]
    done_before = len(_results(tmp_path))
    assert 2 <= done_before < 8
    result = run_launch(33, policy='expert', task_ids=SCENE1, out=str(tmp_path))
    assert result.returncode == 0, result.stdout[-4000:]
    keys = [(record['task_id'], record['round']) for record in _results(tmp_path)]
    assert sorted(keys) == sorted({(task_id, 1) for task_id in SCENE1.split(',')})


def test_a_killed_sim_stops_the_graph_with_a_clear_error_and_no_orphans(tmp_path) -> None:
    launcher = start_launch(34, policy='expert', task_ids=SCENE1, out=str(tmp_path))
    wait_until(lambda: len(_results(tmp_path)) >= 1, timeout=120, what='a first result')
    nodes = node_pids(launcher.pid)
    os.kill(nodes['sim'], signal.SIGKILL)
    output = finish(launcher)
    assert launcher.returncode != 0
    assert 'error: required node sim exited with code 137' in output
    wait_until(lambda: not any(alive(pid) for pid in nodes.values()), timeout=10, what='every node to exit')


def test_sigterm_stops_every_node(tmp_path) -> None:
    launcher = start_launch(35, policy='expert', task_ids=SCENE1, out=str(tmp_path))
    wait_until(lambda: len(_results(tmp_path)) >= 1, timeout=120, what='a first result')
    nodes = node_pids(launcher.pid)
    assert set(nodes) == {'sim', 'policy_bridge', 'referee', 'evaluator'}
    launcher.send_signal(signal.SIGTERM)
    output = finish(launcher)
    assert 'SIGTERM: stopping the graph' in output
    wait_until(lambda: not any(alive(pid) for pid in nodes.values()), timeout=10, what='every node to exit')
    run = (tmp_path / 'run.json').read_text()
    assert '"status": "interrupted"' in run


PUBLISH_GARBAGE = """
import sys
import rclpy
from rclpy.executors import SingleThreadedExecutor
from robofollow_interfaces.msg import EpisodeSpec, Result
from robofollow_ros.ros import qos
rclpy.init()
node = rclpy.create_node('garbage')
publisher = node.create_publisher(EpisodeSpec, '/robofollow/episode', qos.LATCHED)
results = []
node.create_subscription(Result, '/robofollow/result', results.append, qos.EVENTS)
executor = SingleThreadedExecutor()
executor.add_node(node)
for _ in range(900):
    executor.spin_once(timeout_sec=0.1)
    if results and publisher.get_subscription_count() >= 2:
        break
else:
    sys.exit('no result on /robofollow/result, or not the bridge and referee on /robofollow/episode, in 90 s')
valid = dict(episode_id='garbage', task_id='no_such_task', variant='published', layout='default', seed=0, round=1,
             arm='left', level='L0', instruction='x')
for message in (EpisodeSpec(**valid, version=7), EpisodeSpec(**valid, version=1), EpisodeSpec(version=1)):
    publisher.publish(message)
    for _ in range(2):
        executor.spin_once(timeout_sec=0.1)
"""


def test_a_malformed_episode_message_is_logged_and_the_nodes_stay_up(tmp_path) -> None:
    # A policy that takes 0.1 s per query keeps the graph busy (~1 s per episode) until the garbage arrives: the
    # expert's episodes now take ~0.2 s, so its eight could end before the garbage publisher has even matched.
    slow = {'policy': 'graph_policies:slow_hold', 'policy_kwargs': '{"delay": 0.1}'}
    launcher = start_launch(36, **slow, task_ids=SCENE1, out=str(tmp_path))
    subprocess.run([sys.executable, '-c', PUBLISH_GARBAGE], env=graph_env(36), cwd=ROOT, check=True, timeout=120)
    output = finish(launcher, timeout=180)
    assert launcher.returncode == 0, output[-4000:]
    assert 'ignored /robofollow/episode: EpisodeSpec version 7 is not 1' in output
    assert "ignored /robofollow/episode: episode spec: unknown task 'no_such_task'" in output
    assert "ignored /robofollow/episode: episode spec 'task_id' must be a non-empty string" in output
    assert len(_results(tmp_path)) == 8
