"""Speed of the simulated cell against plain MuJoCo stepping of the same model, measured in the same run.

Prints: plain ``mj_step`` steps/s (the baseline), the executor's steps/s, three-camera renders/s at 320x240, and
the real-time factor of a 500-row scripted pick-and-place episode executed in 50-row chunks, without images and
with all three cameras rendered after every row; the real-time factor of whole expert episodes (one task per scene
and level, the evaluator's way, and again with the three cameras rendered after every row as when recording
demonstrations), with the time spent inside ``mj_step`` during those episodes (the physics of the same episodes,
settling included); then three-camera renders/s of every robot side by side (the ALOHA with the light meshes its
cameras draw and with the shipped ones), interleaved five times with medians, as ratios to the primitive cell; then
the process's peak RSS and the load average. Every robot of ``robot.specs`` is measured in the same run, each
against plain stepping of its own model.

Usage: ``MUJOCO_GL=egl .venv/bin/python bench/bench_sim.py [--rows 500] [--robot aloha --robot primitive]``
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Callable

import mujoco
import numpy as np

from robofollow_ros.benchmark import registry
from robofollow_ros.robot.specs import robot_names
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.motion import MotionPlanner, Plan
from robofollow_ros.sim.render import CameraRig

TASK_ID = 'L0_place_yellow_block_3_behind_red_cylinder'
SEED = 42
CHUNK = 50


def scripted_rows(env: CellEnv, state: np.ndarray, rows: int) -> np.ndarray:
    """Alternating right/left pick-and-place cycles of the S1 blocks, truncated to ``rows``."""
    planner = MotionPlanner(env.kinematics)
    obs = env.observe(images=False)
    plan = Plan(state)
    cycles = (('right', 'yellow_block_3', (0.10, 0.02)), ('left', 'yellow_block_2', (-0.14, -0.10)))
    height = planner.grasp_height(obs.object_pos['yellow_block_3'][2])
    positions = {name: obs.object_pos[name][:2].copy() for _, name, _ in cycles}
    turn = 0
    while len(plan) < rows:
        arm, name, target = cycles[turn % 2]
        source = positions[name]
        plan.add(planner.grasp(plan.state, arm, np.array([*source, height]), lift=0.08))
        plan.add(planner.place(plan.state, arm, np.array([*target, height])))
        plan.add(planner.home(plan.state, arm))
        positions[name] = np.array(target)
        cycles = (*cycles[: turn % 2], (arm, name, tuple(source)), *cycles[turn % 2 + 1 :])
        turn += 1
    return plan.rows()[:rows]


def run_episode(env: CellEnv, rows: np.ndarray, *, images: bool) -> tuple[float, float]:
    """Execute ``rows`` after a reset; returns (simulated seconds, wall seconds).

    Without images the rows go in 50-row chunks (the evaluator's way); with images one row at a time, so that the
    three cameras are rendered after every row (what a camera-streaming sim node or a video recorder does).
    """
    env.reset(registry.get_task(TASK_ID), seed=SEED, images=images)
    size = 1 if images else CHUNK
    start = time.perf_counter()
    for i in range(0, len(rows), size):
        obs = env.execute(rows[i : i + size], images=images)
    return obs.time, time.perf_counter() - start


class StepTimer:
    """Wall seconds spent inside ``mujoco.mj_step`` while installed (``with StepTimer() as timer``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._step: Callable[..., None] = mujoco.mj_step

    def __enter__(self) -> StepTimer:
        step = self._step

        def timed(model: mujoco.MjModel, data: mujoco.MjData, nstep: int = 1) -> None:
            started = time.perf_counter()
            step(model, data, nstep=nstep)
            self.seconds += time.perf_counter() - started

        mujoco.mj_step = timed
        return self

    def __exit__(self, *exc: object) -> None:
        mujoco.mj_step = self._step


def expert_episodes(task_ids: list[str], *, images: bool, robot: str) -> tuple[float, float]:
    """Run the expert on ``task_ids`` (round 1 seeds); returns (simulated seconds, wall seconds) summed.

    Without images the chunks go to the cell whole (the evaluator's way); with images one row at a time with the
    three cameras rendered after every row.
    """
    from robofollow_ros.policy.base import validate_chunk
    from robofollow_ros.sim.expert import ExpertPolicy

    env = CellEnv(render=images, robot=robot)
    policy = ExpertPolicy()
    sim = wall = 0.0
    for task_id in task_ids:
        task = registry.get_task(task_id)
        layout = registry.layout_of(task)
        start = time.perf_counter()
        obs = env.reset(task, seed=registry.trial_seed(task_id, 1), layout=layout, images=images)
        policy.reset()
        policy.bind_task(task, layout)
        policy.set_instruction(task.instruction)
        for _ in range(10):
            chunk = validate_chunk(policy.predict(obs), max_rows=CHUNK)
            if images:
                for row in chunk:
                    obs = env.execute(row[None, :], images=True)
            else:
                obs = env.execute(chunk, images=False)
        wall += time.perf_counter() - start
        sim += obs.time
    env.close()
    return sim, wall


def plain_steps_per_second(model: mujoco.MjModel, data: mujoco.MjData, steps: int) -> float:
    scratch = mujoco.MjData(model)
    scratch.qpos[:] = data.qpos
    scratch.ctrl[:] = data.ctrl
    start = time.perf_counter()
    mujoco.mj_step(model, scratch, nstep=steps)
    return steps / (time.perf_counter() - start)


def bench_robot(robot: str, *, rows_wanted: int) -> None:
    """Print every measure for one robot."""
    print(f'== robot {robot}')
    env = CellEnv(render=False, robot=robot)
    obs = env.reset(registry.get_task(TASK_ID), seed=SEED)
    rows = scripted_rows(env, obs.state, rows_wanted)
    model, data = env.cell.model, env.data
    dt = model.opt.timestep

    plain = plain_steps_per_second(model, data, 10_000)
    plain_rtf = plain * dt
    print(f'model: nq {model.nq}, nv {model.nv}, ngeom {model.ngeom}, nu {model.nu}, timestep {dt} s')
    print(f'baseline  plain mj_step(nstep)         {plain:10.0f} steps/s   real-time x{plain_rtf:6.1f}')

    sim_s, wall_s = run_episode(env, rows, images=False)
    steps = round(sim_s / dt)
    exec_rtf = sim_s / wall_s
    print(
        f'executor  {len(rows)} rows, no images       {steps / wall_s:10.0f} steps/s   real-time x{exec_rtf:6.1f}'
        f'   ({exec_rtf / plain_rtf:.2f} of baseline; target >= 20x: {"ok" if exec_rtf >= 20 else "MISSED"})'
    )

    rig = CameraRig(model, render_model=env.cell.render_model())
    rig.render(data)
    n_renders = 60
    start = time.perf_counter()
    for _ in range(n_renders):
        rig.render(data)
    renders = n_renders / (time.perf_counter() - start)
    rig.close()
    print(
        f'render    3 cameras at 320x240          {renders:10.1f} sets/s    '
        f'({renders * 0.06:.2f} episode-seconds of images per wall second at one set per 0.06 s row)'
    )

    for hulls in (False, True) if model.nmesh else (False,):
        env_images = CellEnv(render=True, robot=robot, visual_hulls=hulls)
        sim_s, wall_s = run_episode(env_images, rows, images=True)
        image_rtf = sim_s / wall_s
        rate = len(rows) / wall_s
        label = ', hulls' if hulls else ''
        print(
            f'executor  {len(rows)} rows, 3 cams every row{label} {rate:8.1f} rows/s    real-time x{image_rtf:6.1f}'
            f'   ({image_rtf / plain_rtf:.3f} of baseline; target >= 3x: {"ok" if image_rtf >= 3 else "MISSED"})'
        )
        env_images.close()
    env.close()

    tasks = [registry.eval_tasks(scene=scene, level=level)[0].task_id for scene in (1, 2, 3, 4) for level in range(4)]
    for images, label, target in ((False, 'no images          ', 20.0), (True, '3 cams every row   ', 3.0)):
        with StepTimer() as physics:
            sim_s, wall_s = expert_episodes(tasks, images=images, robot=robot)
        rtf = sim_s / wall_s
        print(
            f'expert    {len(tasks)} episodes, {label}{sim_s:6.1f} sim s      real-time x{rtf:6.1f}'
            f'   ({rtf / plain_rtf:.3f} of baseline; target >= {target:.0f}x: {"ok" if rtf >= target else "MISSED"})'
            f'; physics {physics.seconds:.2f} s of {wall_s:.2f} s ({physics.seconds / wall_s:.2f})'
        )


def render_rates(robots: list[str], *, repeats: int = 5, sets: int = 30) -> None:
    """Three-camera renders/s of every robot (and the ALOHA's shipped meshes), interleaved; medians and ratios."""
    rigs: dict[str, tuple[CameraRig, mujoco.MjData]] = {}
    envs = []
    for robot in robots:
        env = CellEnv(render=False, robot=robot)
        env.reset(registry.get_task(TASK_ID), seed=SEED)
        envs.append(env)
        cell = env.cell
        assert cell is not None and env.data is not None
        rigs[f'{robot}'] = (CameraRig(cell.model, render_model=cell.render_model()), env.data)
        if cell.render_model() is not cell.model:
            rigs[f'{robot} (shipped meshes)'] = (CameraRig(cell.model), env.data)
    rates: dict[str, list[float]] = {name: [] for name in rigs}
    for rig, data in rigs.values():
        rig.render(data)
    for _ in range(repeats):
        for name, (rig, data) in rigs.items():
            start = time.perf_counter()
            for _ in range(sets):
                rig.render(data)
            rates[name].append(sets / (time.perf_counter() - start))
    base = float(np.median(rates['primitive'])) if 'primitive' in rates else None
    print(f'== renders side by side: 3 cameras at 320x240, {repeats} interleaved runs of {sets} sets, medians')
    for name, values in rates.items():
        median = float(np.median(values))
        ratio = f'   {median / base:.2f} of primitive' if base else ''
        print(f'render    {name:28s} {median:8.1f} sets/s{ratio}')
    for rig, _ in rigs.values():
        rig.close()
    for env in envs:
        env.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rows', type=int, default=500, help='rows of the scripted episode (default 500)')
    parser.add_argument('--robot', action='append', choices=robot_names(), help='robot to measure (default: all)')
    args = parser.parse_args()
    print(f'load average before: {" ".join(f"{v:.2f}" for v in os.getloadavg())} on {os.cpu_count()} CPUs')
    for robot in args.robot or robot_names():
        bench_robot(robot, rows_wanted=args.rows)
    render_rates(list(args.robot or robot_names()))
    print(f'load average after: {" ".join(f"{v:.2f}" for v in os.getloadavg())}')
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f'peak RSS  {peak_mib:.0f} MiB (target < 1024 MiB: {"ok" if peak_mib < 1024 else "MISSED"})')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
