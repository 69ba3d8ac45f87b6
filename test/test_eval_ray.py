"""``robofollow eval --ray``: a real two-node Ray cluster on loopback (README "Evaluation at scale").

One cluster for the module (head and one worker node, one CPU each, so one simulator actor per node);
the node-loss test runs last because it removes the worker node.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time

import eval_process
import pytest
import ray
from graph_helpers import wait_until
from ray.cluster_utils import Cluster
from remote_support import ServedPolicyProcess, free_port
from scale_support import (
    TRIALS,
    cli_args,
    comparable,
    descendants,
    is_loopback,
    listening_sockets,
    pids_mentioning,
    suite_options,
)

from robofollow_ros.cli import main
from robofollow_ros.evaluation.ray_workers import HEALTH_CHECK, LOCAL_RAY_ENVIRONMENT, RayTrials, import_ray
from robofollow_ros.evaluation.suite import plan_trials, run_identity, run_suite


@pytest.fixture(scope='module')
def one_process(tmp_path_factory):
    return comparable(run_suite(suite_options(tmp_path_factory.mktemp('one') / 'run'), progress=False))


@pytest.fixture(scope='module')
def cluster():
    ray_tmp = tempfile.mkdtemp(prefix='rf-ray-')
    environment = {**LOCAL_RAY_ENVIRONMENT, 'RAY_TMPDIR': ray_tmp}
    saved = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    import_ray(local=True)  # the test cluster stays on loopback too (``ray`` was imported above)
    cluster = Cluster(initialize_head=True, head_node_args={'num_cpus': 1, '_system_config': HEALTH_CHECK})
    worker = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level='warning', log_to_driver=False)
    try:
        yield cluster, worker
    finally:
        ray.shutdown()
        cluster.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(ray_tmp, ignore_errors=True)


POOL_TASKS = 'L0_pickup_yellow_block_2'


def ray_options(out, cluster):
    return suite_options(out, use_ray=True, ray_address=cluster.address, workers=2)


def test_a_two_node_cluster_runs_trials_on_both_nodes_with_the_records_of_one_process(tmp_path, cluster, one_process):
    head_cluster, worker = cluster
    options = ray_options(tmp_path / 'run', head_cluster)
    executor = RayTrials(options, identity=run_identity(options, privileged=True))
    results = list(executor.results(plan_trials(options)))
    assert comparable(result.record for result in results) == one_process
    assert set(executor.placements.values()) == {head_cluster.head_node.node_id, worker.node_id}
    assert executor.lost == 0 and len(executor.overheads) == TRIALS


def test_the_command_line_writes_one_results_file_from_the_cluster(tmp_path, cluster, one_process):
    head_cluster, _ = cluster
    out = tmp_path / 'run'
    done = eval_process.run(cli_args(out, '--ray', head_cluster.address, '--workers', '2'))
    assert done.returncode == 0, done.stderr
    assert comparable(eval_process.result_lines(out)) == one_process
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    assert run['status'] == 'complete' and run['options']['use_ray'] is True


def test_ctrl_c_during_a_cluster_run_frees_the_cluster_and_the_run_resumes(tmp_path, cluster, one_process):
    head_cluster, _ = cluster
    out = tmp_path / 'run'
    args = cli_args(out, '--ray', head_cluster.address, '--workers', '2')
    process = eval_process.start(args)
    eval_process.wait_for_records(out, 3, process)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    assert run['status'] == 'interrupted' and run['completed_trials'] == len(eval_process.result_lines(out)) < TRIALS
    wait_until(lambda: ray.available_resources().get('CPU') == 2.0, timeout=30, what='the actors to be released')
    done = eval_process.run(args)
    assert done.returncode == 0, done.stderr
    assert comparable(eval_process.result_lines(out)) == one_process


def _openpi_run(out, kwargs, *extra):
    scope = ['--tasks', POOL_TASKS, '--rounds', '4', '--max-queries', '3', '--quiet', '--out', str(out)]
    return main(['eval', '--in-process', '--policy', 'openpi', '--policy-kwargs', json.dumps(kwargs), *scope, *extra])


def test_a_pool_with_a_dead_endpoint_on_the_cluster_finishes_like_the_live_server_alone(tmp_path, cluster):
    head_cluster, _ = cluster
    dead = f'127.0.0.1:{free_port()}'
    with ServedPolicyProcess('--policy', 'remote_support:make_wave', '--protocol', 'openpi') as server:
        pool = {'endpoints': [dead, f'127.0.0.1:{server.port}'], 'timeout': 60}
        assert _openpi_run(tmp_path / 'pool', pool, '--ray', head_cluster.address, '--workers', '2') == 0
        assert _openpi_run(tmp_path / 'alone', {'port': server.port, 'timeout': 60}) == 0
    pooled = comparable(eval_process.result_lines(tmp_path / 'pool'), ignore=('run_id',))
    assert len(pooled) == 4 and not any(record['policy_error'] for record in pooled.values())
    assert pooled == comparable(eval_process.result_lines(tmp_path / 'alone'), ignore=('run_id',))


def test_ray_without_an_address_listens_on_loopback_only_and_stops_its_own_instance(tmp_path, one_process):
    """Every listening socket of the run's Ray processes (GCS, raylet, agents, actors, the driver), sampled for the
    whole run, is on loopback, even when the environment asks Ray for a cluster on the machine's address."""
    ray_tmp = tempfile.mkdtemp(prefix='rf-ray-')
    out = tmp_path / 'run'
    args = cli_args(out, '--tasks', 'L0_pickup_*_1_*', '--ray', '--workers', '2')
    process = eval_process.start(args, RAY_TMPDIR=ray_tmp, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER='1')
    sockets = set()
    while process.poll() is None:
        sockets |= listening_sockets(descendants(process.pid))
        time.sleep(0.2)
    _, err = process.communicate()
    assert process.returncode == 0, err
    names = {name for name, _, _ in sockets}
    assert {'gcs_server', 'raylet'} <= names, sockets
    # An actor's process name is ``ray::Simulator`` while idle and ``ray::Simulator.<method>`` (cut to 15 characters)
    # while it runs one: a run may be sampled only in the second.
    assert any(name.startswith('ray::Simulator') for name in names), sockets
    assert not {entry for entry in sockets if not is_loopback(entry[1])}
    records = comparable(eval_process.result_lines(out))
    assert len(records) == 4 and records == {key: one_process[key] for key in records}
    wait_until(lambda: not pids_mentioning(ray_tmp), timeout=15, what='the Ray processes of the run to exit')
    shutil.rmtree(ray_tmp, ignore_errors=True)


def test_losing_a_node_mid_run_loses_and_duplicates_nothing(tmp_path, cluster, one_process):
    head_cluster, worker = cluster
    options = ray_options(tmp_path / 'run', head_cluster)
    executor = RayTrials(options, identity=run_identity(options, privileged=True))
    results = []
    for result in executor.results(plan_trials(options)):
        results.append(result)
        if len(results) == 4:
            head_cluster.remove_node(worker, allow_graceful=False)
    assert executor.lost == 1
    assert comparable(result.record for result in results) == one_process
    nodes = set(executor.placements.values())
    assert head_cluster.head_node.node_id in nodes
