"""Cost of calling a policy through ``GuardedPolicy`` (worker thread + deadline) against calling it directly.

Both loops call the same ``hold`` policy ``predict`` on the same observation and validate the chunk, in this
process and run; prints calls/s of each, the guarded/direct time ratio and the added microseconds per call,
then the same for whole episodes of the expert (one S1 L0 task): ``run_episode`` with the guarded policy
against the direct loop it replaced.

Usage: ``MUJOCO_GL=egl .venv/bin/python bench/bench_guard.py [--calls 20000]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from robofollow_ros.benchmark import registry
from robofollow_ros.evaluation.episode import run_episode
from robofollow_ros.evaluation.guard import GuardedPolicy
from robofollow_ros.policy.base import validate_chunk
from robofollow_ros.policy.hold import HoldPolicy
from robofollow_ros.policy.observation import Observation
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.expert import ExpertPolicy

TASK_ID = 'L0_place_yellow_block_3_behind_red_cylinder'


def per_call(calls: int) -> None:
    observation = Observation(images={}, state=np.zeros(14, dtype=np.float32))
    policy = HoldPolicy()
    started = time.perf_counter()
    for _ in range(calls):
        validate_chunk(policy.predict(observation), max_rows=50)
    direct = time.perf_counter() - started
    guarded = GuardedPolicy.wrap(HoldPolicy(), privileged=False)
    started = time.perf_counter()
    for _ in range(calls):
        guarded.predict(observation, max_rows=50)
    through = time.perf_counter() - started
    guarded.close()
    print(
        f'predict   direct {calls / direct:10.0f} calls/s   guarded {calls / through:10.0f} calls/s   '
        f'ratio x{through / direct:5.2f}   +{(through - direct) / calls * 1e6:6.1f} us per call'
    )


def direct_episode(env: CellEnv, task, layout, seed: int) -> None:
    policy = ExpertPolicy()
    observation = env.reset(task, seed=seed, layout=layout, images=False)
    policy.reset()
    policy.bind_task(task, layout)
    policy.set_instruction(task.instruction)
    for _ in range(10):
        observation = env.execute(validate_chunk(policy.predict(observation), max_rows=50), images=False)


def per_episode(episodes: int) -> None:
    task = registry.get_task(TASK_ID)
    layout = registry.layout_of(task)
    seed = registry.trial_seed(TASK_ID, 1)
    with CellEnv(render=False) as env:
        direct_episode(env, task, layout, seed)  # warm-up: model build, planner cache
        direct = through = 0.0
        for _ in range(episodes):  # interleaved, so that load from other processes hits both alike
            started = time.perf_counter()
            direct_episode(env, task, layout, seed)
            direct += time.perf_counter() - started
            started = time.perf_counter()
            run_episode(env, GuardedPolicy.wrap(ExpertPolicy(), privileged=True), task, seed=seed, layout=layout)
            through += time.perf_counter() - started
    print(
        f'episode   direct {direct / episodes:8.3f} s    guarded {through / episodes:8.3f} s    '
        f'ratio x{through / direct:5.3f}   ({episodes} expert episodes of {TASK_ID})'
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--calls', type=int, default=20000)
    parser.add_argument('--episodes', type=int, default=6)
    args = parser.parse_args()
    per_call(args.calls)
    per_episode(args.episodes)


if __name__ == '__main__':
    main()
