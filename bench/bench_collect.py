"""Demonstrations per hour per core: the collector with three cameras against the expert without images.

Both runs collect the same labels and episodes in this process, one after the other, on one core (the collector
is single-threaded): the baseline keeps states and actions only (``cameras=False``), the measured run records the
three cameras of every frame and writes the raw HDF5 files (JPEG). Optionally also the MP4 videos and the LeRobot
export of the camera run. Prints both rates, their ratio, frames, acceptance and bytes per demonstration.

Usage: ``MUJOCO_GL=egl .venv/bin/python bench/bench_collect.py [--labels-per-scene 2] [--episodes 2] [--video]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from robofollow_ros.benchmark import registry
from robofollow_ros.data.collect import CollectOptions, run_collection


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob('*') if path.is_file())


def measure(labels: list[str], *, out: Path, episodes: int, cameras: bool, video: bool) -> dict[str, float]:
    """Collect and time; returns demonstrations, attempts, seconds and bytes."""
    options = CollectOptions(out=out, labels=labels, episodes=episodes, cameras=cameras, video=video)
    started = time.process_time(), time.perf_counter()
    tallies = run_collection(options, progress=False)
    cpu, wall = time.process_time() - started[0], time.perf_counter() - started[1]
    accepted = sum(tally.accepted for tally in tallies.values())
    return {
        'demos': accepted,
        'attempts': sum(tally.attempts for tally in tallies.values()),
        'cpu': cpu,
        'wall': wall,
        'bytes': _size(out),
    }


def main() -> None:
    """Run the baseline and the camera collection and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--labels-per-scene', type=int, default=2, help='first N training labels of each scene')
    parser.add_argument('--episodes', type=int, default=2, help='demonstrations per label')
    parser.add_argument('--video', action='store_true', help='also write an MP4 per demonstration')
    parser.add_argument('--lerobot', action='store_true', help='also time the LeRobot export of the camera run')
    args = parser.parse_args()
    labels = [
        task.task_id for scene in range(1, 5) for task in registry.training_labels(scene=scene)[: args.labels_per_scene]
    ]
    with tempfile.TemporaryDirectory() as folder:
        base = measure(labels, out=Path(folder) / 'plain', episodes=args.episodes, cameras=False, video=False)
        full = measure(labels, out=Path(folder) / 'cameras', episodes=args.episodes, cameras=True, video=args.video)
        print(f'{len(labels)} labels x {args.episodes} demonstrations, one process')
        for name, result in (('expert, no images (baseline)', base), ('collector, three cameras 320x240', full)):
            rate = result['demos'] / result['cpu'] * 3600.0
            size = result['bytes'] / max(result['demos'], 1) / 1e6
            print(
                f'{name:36s} {rate:8.0f} demos/h per core (CPU {result["cpu"]:.1f} s, wall {result["wall"]:.1f} s), '
                f'{result["demos"]}/{result["attempts"]} accepted, {size:.2f} MB/demo'
            )
        print(f'ratio cameras / baseline: {(full["demos"] / full["cpu"]) / (base["demos"] / base["cpu"]):.3f}')
        if args.lerobot:
            from robofollow_ros.data.lerobot import export_lerobot

            started = time.process_time()
            summary = export_lerobot(Path(folder) / 'cameras', Path(folder) / 'lerobot')
            seconds = time.process_time() - started
            print(
                f'LeRobot export: {summary.episodes} episodes, {summary.frames} frames in {seconds:.1f} s CPU '
                f'({summary.episodes / seconds * 3600.0:.0f} demos/h per core), '
                f'{_size(summary.root) / summary.episodes / 1e6:.2f} MB/demo'
            )


if __name__ == '__main__':
    main()
