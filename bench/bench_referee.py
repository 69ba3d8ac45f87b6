"""Referee speed: score a 30 s, 50 Hz episode (1500 frames) per scene, against baselines of the same run.

Baselines, measured here on the same data:
  * copy:  stacking every signal of the trajectory into one numpy array (a pass that touches each value once);
  * parse: turning the episode's robofollow-trajectory/1 document (already decoded JSON) into a Trajectory.
If robofollow_ros.bags is available, it also times reading the episode back from an MCAP bag with
read_episode_bag against rosbags' raw message iteration (no deserialisation) of the same bag.

Run: .venv/bin/python bench/bench_referee.py [--repeat N]
Target: <= 30 ms per episode (>= 1000x real time).
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.types import Layout, Task
from robofollow_ros.referee.score import score_episode
from robofollow_ros.referee.synthetic import Motion
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.referee.trajectory_json import trajectory_from_dict, trajectory_to_dict

DURATION = 30.0
RATE = 50.0
TASKS = {
    1: 'L0_place_yellow_block_1_behind_red_cylinder',
    2: 'L0_push_left_cube_to_red_cylinder',
    3: 'L0_r_pick2_via4_to6_short_front',
    4: 'L0_s41_seq_l_bowl_then_r_green_cylinder',
}
HOME = {'left': (-0.30, -0.30, 0.95), 'right': (0.30, -0.30, 0.95)}


def _episode(task: Task, layout: Layout) -> Trajectory:
    """A slow pick-and-carry of the task's source over 30 s, with small tracker noise on every object."""
    rng = np.random.default_rng(0)
    motion = Motion(duration=DURATION)
    start = {p.name: (p.xy[0], p.xy[1], 0.76) for p in layout.placements}
    for name, (x, y, z) in start.items():
        keys = [(t, (x + rng.normal(0, 2e-4), y + rng.normal(0, 2e-4), z)) for t in np.arange(0, DURATION + 1, 1.0)]
        motion.obj(name, *keys)
        motion.obj_yaw(name, (0.0, 0.0))
    source, arm = task.truth.source, task.truth.arm
    x, y, z = start[source]
    goal = (x + 0.05, y + 0.12, z)
    motion.ee(
        arm,
        (0, HOME[arm]),
        (6, (x, y, z + 0.04)),
        (10, (x, y, z + 0.04)),
        (14, (x, y, z + 0.14)),
        (18, (goal[0], goal[1], z + 0.14)),
        (20, (goal[0], goal[1], z + 0.04)),
        (24, HOME[arm]),
    )
    motion.grip(arm, (8, 1.0), (9, 0.0), (21, 0.0), (22, 1.0))
    motion.obj(
        source,
        (0, start[source]),
        (10, start[source]),
        (14, (x, y, z + 0.10)),
        (18, (goal[0], goal[1], z + 0.10)),
        (20, goal),
    )
    motion.obj_yaw(source, (14, 0.0), (20, math.pi / 2))
    return motion.sample(RATE)


def _best(function: Callable[[], object], repeat: int) -> float:
    """Best wall time of ``repeat`` calls, seconds (best-of filters out scheduler noise)."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def _copy_all(trajectory: Trajectory) -> np.ndarray:
    columns = [trajectory.t[:, None]]
    columns += [trajectory.ee[a] for a in ('left', 'right')] + [trajectory.grip[a][:, None] for a in ('left', 'right')]
    columns += (
        list(trajectory.ee_quat.values()) + list(trajectory.obj_pos.values()) + list(trajectory.obj_quat.values())
    )
    return np.concatenate(columns, axis=1)


def _bag_timings(task: Task, layout: Layout, trajectory: Trajectory, repeat: int) -> tuple[float, float] | None:
    try:
        from robofollow_ros.bags import read_episode_bag, write_episode_bag
    except ImportError:
        return None
    from rosbags.rosbag2 import Reader

    with tempfile.TemporaryDirectory() as folder:
        bag = Path(folder) / 'episode'
        meta = {'task_id': task.task_id, 'variant': 'published', 'seed': 1, 'round': 1, 'layout': layout.name}
        write_episode_bag(bag, meta=meta, trajectory=trajectory)

        def raw() -> int:
            count = 0
            with Reader(bag) as reader:
                for _connection, _stamp, data in reader.messages():
                    count += len(data)
            return count

        return _best(lambda: read_episode_bag(bag), repeat), _best(raw, repeat)


def main() -> None:
    """Print per-scene timings and ratios."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--repeat', type=int, default=20)
    args = parser.parse_args()
    print(f'episode: {DURATION:.0f} s at {RATE:.0f} Hz = {int(DURATION * RATE)} frames; best of {args.repeat}\n')
    header = f'{"scene":<6}{"score ms":>10}{"eps/s":>9}{"x real":>9}{"copy ms":>10}{"score/copy":>12}'
    print(header + f'{"parse ms":>10}{"score/parse":>13}')
    score_ms: dict[int, float] = {}
    for scene, task_id in TASKS.items():
        task = registry.get_task(task_id)
        layout = registry.layout_of(task)
        trajectory = _episode(task, layout)
        document = trajectory_to_dict(trajectory, task_id=task_id)
        score_episode(task, trajectory, layout=layout)
        scored = _best(lambda t=task, tr=trajectory, la=layout: score_episode(t, tr, layout=la), args.repeat)
        copied = _best(lambda tr=trajectory: _copy_all(tr), args.repeat)
        parsed = _best(lambda d=document: trajectory_from_dict(d), max(3, args.repeat // 4))
        score_ms[scene] = scored * 1e3
        print(
            f'S{scene:<5}{scored * 1e3:>10.2f}{1 / scored:>9.0f}{DURATION / scored:>9.0f}'
            f'{copied * 1e3:>10.3f}{scored / copied:>12.0f}{parsed * 1e3:>10.1f}{scored / parsed:>13.2f}'
        )
    task = registry.get_task(TASKS[1])
    layout = registry.layout_of(task)
    bag = _bag_timings(task, layout, _episode(task, layout), max(3, args.repeat // 4))
    if bag is None:
        print('\nbag read: robofollow_ros.bags not available')
    else:
        read, raw = bag
        print(
            f'\nbag read (S1 episode, MCAP): read_episode_bag {read * 1e3:.1f} ms, rosbags raw iteration '
            f'{raw * 1e3:.1f} ms, ratio {read / raw:.1f}x; read + score {(read + scored) * 1e3:.1f} ms'
        )


if __name__ == '__main__':
    main()
