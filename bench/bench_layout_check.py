"""The layout check on clean renders: every evaluation task's layout at its protocol trial seed, placed by the
simulator exactly where the trial puts it, cam_high at 640x480 with the shipped tags, one tracker frame with the
true extrinsic, then ``check_layout`` as the evaluator runs it before a trial. A correct layout must pass; prints
the failures (object, why) and their count per scene, and the reasons' spread.

    MUJOCO_GL=egl .venv/bin/python bench/bench_layout_check.py [--rounds 3] [--scenes 1,2,3,4] [--limit N]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.seeds import trial_seed
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.markers import camera_view
from robofollow_ros.tracking.cell_tracker import CellTracker, yaw_of
from robofollow_ros.tracking.layout_check import check_layout
from robofollow_ros.tracking.markers import SCENES, load_markers
from robofollow_ros.tracking.pose import detect, make_detector

WIDTH, HEIGHT = 640, 480
CORNER_WINDOW = 0.4
"""The node's corner refinement for rendered images (``nodes.aruco_tracker.RENDERED_CORNER_WINDOW``)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--rounds', default='3', help='trial rounds whose seeds to place (default 3)')
    parser.add_argument('--scenes', default=','.join(map(str, SCENES)))
    parser.add_argument('--limit', type=int, default=0, help='at most this many tasks per scene (0: all)')
    parser.add_argument('--corner-window', type=float, default=CORNER_WINDOW, help='corner refinement window (modules)')
    args = parser.parse_args()
    config = load_markers('default')
    detector = make_detector(corner_window=args.corner_window)
    scenes = [int(s) for s in args.scenes.split(',')]
    failures: list[tuple[str, int, str]] = []
    checked: Counter[int] = Counter()
    reasons: Counter[str] = Counter()
    start = time.perf_counter()
    with CellEnv(markers='default', width=WIDTH, height=HEIGHT) as env:
        for scene in scenes:
            tasks = [t for t in registry.eval_tasks() if t.scene == scene]
            for task in tasks[: args.limit or None]:
                for round_number in (int(r) for r in args.rounds.split(',')):
                    seed = trial_seed(task.task_id, round_number)
                    layout = registry.layout_of(task)
                    env.reset(task, seed=seed, images=False)
                    assert env.cell is not None and env.data is not None
                    image = env.observe(images=True).images['cam_high']
                    intrinsics, camera = camera_view(env.cell.model, env.data, 'cam_high', width=WIDTH, height=HEIGHT)
                    tracker = CellTracker(config, {s: registry.scene_objects(s) for s in SCENES})
                    tracker.start_layout(layout)
                    published = tracker.update(detect(detector, image[:, :, ::-1]), intrinsics, camera)
                    measured = {p.name: (p.position[0], p.position[1], yaw_of(p.quat)) for p in published}
                    covered = {p.on for p in layout.placements if p.on is not None}
                    positions = registry.perturbed_positions(layout, seed=seed)
                    check = check_layout(layout, measured, positions=positions, yaw_unmeasured=covered)
                    checked[scene] += 1
                    if check.passed:
                        continue
                    for problem in check.failures:
                        refusal = tracker.last_results.get(f'scene{scene}/{problem.split(":")[0]}')
                        why = getattr(refusal, 'reason', '')
                        failures.append((f'{task.task_id} seed {seed}', scene, f'{problem} {why}'.strip()))
                        reasons[getattr(refusal, 'gate', 'check')] += 1
    seconds = time.perf_counter() - start
    for trial, scene, problem in failures:
        print(f'FAIL scene {scene} {trial}: {problem}')
    failed = Counter(scene for _, scene, _ in {(t, s, '') for t, s, _ in failures})
    print(f'\n{sum(checked.values())} trials checked in {seconds:.0f} s')
    for scene in scenes:
        print(f'scene {scene}: {checked[scene] - failed[scene]} / {checked[scene]} pass')
    print(f'refusals by gate: {dict(reasons)}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
