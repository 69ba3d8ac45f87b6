"""Evaluation at scale: trials per minute on 1 and 2 local simulators and on a 2-node Ray cluster.

The same trials (the expert, without images) run three ways in this one process: one simulator in this
process, ``--workers 2`` (two spawned worker processes) and ``--ray`` on a two-node Ray cluster started
here on loopback (``ray.cluster_utils.Cluster``, one CPU and one simulator actor per node). Printed per way:
the wall time from start to the last result (starting the simulators included) and from the first result to
the last (steady state), trials per minute for both, and the ratio to the one-simulator baseline of this run;
then Ray's overhead per trial (time from handing a trial to an actor until its result is back, less the
time the actor spent running it). Also printed: the load average, since other work on the machine shares
its cores.

Each way runs ``--repeats`` times, interleaved with the others so that a change in the machine's load hits
all of them; the medians are printed.

Run: .venv/bin/python bench/bench_scale.py [--rounds N] [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from robofollow_ros.evaluation.options import SuiteOptions
from robofollow_ros.evaluation.runner import InProcessTrials, TrialResult
from robofollow_ros.evaluation.suite import plan_trials, run_identity
from robofollow_ros.evaluation.workers import LocalWorkers


def timed(results: Iterable[TrialResult]) -> tuple[int, float, float]:
    started = time.perf_counter()
    first = None
    count = 0
    for _ in results:
        count += 1
        first = first or time.perf_counter()
    ended = time.perf_counter()
    return count, ended - started, ended - (first or ended)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--rounds', type=int, default=4, help='rounds of the 16 scene-1 L0 tasks (default 4)')
    parser.add_argument('--repeats', type=int, default=3, help='runs of each way, interleaved (default 3)')
    args = parser.parse_args()
    os.environ.setdefault('MUJOCO_GL', 'egl')
    options = SuiteOptions(
        out=Path(tempfile.mkdtemp(prefix='rf-bench-')), policy='expert', scenes=[1], levels=[0], rounds=args.rounds
    )
    identity = run_identity(options, privileged=True)
    trials = plan_trials(options)
    ray_tmp = tempfile.mkdtemp(prefix='rf-ray-')
    from robofollow_ros.evaluation.ray_workers import HEALTH_CHECK, LOCAL_RAY_ENVIRONMENT, RayTrials

    os.environ.update({**LOCAL_RAY_ENVIRONMENT, 'RAY_TMPDIR': ray_tmp})
    import ray
    from ray.cluster_utils import Cluster

    print(f'load average before: {" ".join(f"{value:.2f}" for value in os.getloadavg())} on {os.cpu_count()} CPUs')
    cluster = Cluster(initialize_head=True, head_node_args={'num_cpus': 1, '_system_config': HEALTH_CHECK})
    ray_runs: list[RayTrials] = []
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, logging_level='warning', log_to_driver=False)
        on_ray = replace(options, workers=2, use_ray=True, ray_address=cluster.address)

        def on_cluster() -> RayTrials:
            ray_runs.append(RayTrials(on_ray, identity=identity))
            return ray_runs[-1]

        ways: dict[str, Callable[[], Any]] = {
            '1 simulator (here)': lambda: InProcessTrials(options, identity=identity),
            '2 local workers': lambda: LocalWorkers(replace(options, workers=2), identity=identity),
            'Ray, 2 nodes': on_cluster,
        }
        rates: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
        for _ in range(args.repeats):
            for name, make in ways.items():
                count, total, steady = timed(make().results(trials))
                assert count == len(trials)
                rates[name].append((60.0 * count / total, 60.0 * (count - 1) / steady))
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(ray_tmp, ignore_errors=True)
        shutil.rmtree(options.out, ignore_errors=True)
    print(f'load average after: {" ".join(f"{value:.2f}" for value in os.getloadavg())}')
    print(f'{len(trials)} trials, {args.repeats} interleaved runs of each way; medians (trials per minute):')
    print(f'{"way":<20} {"start->last":>12} {"first->last":>12} {"ratio":>7} {"ratio":>7}')
    base = np.median(np.asarray(rates['1 simulator (here)']), axis=0)
    for name, values in rates.items():
        total, steady = np.median(np.asarray(values), axis=0)
        print(f'{name:<20} {total:12.1f} {steady:12.1f} {total / base[0]:7.2f} {steady / base[1]:7.2f}')
    local = np.median(np.asarray(rates['2 local workers']), axis=0)
    remote = np.median(np.asarray(rates['Ray, 2 nodes']), axis=0)
    print(f'Ray / 2 local workers: {remote[0] / local[0]:.2f} (start->last), {remote[1] / local[1]:.2f} (first->last)')
    overhead = np.concatenate([np.asarray(run.overheads) for run in ray_runs]) * 1000.0
    nodes = {node for run in ray_runs for node in run.placements.values()}
    print(f'Ray overhead per trial: p50 {np.percentile(overhead, 50):.1f} ms, p95 {np.percentile(overhead, 95):.1f} ms')
    print(f'(trials ran on {len(nodes)} Ray nodes)')


if __name__ == '__main__':
    main()
