"""Several graphs side by side (``workers:=2``), over real DDS: graph i in ROS domain ROS_DOMAIN_ID + i, one evaluator.

The records of two graphs are those of the same trials in-process (which equal one graph's, test_graph_end_to_end)
and both graphs ran trials; a sim killed in one graph loses and repeats nothing (its trial runs on the other
graph); SIGTERM stops every node of every graph.
"""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest
from graph_helpers import (
    alive,
    comparable,
    finish,
    node_pids_by_domain,
    read_records,
    ros_domain,
    run_launch,
    start_launch,
    wait_until,
)

from robofollow_ros.bags import read_episode_bag
from robofollow_ros.benchmark import registry
from robofollow_ros.evaluation.suite import SuiteOptions, run_suite

pytestmark = pytest.mark.ros

TASKS = tuple(task.task_id for task in registry.eval_tasks(scene=1, level=0)[:8])
PER_DOMAIN = re.compile(r'trials run per ROS domain \(this run\): (\d+): (\d+), (\d+): (\d+)')


def _results(out: Path) -> list[dict]:
    path = out / 'results.jsonl'
    return read_records(path) if path.exists() else []


@pytest.fixture(scope='module')
def reference(tmp_path_factory) -> dict[tuple[str, int], dict]:
    """The same trials (8 tasks x 2 rounds) in-process: the records every graph run must reproduce."""
    out = tmp_path_factory.mktemp('in_process')
    records = run_suite(SuiteOptions(out=out, policy='expert', task_ids=TASKS, rounds=2), progress=False)
    return {(record['task_id'], record['round']): record for record in records}


def _assert_same_records(records: list[dict], reference: dict[tuple[str, int], dict]) -> None:
    keys = [(record['task_id'], record['round']) for record in records]
    assert len(keys) == len(set(keys)), 'a trial was recorded twice'
    assert set(keys) == {key for key in reference if key[1] in {record['round'] for record in records}}
    for record in records:
        expected = reference[(record['task_id'], record['round'])]
        assert comparable(record) == comparable(expected), record['task_id']
        assert record['sim_seconds'] == pytest.approx(expected['sim_seconds'], abs=1e-6)


def test_two_graphs_give_the_records_of_one_run_and_both_run_trials(reference, tmp_path) -> None:
    result = run_launch(50, workers='2', policy='expert', task_ids=','.join(TASKS), record='bag', out=str(tmp_path))
    assert result.returncode == 0, result.stdout[-4000:]
    records = read_records(tmp_path / 'results.jsonl')
    assert len(records) == len(TASKS)
    _assert_same_records(records, reference)
    (match,) = PER_DOMAIN.findall(result.stdout)
    domains = {int(match[0]): int(match[1]), int(match[2]): int(match[3])}
    assert set(domains) == {ros_domain(50), ros_domain(50) + 1} and all(count >= 1 for count in domains.values())
    assert sum(domains.values()) == len(TASKS)
    assert sorted(p.name for p in (tmp_path / 'episodes').iterdir() if not p.name.startswith('.')) == sorted(
        Path(record['episode_file']).name for record in records
    )
    for record in records:
        meta, _ = read_episode_bag(tmp_path / record['episode_file'])
        assert (meta['task_id'], meta['seed']) == (record['task_id'], record['seed'])
    run = json.loads((tmp_path / 'run.json').read_text())
    assert run['status'] == 'complete' and run['runtime'] == 'ros-graph' and run['options']['workers'] == 2


def test_a_sim_killed_in_one_of_two_graphs_loses_and_repeats_nothing(reference, tmp_path) -> None:
    first = ros_domain(52)
    second = first + 1
    launcher = start_launch(
        52, workers='2', policy='expert', task_ids=','.join(TASKS), rounds='2', record='bag', out=str(tmp_path)
    )
    wait_until(lambda: len(_results(tmp_path)) >= 1, timeout=180, what='a first result')
    nodes = node_pids_by_domain(launcher.pid)
    names = ('sim', 'policy_bridge', 'referee', 'recorder')
    assert set(nodes) == {f'{name}@{domain}' for name in names for domain in (first, second)} | {'evaluator'}
    os.kill(nodes[f'sim@{second}'], signal.SIGKILL)
    output = finish(launcher, timeout=240)
    assert launcher.returncode == 0, output[-4000:]
    assert f'error: required node sim@{second} exited with code 137; stopping its graph (ROS domain {second})' in output
    assert f'warning: the graph in ROS domain {second} is gone' in output
    lost = [name for name in nodes if name.endswith(f'@{second}')]
    wait_until(lambda: not any(alive(nodes[name]) for name in lost), timeout=10, what=f"graph {second}'s nodes to exit")
    _assert_same_records(read_records(tmp_path / 'results.jsonl'), reference)
    assert len(_results(tmp_path)) == 2 * len(TASKS)
    # The lost graph's recorder left its unfinished bag hidden; the trial was recorded on the other graph, so the
    # complete run keeps only the final bags.
    episodes = sorted(entry.name for entry in (tmp_path / 'episodes').iterdir())
    assert episodes == sorted(f'{task}__r{round_:02d}' for task in TASKS for round_ in (1, 2))


def test_sigterm_stops_every_node_of_every_graph(tmp_path) -> None:
    launcher = start_launch(54, workers='2', policy='expert', task_ids=','.join(TASKS), rounds='2', out=str(tmp_path))
    wait_until(lambda: len(_results(tmp_path)) >= 1, timeout=180, what='a first result')
    nodes = node_pids_by_domain(launcher.pid)
    assert len(nodes) == 7
    launcher.send_signal(signal.SIGTERM)
    output = finish(launcher)
    assert 'SIGTERM: stopping the graph' in output
    wait_until(lambda: not any(alive(pid) for pid in nodes.values()), timeout=10, what='every node to exit')
    assert json.loads((tmp_path / 'run.json').read_text())['status'] == 'interrupted'
