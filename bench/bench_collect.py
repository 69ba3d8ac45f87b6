"""Demonstrations per hour and real-time factor: the collector with three cameras against the expert without images.

Every run collects the same labels and episodes in this process, one after the other: the baseline keeps states
and actions only (``cameras=False``); the camera runs record the three cameras of every frame and write the raw
HDF5 files (JPEG), once writing each accepted episode before the next attempt starts (one core) and once on the
collector's background writer thread (``data.background``, the default). Optionally also the MP4 videos and the
LeRobot export. Prints per run the demonstrations per hour of CPU time (all threads) and of wall time, the
real-time factor (simulated seconds of every attempted frame per wall second), frames, acceptance and bytes per
demonstration, the ratios to the baseline, and the load average (other work on the machine shares its cores).

Usage: ``MUJOCO_GL=egl .venv/bin/python bench/bench_collect.py [--labels-per-scene 2] [--episodes 2] [--video]
[--robot aloha]``

``--workers N`` instead compares one worker with N (``collect --workers``, three cameras, background writer) on the
same labels in this run: demonstrations per wall minute of each, their ratio, whether every demonstration's HDF5
file has the same hash either way, and the wall time the whole training split (75 labels x 50) would take at each
rate. ``--ray`` adds a third run of as many actors on a Ray instance started on this machine (``collect --ray``),
Ray's start-up included in its wall time.
"""

from __future__ import annotations

import argparse
import inspect
import os
import tempfile
import time
from pathlib import Path

from robofollow_ros.benchmark import registry
from robofollow_ros.data.collect import CollectOptions, run_collection
from robofollow_ros.data.store import open_ledger
from robofollow_ros.robot.specs import DEFAULT_ROBOT, robot_names
from robofollow_ros.sim.constants import ROW_SECONDS


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob('*') if path.is_file())


def measure(
    labels: list[str], *, out: Path, episodes: int, cameras: bool, video: bool, robot: str, background: bool | None
) -> dict[str, float]:
    """Collect and time; returns demonstrations, attempts, frames, seconds and bytes."""
    options = CollectOptions(out=out, labels=labels, episodes=episodes, cameras=cameras, video=video, robot=robot)
    extra = {} if background is None else {'background_writes': background}
    started = time.process_time(), time.perf_counter()
    tallies = run_collection(options, progress=False, **extra)
    cpu, wall = time.process_time() - started[0], time.perf_counter() - started[1]
    accepted = sum(tally.accepted for tally in tallies.values())
    return {
        'demos': accepted,
        'attempts': sum(tally.attempts for tally in tallies.values()),
        'frames': sum(int(entry['frames']) for entry in open_ledger(out).records),
        'cpu': cpu,
        'wall': wall,
        'bytes': _size(out),
    }


def _hashes(out: Path) -> dict[str, str]:
    import hashlib

    from robofollow_ros.data.store import stored_episodes

    return {str(s.hdf5.relative_to(out)): hashlib.sha256(s.hdf5.read_bytes()).hexdigest() for s in stored_episodes(out)}


def compare_workers(labels: list[str], *, episodes: int, workers: int, robot: str, ray: bool = False) -> None:
    """One worker against ``workers`` (and, with ``ray``, as many Ray actors) on the same labels (module docstring)."""
    from robofollow_ros.benchmark.registry import training_labels
    from robofollow_ros.data.collect import RaySettings

    full = len(training_labels()) * 50
    runs: dict[str, dict] = {'1 worker': {'workers': 1}, f'{workers} workers': {'workers': workers}}
    if ray:
        runs[f'Ray, {workers} actors'] = {'workers': workers, 'ray': RaySettings()}
    with tempfile.TemporaryDirectory() as folder:
        results = {}
        for index, (name, how) in enumerate(runs.items()):
            out = Path(folder) / f'run{index}'
            options = CollectOptions(out=out, labels=labels, episodes=episodes, robot=robot)
            started = time.perf_counter()
            tallies = run_collection(options, progress=False, **how)
            wall = time.perf_counter() - started
            demos = sum(tally.accepted for tally in tallies.values())
            attempts = sum(tally.attempts for tally in tallies.values())
            results[name] = (demos, attempts, wall, _hashes(out))
        print(f'load average after: {" ".join(f"{v:.2f}" for v in os.getloadavg())} on {os.cpu_count()} CPUs')
        print(f'robot {robot}, {len(labels)} labels x {episodes} demonstrations, three cameras, background writer')
        one = results['1 worker']
        for name, (demos, attempts, wall, hashes) in results.items():
            rate = demos / wall * 60.0
            print(
                f'{name}: {demos}/{attempts} accepted in {wall:.1f} s wall, {rate:.2f} demos/min '
                f'({one[2] / wall * demos / one[0]:.3f}x one worker); the training split ({full} demonstrations) in '
                f"{full / rate / 60.0:.1f} h at this rate; HDF5 files identical to one worker's: {hashes == one[3]} "
                f'({len(hashes)} files)'
            )


def main() -> None:
    """Run the baseline and the camera collection and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--labels-per-scene', type=int, default=2, help='first N training labels of each scene')
    parser.add_argument('--episodes', type=int, default=2, help='demonstrations per label')
    parser.add_argument('--video', action='store_true', help='also write an MP4 per demonstration')
    parser.add_argument('--lerobot', action='store_true', help='also time the LeRobot export of the camera run')
    parser.add_argument('--robot', default=DEFAULT_ROBOT, choices=robot_names())
    parser.add_argument('--workers', type=int, default=0, help='compare one worker with this many instead')
    parser.add_argument('--ray', action='store_true', help='with --workers: also as many actors on a local Ray')
    args = parser.parse_args()
    labels = [
        task.task_id for scene in range(1, 5) for task in registry.training_labels(scene=scene)[: args.labels_per_scene]
    ]
    if args.workers > 1:
        compare_workers(labels, episodes=args.episodes, workers=args.workers, robot=args.robot, ray=args.ray)
        return
    # Older trees have no background writer: then only the one-core camera run.
    has_background = 'background_writes' in inspect.signature(run_collection).parameters
    print(f'load average before: {" ".join(f"{v:.2f}" for v in os.getloadavg())} on {os.cpu_count()} CPUs')
    with tempfile.TemporaryDirectory() as folder:
        common = {'episodes': args.episodes, 'robot': args.robot}
        runs = {
            'expert, no images (baseline)': measure(
                labels, out=Path(folder) / 'plain', cameras=False, video=False, background=None, **common
            ),
            'three cameras, writes inline': measure(
                labels,
                out=Path(folder) / 'inline',
                cameras=True,
                video=args.video,
                background=False if has_background else None,
                **common,
            ),
        }
        if has_background:
            runs['three cameras, background writer'] = measure(
                labels, out=Path(folder) / 'cameras', cameras=True, video=args.video, background=True, **common
            )
        print(f'load average after: {" ".join(f"{v:.2f}" for v in os.getloadavg())}')
        print(f'robot {args.robot}, {len(labels)} labels x {args.episodes} demonstrations, one process')
        base = runs['expert, no images (baseline)']
        for name, result in runs.items():
            rate = result['demos'] / result['cpu'] * 3600.0
            wall_rate = result['demos'] / result['wall'] * 3600.0
            realtime = result['frames'] * ROW_SECONDS / result['wall']
            size = result['bytes'] / max(result['demos'], 1) / 1e6
            print(
                f'{name:34s} {rate:7.0f} demos/h per CPU-s, {wall_rate:7.0f} per wall-s, real time x{realtime:5.2f} '
                f'(CPU {result["cpu"]:.1f} s, wall {result["wall"]:.1f} s, {result["frames"]} frames), '
                f'{result["demos"]}/{result["attempts"]} accepted, {size:.2f} MB/demo; '
                f'wall ratio to baseline {base["wall"] / result["wall"] * result["frames"] / base["frames"]:.3f}'
            )
        if has_background:
            inline, background = runs['three cameras, writes inline'], runs['three cameras, background writer']
            print(f'background writer / inline (wall): {inline["wall"] / background["wall"]:.3f}x faster')
        if args.lerobot:
            from robofollow_ros.data.lerobot import export_lerobot

            started = time.process_time()
            source = Path(folder) / ('cameras' if has_background else 'inline')
            summary = export_lerobot(source, Path(folder) / 'lerobot')
            seconds = time.process_time() - started
            print(
                f'LeRobot export: {summary.episodes} episodes, {summary.frames} frames in {seconds:.1f} s CPU '
                f'({summary.episodes / seconds * 3600.0:.0f} demos/h per core), '
                f'{_size(summary.root) / summary.episodes / 1e6:.2f} MB/demo'
            )


if __name__ == '__main__':
    main()
