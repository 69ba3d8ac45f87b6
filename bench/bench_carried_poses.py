"""How far the tracker's poses of moved objects are from the simulation truth, per source tree, side by side.

For each tree (``--trees name=path``: this checkout and, say, a checkout of the commit before a change) the real
graph runs the tasks over fake hardware with the ArUco tags drawn, ``pose_source:=tracker``, the expert, one launch
per tree with ``record:=bag`` (fake hardware publishes the truth beside the tracker, ``/robofollow/truth/objects``).
Each bag is then read twice, once with the tracked object poses and once with the truth, on the same frame
timeline: per object that moved (truth travel over 2 cm) the error at the frames both have, median / p95 / max (mm),
and, per tree, the episodes' completion and Intent from the tracked poses and from the truth.

    MUJOCO_GL=egl ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST .venv/bin/python bench/bench_carried_poses.py \\
        --out /tmp/carried --domain 143 --trees after=.,before=/tmp/before [--tasks a,b|demo] [--analyse]

``--analyse`` reads the bags already under ``--out`` without launching. ``--load N`` runs N busy processes beside
each launch (the tracker's inputs then arrive late, as on a loaded cell computer).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from graph_launch import ROOT, graph_env

from robofollow_ros import topics
from robofollow_ros.bags.reader import load_episode
from robofollow_ros.cli.demo import demo_task_ids
from robofollow_ros.cli.score import score_path

TASKS = ('L0_l_pick5_around3_to1_long_right', 'L0_s41_l_pick_red_sphere', 'L0_place_yellow_block_2_behind_green_sphere')
MOVED_M = 0.02
MATCH_S = 1e-6


def launch(tree: Path, out: Path, *, domain: int, tasks: list[str], load: int) -> float:
    """One ``robofollow launch real`` of ``tree``'s code beside ``load`` busy processes; its wall time."""
    command = [
        sys.executable,
        '-m',
        'robofollow_ros',
        'launch',
        'real',
        'pose_source:=tracker',
        'markers:=true',
        'policy:=expert',
        f'task_ids:={",".join(tasks)}',
        'record:=bag',
        f'out:={out}',
    ]
    burners = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(load)]
    start = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with (out.parent / f'{out.name}.launch.log').open('w') as log:
            subprocess.run(
                command, cwd=tree, env=graph_env(domain, python_path=(tree,)), stdout=log, stderr=subprocess.STDOUT
            )
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    return time.monotonic() - start


def errors_of(bag: Path) -> dict[str, np.ndarray]:
    """Per moved object, the tracked-minus-truth distance (m) at every frame both have."""
    tracked = load_episode(bag).trajectory
    truth = load_episode(bag, object_poses=topics.TRUTH_POSE_PREFIX).trajectory
    found: dict[str, np.ndarray] = {}
    for name, true_pos in truth.obj_pos.items():
        if name not in tracked.obj_pos or np.linalg.norm(true_pos[-1] - true_pos[0]) < MOVED_M:
            continue
        at = np.searchsorted(truth.t, tracked.t)
        at = np.clip(at, 0, len(truth.t) - 1)
        same = np.abs(truth.t[at] - tracked.t) < MATCH_S
        difference = tracked.obj_pos[name][same] - true_pos[at[same]]
        found[name] = np.linalg.norm(difference[np.all(np.isfinite(difference), axis=1)], axis=1)
    return found


def report(out: Path, names: list[str]) -> None:
    for name in names:
        print(f'\n== {name}')
        for bag in sorted((out / name / 'episodes').glob('*')):
            if bag.suffix or not bag.is_dir():
                continue
            tracked = score_path(bag)
            truth = score_path(bag, object_poses=topics.TRUTH_POSE_PREFIX)
            task = tracked.get('task_id', bag.name)
            scores = (
                f'tracked IS {tracked["intent_score"]:.2f} CR {tracked["completion_ok"]}, '
                f'truth IS {truth["intent_score"]:.2f} CR {truth["completion_ok"]}'
            )
            print(f'{task}: {scores}')
            for obj, distances in sorted(errors_of(bag).items()):
                mm = 1000 * distances
                print(
                    f'    {obj}: {len(mm)} frames, error median {np.median(mm):.1f} / p95 '
                    f'{np.percentile(mm, 95):.1f} / max {mm.max():.1f} mm'
                )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--out', type=Path, default=Path('/tmp/bench_carried_poses'))
    parser.add_argument('--domain', type=int, default=143)
    parser.add_argument('--trees', default=f'current={ROOT}', help='name=path,... (default: this checkout)')
    parser.add_argument('--tasks', default=','.join(TASKS), help="comma-separated task ids, or 'demo' (the 16)")
    parser.add_argument('--analyse', action='store_true', help='read the bags under --out, launch nothing')
    parser.add_argument('--load', type=int, default=0, help='busy processes beside each launch (default 0)')
    args = parser.parse_args()
    trees = {name: Path(path).resolve() for name, path in (item.split('=', 1) for item in args.trees.split(','))}
    tasks = demo_task_ids() if args.tasks == 'demo' else args.tasks.split(',')
    if not args.analyse:
        for name, tree in trees.items():
            seconds = launch(tree, args.out / name, domain=args.domain, tasks=tasks, load=args.load)
            print(f'{name}: {tree}: launched in {seconds:.0f} s')
    report(args.out, list(trees))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
