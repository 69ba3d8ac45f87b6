"""Where an image policy's evaluation episode spends its time: physics, rendering, policy wire, scoring, recording.

An openpi policy server runs in this process on 127.0.0.1 (its own thread) and serves a policy that looks like an
image policy to the evaluator (``needs_images``: three 320x240 cameras go over the wire with every query) but
answers with the privileged expert's chunks for the same trial, computed beforehand without images, so that the
arms do what a working policy does. The evaluator's in-process runner (``InProcessTrials``, the one-simulator
``robofollow eval`` way) runs the trials through the openpi client. Timed by wrapping, per episode:

- physics: ``mujoco.mj_step`` (the executor's steps and the spawn's settling);
- rendering: ``CameraRig.render`` (three cameras after every chunk);
- policy wire: ``GuardedPolicy.predict`` (client encoding, websocket, server decoding, the replayed chunk,
  reply) -- the served policy's own time is negligible, so this is the wire;
- scoring: the referee's ``make_record``;
- recording: the trajectory recorder (``FrameRecorder.record`` and ``trajectory``);
- other: the rest of the episode's wall time (reset and model building, the episode loop, the guard's thread).

Prints milliseconds per episode and the share of each, and the load average (the machine's cores are shared).

Usage: ``MUJOCO_GL=egl .venv/bin/python bench/bench_episode_costs.py [--tasks 16] [--robot aloha]``
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from robofollow_ros.benchmark import registry
from robofollow_ros.evaluation import guard, runner
from robofollow_ros.evaluation.options import SuiteOptions
from robofollow_ros.evaluation.records import Trial
from robofollow_ros.evaluation.suite import run_identity
from robofollow_ros.policy.base import validate_chunk
from robofollow_ros.policy.server.openpi_server import OpenpiServer
from robofollow_ros.policy.server.served import ServedPolicy
from robofollow_ros.robot.specs import DEFAULT_ROBOT, robot_names
from robofollow_ros.sim import render, trajectory_frames
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.expert import ExpertPolicy

PARTS = ('physics', 'rendering', 'policy wire', 'scoring', 'recording')


class ReplayedExpert:
    """Answers each episode with the chunks given beforehand for its instruction (episodes of one instruction in
    trial order); looks at nothing."""

    def __init__(self, episodes: dict[str, list[list[np.ndarray]]]) -> None:
        self._episodes = {text: list(chunks) for text, chunks in episodes.items()}
        self._chunks: list[np.ndarray] = []

    def reset(self) -> None:
        self._chunks = []

    def set_instruction(self, text: str) -> None:
        self._chunks = list(self._episodes[text].pop(0))

    def predict(self, observation: object) -> np.ndarray:
        del observation
        return self._chunks.pop(0) if len(self._chunks) > 1 else self._chunks[0]


def expert_chunks(trials: list[Trial], *, robot: str, queries: int) -> dict[str, list[list[np.ndarray]]]:
    """The expert's chunks for every trial by instruction, played without images (what the served policy replays)."""
    env = CellEnv(render=False, robot=robot)
    policy = ExpertPolicy()
    episodes: dict[str, list[list[np.ndarray]]] = {}
    for trial in trials:
        layout = registry.layout_of(trial.task)
        obs = env.reset(trial.task, seed=trial.seed, layout=layout, images=False)
        policy.reset()
        policy.bind_task(trial.task, layout)
        policy.set_instruction(trial.task.instruction)
        chunks = []
        for _ in range(queries):
            chunk = validate_chunk(policy.predict(obs), max_rows=50)
            chunks.append(chunk)
            obs = env.execute(chunk, images=False)
        episodes.setdefault(trial.task.instruction, []).append(chunks)
    env.close()
    return episodes


class Timers:
    """Wall seconds spent inside wrapped callables, per part (outermost call only, this thread or any)."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(PARTS, 0.0)
        self._restore: list[Callable[[], None]] = []

    def wrap(self, owner: Any, name: str, part: str) -> None:
        original = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - started

        setattr(owner, name, timed)
        self._restore.append(lambda: setattr(owner, name, original))

    def restore(self) -> None:
        for undo in reversed(self._restore):
            undo()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--tasks', type=int, default=16, help='first task of each scene and level (max 16)')
    parser.add_argument('--robot', default=DEFAULT_ROBOT, choices=robot_names())
    args = parser.parse_args()
    os.environ.setdefault('MUJOCO_GL', 'egl')
    tasks = [registry.eval_tasks(scene=scene, level=level)[0] for scene in (1, 2, 3, 4) for level in range(4)]
    trials = [Trial(task=task, round=1, seed=registry.trial_seed(task.task_id, 1)) for task in tasks[: args.tasks]]
    queries = 10
    episodes = expert_chunks(trials, robot=args.robot, queries=queries)

    served = ServedPolicy(ReplayedExpert(episodes), name='replayed-expert')
    server = OpenpiServer(served, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    options = SuiteOptions(
        out=Path(tempfile.mkdtemp(prefix='rf-bench-')),
        policy='openpi',
        policy_kwargs={'host': '127.0.0.1', 'port': server.port, 'connect_retries': 1},
        robot=args.robot,
    )
    timers = Timers()
    timers.wrap(mujoco, 'mj_step', 'physics')
    timers.wrap(render.CameraRig, 'render', 'rendering')
    timers.wrap(guard.GuardedPolicy, 'predict', 'policy wire')
    timers.wrap(runner, 'make_record', 'scoring')
    timers.wrap(trajectory_frames.FrameRecorder, 'record', 'recording')
    timers.wrap(trajectory_frames.FrameRecorder, 'trajectory', 'recording')
    print(f'load average before: {" ".join(f"{v:.2f}" for v in os.getloadavg())} on {os.cpu_count()} CPUs')
    trials_runner = runner.InProcessTrials(options, identity=run_identity(options, privileged=False))
    results = []
    started = time.perf_counter()
    try:
        for result in trials_runner.results(trials):
            results.append(result)
    finally:
        wall = time.perf_counter() - started
        timers.restore()
        server.shutdown()
        thread.join(timeout=10)
    print(f'load average after: {" ".join(f"{v:.2f}" for v in os.getloadavg())}')
    done = sum(bool(result.record.get('completion_ok')) for result in results)
    simulated = sum(float(result.record.get('sim_seconds', 0.0) or 0.0) for result in results)
    per = 1000.0 / len(results)
    print(
        f'robot {args.robot}: {len(results)} episodes of an image policy (openpi client, 3 cameras 320x240 per '
        f'query, {queries} queries of 50 rows) through the in-process runner; {done} complete'
        + (f', {simulated / wall:.1f}x real time' if simulated else '')
    )
    print(f'{"part":12s} {"ms/episode":>11s} {"share":>7s}')
    for part in PARTS:
        print(f'{part:12s} {timers.seconds[part] * per:11.1f} {timers.seconds[part] / wall:7.1%}')
    other = wall - sum(timers.seconds.values())
    print(f'{"other":12s} {other * per:11.1f} {other / wall:7.1%}')
    print(f'{"total":12s} {wall * per:11.1f} {1.0:7.1%}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
