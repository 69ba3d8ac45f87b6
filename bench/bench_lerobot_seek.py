"""Random access into the LeRobot export's videos: decode time of one random frame per keyframe interval (GOP).

A training loader reads frames in random order: for each it seeks to the keyframe at or before the frame and
decodes forward to it (what LeRobot's PyAV backend does), so the cost grows with the distance to the previous
keyframe. This collects a few demonstrations once (320x240, the default cameras), exports them with each GOP, and
times reading the same random frames of every camera through PyAV (seek, then decode up to the frame), with the
file kept open and opened per read (as LeRobot's decoder does per item); it prints per GOP the mean and p95 time
per frame, the samples/s of a loader reading the three cameras of a sample, the ratio against the first GOP (the
baseline: 34, the export's keyframe interval before) and the video bytes per demonstration.

With ``--lerobot-python`` (or ``ROBOFOLLOW_LEROBOT_PYTHON``) naming a Python with LeRobot, it also times random
``LeRobotDataset`` items (the training loader's samples/s) with each video backend.

Usage: ``MUJOCO_GL=egl .venv/bin/python bench/bench_lerobot_seek.py [--gops 34,17,8,4,1] [--reads 200]
[--collection DIR]`` (``--collection`` keeps the demonstrations for the next run, or reuses a ``robofollow collect``
folder).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import av
import numpy as np

from robofollow_ros.benchmark import registry
from robofollow_ros.data.collect import CollectOptions, run_collection
from robofollow_ros.data.lerobot import export_lerobot
from robofollow_ros.policy.lerobot_features import image_key
from robofollow_ros.state_layout import CAMERAS


def _read(container: av.container.InputContainer, index: int, *, frame_seconds: float) -> None:
    stream = container.streams.video[0]
    target = round(float(index * frame_seconds / stream.time_base))
    container.seek(target, stream=stream, backward=True, any_frame=False)
    frame = None
    for frame in container.decode(stream):
        if frame.pts >= target:
            frame.to_ndarray(format='rgb24')
            break
    if frame is None or frame.pts != target:
        raise SystemExit(f'seeking to frame {index} decoded pts {frame and frame.pts}, not {target}')


def read_random_frames(video: Path, indices: np.ndarray, *, frame_seconds: float, reopen: bool) -> list[float]:
    """Seconds per frame to seek to and decode each frame index of ``video`` (frame i at ``i * frame_seconds``).

    ``reopen`` opens the file for every read (as LeRobot's decoder does per item); otherwise it stays open.
    """
    seconds = []
    if reopen:
        for index in indices:
            started = time.perf_counter()
            with av.open(str(video)) as container:
                _read(container, int(index), frame_seconds=frame_seconds)
            seconds.append(time.perf_counter() - started)
        return seconds
    with av.open(str(video)) as container:
        for index in indices:
            started = time.perf_counter()
            _read(container, int(index), frame_seconds=frame_seconds)
            seconds.append(time.perf_counter() - started)
    return seconds


LEROBOT_ITEMS = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    root, backend, reads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    dataset = LeRobotDataset('robofollow/bench', root=root, video_backend=backend)
    indices = np.random.default_rng(0).integers(0, len(dataset), size=reads)
    dataset[0]
    seconds = []
    for index in indices:
        started = time.perf_counter()
        dataset[int(index)]
        seconds.append(time.perf_counter() - started)
    print(json.dumps(seconds))
    """
)


def lerobot_item_seconds(python: str, root: Path, *, backend: str, reads: int) -> np.ndarray:
    """Seconds per random ``LeRobotDataset`` item (three decoded camera frames, state, action, task)."""
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'HF_LEROBOT_HOME': str(root.parent / 'hf_home')}
    result = subprocess.run(
        [python, '-c', LEROBOT_ITEMS, str(root), backend, str(reads)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f'LeRobot ({backend}) failed: {result.stderr[-2000:]}')
    return np.array(json.loads(result.stdout.strip().splitlines()[-1]))


def collect(out: Path) -> None:
    """Two demonstrations of the first training label of each scene (the default 320x240 cameras)."""
    labels = [registry.training_labels(scene=scene)[0].task_id for scene in range(1, 5)]
    run_collection(CollectOptions(out=out, labels=labels, episodes=2), progress=False)


def main() -> None:
    """Export with every GOP, read the same random frames, and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        '--gops', default='34,17,8,4,1', help='keyframe intervals to compare; the first is the baseline'
    )
    parser.add_argument('--reads', type=int, default=200, help='random frames read per camera and GOP')
    parser.add_argument(
        '--lerobot-python',
        default=os.environ.get('ROBOFOLLOW_LEROBOT_PYTHON'),
        help='also time LeRobotDataset items with this Python (default $ROBOFOLLOW_LEROBOT_PYTHON)',
    )
    parser.add_argument('--backends', default='pyav,torchcodec', help='LeRobot video backends to time')
    parser.add_argument('--collection', type=Path, default=None, help='collection folder (collected once if missing)')
    args = parser.parse_args()
    gops = [int(value) for value in args.gops.split(',')]
    with tempfile.TemporaryDirectory() as folder:
        collection = args.collection or Path(folder) / 'demos'
        if not collection.exists():
            collect(collection)
        results = []
        indices: np.ndarray | None = None
        for gop in gops:
            root = Path(folder) / f'gop{gop}'
            summary = export_lerobot(collection, root, keyframe_every=gop)
            if indices is None:
                indices = np.random.default_rng(0).integers(0, summary.frames, size=args.reads)
            videos = [root / f'videos/{image_key(camera)}/chunk-000/file-000.mp4' for camera in CAMERAS]
            frame_seconds = 1.0 / summary.fps
            timings = {
                reopen: np.array(
                    [read_random_frames(v, indices, frame_seconds=frame_seconds, reopen=reopen) for v in videos]
                )
                for reopen in (False, True)
            }
            size = sum(video.stat().st_size for video in videos)
            items = {
                backend: lerobot_item_seconds(args.lerobot_python, root, backend=backend, reads=args.reads)
                for backend in (args.backends.split(',') if args.lerobot_python else [])
            }
            results.append((gop, timings, size / summary.episodes, summary, items))
        summary = results[0][3]
        print(f'{summary.episodes} demonstrations, {summary.frames} frames, {args.reads} random reads per camera')
        for reopen, how in ((False, 'file kept open'), (True, 'file opened per read')):
            base = results[0][1][reopen].mean()
            print(how)
            for gop, timings, size, _, _ in results:
                per_frame = timings[reopen]
                sample = per_frame.sum(axis=0)
                print(
                    f'  GOP {gop:>3}: {per_frame.mean() * 1e3:6.2f} ms mean, '
                    f'{np.percentile(per_frame, 95) * 1e3:6.2f} ms p95 per frame | {1.0 / sample.mean():6.1f} '
                    f'samples/s (3 cameras) | {base / per_frame.mean():5.2f}x GOP {gops[0]} | '
                    f'{size / 1e6:.2f} MB video per demonstration'
                )
        for backend in results[0][4]:
            base = results[0][4][backend].mean()
            print(f'LeRobotDataset items, video_backend={backend!r}')
            for gop, _, _, _, items in results:
                seconds = items[backend]
                print(
                    f'  GOP {gop:>3}: {seconds.mean() * 1e3:6.1f} ms mean, '
                    f'{np.percentile(seconds, 95) * 1e3:6.1f} ms p95 per item | {1.0 / seconds.mean():6.1f} samples/s '
                    f'| {base / seconds.mean():5.2f}x GOP {gops[0]}'
                )


if __name__ == '__main__':
    main()
