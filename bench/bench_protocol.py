"""The full protocol for the expert with ``--workers 2``, extrapolated from whole rounds, against its physics limit.

Runs every trial of ``--rounds`` rounds (one round is 554 trials: every task once) twice in this one run:

1. ``--workers 2`` (two spawned worker processes, the way ``robofollow eval --workers 2`` runs them, without
   writing files): the wall time from start to the last result;
2. the physics limit: the same trials split in two halves (even / odd), each half in its own process with one
   in-process simulator, where every ``mj_step`` call is timed; the limit is the larger half's time inside
   ``mj_step`` (plain stepping of the same episodes, settling included, on two cores with nothing else to do),
   as wall time and as the thread's CPU time (which other work on the machine does not inflate).

Prints both, their ratios (goal: within 1.25x of the limit), the extrapolation to the 10 rounds of the protocol
(5,540 trials) and the load average before and after, since other work on the machine shares its two cores: under
load, wall times are inflated, so the CPU time of the two workers (per core) against the CPU-time limit is printed
too, the ratio that does not depend on what else runs.

Usage: ``MUJOCO_GL=egl .venv/bin/python bench/bench_protocol.py [--rounds 1] [--robot aloha]``
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from robofollow_ros.evaluation.options import SuiteOptions
from robofollow_ros.evaluation.runner import InProcessTrials
from robofollow_ros.evaluation.suite import plan_trials, run_identity
from robofollow_ros.evaluation.workers import LocalWorkers
from robofollow_ros.robot.specs import DEFAULT_ROBOT, robot_names

PROTOCOL_ROUNDS = 10


def _options(rounds: int, robot: str) -> SuiteOptions:
    return SuiteOptions(out=Path(tempfile.mkdtemp(prefix='rf-bench-')), policy='expert', rounds=rounds, robot=robot)


def physics_of_half(rounds: int, robot: str, half: int) -> tuple[float, float, float, int]:
    """Run every other trial (``half`` 0 or 1) in this process; returns (wall seconds in mj_step, CPU seconds in
    mj_step, wall seconds of the whole half, steps)."""
    import mujoco

    # In its own session like a --workers process: where the kernel shares the CPU between sessions (autogroup),
    # two halves in one session would get the share of one program.
    os.setsid()
    options = _options(rounds, robot)
    trials = plan_trials(options)[half::2]
    step = mujoco.mj_step
    spent = [0.0, 0.0, 0]

    def timed_step(model: mujoco.MjModel, data: mujoco.MjData, nstep: int = 1) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        step(model, data, nstep=nstep)
        spent[0] += time.perf_counter() - started
        spent[1] += time.thread_time() - cpu
        spent[2] += nstep

    mujoco.mj_step = timed_step
    started = time.perf_counter()
    try:
        count = sum(
            1 for _ in InProcessTrials(options, identity=run_identity(options, privileged=True)).results(trials)
        )
    finally:
        mujoco.mj_step = step
    assert count == len(trials)
    return spent[0], spent[1], time.perf_counter() - started, int(spent[2])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=1, help='whole rounds to run (default 1: 554 trials)')
    parser.add_argument('--robot', default=DEFAULT_ROBOT, choices=robot_names())
    args = parser.parse_args()
    os.environ.setdefault('MUJOCO_GL', 'egl')
    print(f'load average before: {" ".join(f"{v:.2f}" for v in os.getloadavg())} on {os.cpu_count()} CPUs')
    options = _options(args.rounds, args.robot)
    trials = plan_trials(options)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    count = 0
    first = 0.0
    for _ in LocalWorkers(replace(options, workers=2), identity=run_identity(options, privileged=True)).results(trials):
        count += 1
        first = first or time.perf_counter() - started
    workers = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers_cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    assert count == len(trials)
    print(f'load average between: {" ".join(f"{v:.2f}" for v in os.getloadavg())}')
    with multiprocessing.get_context('spawn').Pool(2) as pool:
        halves = pool.starmap(physics_of_half, [(args.rounds, args.robot, 0), (args.rounds, args.robot, 1)])
    print(f'load average after: {" ".join(f"{v:.2f}" for v in os.getloadavg())}')
    limit = max(physics for physics, _, _, _ in halves)
    limit_cpu = max(cpu for _, cpu, _, _ in halves)
    steps = sum(n for _, _, _, n in halves)
    scale = PROTOCOL_ROUNDS / args.rounds
    print(f'robot {args.robot}, {len(trials)} trials ({args.rounds} round(s)), {steps} physics steps')
    print(
        f'--workers 2                      {workers:8.1f} s   -> protocol ({PROTOCOL_ROUNDS * 554} trials) '
        f'{workers * scale / 60.0:6.1f} min'
    )
    steady = first + (workers - first) * (PROTOCOL_ROUNDS * len(trials) / args.rounds - 1) / (count - 1)
    print(
        f'  first result after {first:.1f} s (starting the workers); at the steady rate after it the protocol '
        f'takes {steady / 60.0:.1f} min'
    )
    print(
        f'  CPU of the two workers {workers_cpu:7.1f} s: {workers_cpu / 2:.1f} s per core, what the run would take '
        'on two free cores'
    )
    for half, (physics, cpu, wall, n) in enumerate(halves):
        print(
            f'  half {half}: in mj_step {physics:7.1f} s wall, {cpu:7.1f} s CPU, of {wall:7.1f} s in-process '
            f'({n} steps)'
        )
    print(f'physics limit (2 cores), wall    {limit:8.1f} s   -> protocol {limit * scale / 60.0:6.1f} min')
    print(f'physics limit (2 cores), CPU     {limit_cpu:8.1f} s   -> protocol {limit_cpu * scale / 60.0:6.1f} min')
    print(
        f'ratio --workers 2 / physics limit: {workers / limit:.2f} (wall / wall), {workers / limit_cpu:.2f} '
        f'(wall / CPU), {workers_cpu / 2 / limit_cpu:.2f} (CPU per core / CPU: the load-independent one; goal <= 1.25)'
    )
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
