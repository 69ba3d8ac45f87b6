"""Read speed of episode bags: read_episode_bag against rosbags' own AnyReader on the same bag, same run.

Writes one synthetic episode (default 30 s at 50 Hz, 10 objects, no images) as MCAP and as SQLite3, then
times, per storage (median of --repeats runs):
  - baseline: rosbags AnyReader iterating every raw message (no decoding);
  - baseline+deserialize: the same, deserializing every message with AnyReader.deserialize;
  - read_episode_bag: decoding, zero-order hold and gap detection into a Trajectory;
  - read_episode_bag on a copy with metadata.yaml removed and the last 10 % of the file cut (recovery path).
Prints messages per second and the ratio of each time to the baseline.

    .venv/bin/python bench/bench_bags.py [--seconds 30] [--rate 50] [--objects 10] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from robofollow_ros.bags import read_episode_bag, write_episode_bag
from robofollow_ros.referee.trajectory import Trajectory

META = {'task_id': 'bench', 'level': 'L0', 'layout': 'default', 'seed': 42, 'round': 0, 'arm': 'right'}
KEPT_FRACTION = 0.9


def synthetic_episode(seconds: float, rate: float, objects: int) -> Trajectory:
    """A random-walk episode with ``objects`` moving objects."""
    rng = np.random.default_rng(0)
    n = round(seconds * rate)

    def walk(width: int) -> np.ndarray:
        return np.cumsum(rng.normal(scale=1e-3, size=(n, width)), axis=0)

    def quats() -> np.ndarray:
        q = rng.normal(size=(n, 4))
        return q / np.linalg.norm(q, axis=1, keepdims=True)

    names = [f'object_{i}' for i in range(objects)]
    return Trajectory(
        t=np.arange(n) / rate,
        ee={arm: walk(3) for arm in ('left', 'right')},
        grip={arm: rng.random(n) for arm in ('left', 'right')},
        obj_pos={name: walk(3) for name in names},
        ee_quat={arm: quats() for arm in ('left', 'right')},
        obj_quat={name: quats() for name in names},
    )


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``run`` over ``repeats`` calls (after one warm-up call)."""
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def raw_iteration(bag: Path) -> int:
    """Baseline: iterate every raw message with rosbags' AnyReader."""
    count = 0
    with AnyReader([bag], default_typestore=get_typestore(Stores.ROS2_KILTED)) as reader:
        for _ in reader.messages():
            count += 1
    return count


def deserializing_iteration(bag: Path) -> int:
    """Baseline with decoding: iterate and deserialize every message with AnyReader."""
    count = 0
    with AnyReader([bag], default_typestore=get_typestore(Stores.ROS2_KILTED)) as reader:
        for connection, _, raw in reader.messages():
            reader.deserialize(raw, connection.msgtype)
            count += 1
    return count


def truncated_copy(bag: Path, target: Path) -> Path:
    """Copy of ``bag`` as a killed recorder leaves it: no metadata.yaml, the last 10 % of the storage file cut."""
    shutil.copytree(bag, target)
    (target / 'metadata.yaml').unlink()
    (storage,) = [p for p in target.iterdir() if p.suffix in ('.mcap', '.db3')]
    os.truncate(storage, int(storage.stat().st_size * KEPT_FRACTION))
    return target


def main() -> None:
    """Run the benchmark and print one table per storage."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seconds', type=float, default=30.0)
    parser.add_argument('--rate', type=float, default=50.0)
    parser.add_argument('--objects', type=int, default=10)
    parser.add_argument('--repeats', type=int, default=5)
    args = parser.parse_args()

    trajectory = synthetic_episode(args.seconds, args.rate, args.objects)
    print(
        f'episode: {args.seconds:g} s at {args.rate:g} Hz = {len(trajectory)} frames, {args.objects} objects, '
        f'no images; median of {args.repeats} runs'
    )
    with tempfile.TemporaryDirectory() as folder:
        for storage in ('mcap', 'sqlite3'):
            start = time.perf_counter()
            bag = write_episode_bag(Path(folder) / storage, meta=META, trajectory=trajectory, storage=storage)
            write_s = time.perf_counter() - start
            messages = raw_iteration(bag)
            damaged = truncated_copy(bag, Path(folder) / f'{storage}_cut')
            kept = len(read_episode_bag(damaged)[1])
            rows = [
                ('baseline: AnyReader raw iteration', median_seconds(lambda b=bag: raw_iteration(b), args.repeats)),
                (
                    'AnyReader iteration + deserialize',
                    median_seconds(lambda b=bag: deserializing_iteration(b), args.repeats),
                ),
                ('read_episode_bag', median_seconds(lambda b=bag: read_episode_bag(b), args.repeats)),
                (
                    f'read_episode_bag, cut copy ({kept} frames kept)',
                    median_seconds(lambda b=damaged: read_episode_bag(b), args.repeats),
                ),
            ]
            baseline = rows[0][1]
            print(f'\n{storage}: {messages} messages, written in {write_s:.2f} s ({messages / write_s:,.0f} msg/s)')
            for label, seconds in rows:
                rate = messages / seconds
                print(f'  {label:<48} {seconds * 1e3:8.1f} ms {rate:>12,.0f} msg/s  x{seconds / baseline:.2f}')


if __name__ == '__main__':
    main()
