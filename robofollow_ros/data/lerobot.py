"""Export a collection as a LeRobot dataset (format ``v3.0``) without LeRobot installed: pyarrow + PyAV.

One LeRobot episode per demonstration: frame t holds the state and images of recorded frame t and the absolute
target commanded from it (t = 0 .. N - 2), ``task`` = the paraphrase the demonstration was collected with. Frames
of all episodes go into shared parquet files, and each camera's frames into shared H.264 files, back to back; the
episode table says where each episode starts. Rules that LeRobot does not check but silently relies on (docs/data.md)
hold by construction: tasks as the index of ``tasks.parquet`` in task order, episodes in order,
per-file ``from_timestamp``, ``total_frames`` = parquet rows, constant frame rate from pts 0.

The frame rate is the recorded one, 50/3 fps (a frame every 0.06 s, ``sim.capture``), written as the float
16.666666666666668 in ``info.json``; timestamps are ``frame_index * 0.06`` and the videos' time base is 3/50 s, so a
frame's timestamp, its video pts and its recorded simulated time agree. A keyframe every ``VIDEO_GOP`` frames keeps
a random read to at most ``VIDEO_GOP - 1`` extra decoded frames per camera (``bench/bench_lerobot_seek.py``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from robofollow_ros.data.collect import row_fps
from robofollow_ros.data.raw_hdf5 import read_raw_episode
from robofollow_ros.data.store import StoredEpisode, stored_episodes
from robofollow_ros.errors import DatasetError
from robofollow_ros.evaluation.video import VideoWriter
from robofollow_ros.policy.lerobot_features import ACTION_FEATURE, JOINT_NAMES, STATE_FEATURE, image_key
from robofollow_ros.state_layout import CAMERAS

CODEBASE_VERSION = 'v3.0'
ROBOT_TYPE = 'robofollow_cell'
CHUNKS_SIZE = 1000
EPISODES_PER_FILE = 500
DATA_PATH = 'data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet'
VIDEO_PATH = 'videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4'
EPISODES_PATH = 'meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet'
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
VIDEO_CRF = 18
VIDEO_GOP = 8
"""Frames per keyframe of the exported videos (34 before: a random frame then cost up to 33 decoded frames)."""


@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote."""

    root: Path
    episodes: int
    frames: int
    tasks: int
    fps: float


def _os_problem(error: OSError) -> str:
    problem = error.strerror or str(error)
    return f'{problem} ({error.filename})' if error.filename else problem


def _file_position(counter: int) -> tuple[int, int]:
    return counter // CHUNKS_SIZE, counter % CHUNKS_SIZE


def _stats(values: np.ndarray) -> dict[str, Any]:
    values = np.asarray(values, dtype=np.float64)
    stats = {
        'min': values.min(axis=0),
        'max': values.max(axis=0),
        'mean': values.mean(axis=0),
        'std': values.std(axis=0),
        'count': np.array([values.shape[0]]),
    }
    for q in QUANTILES:
        stats[f'q{round(q * 100):02d}'] = np.quantile(values, q, axis=0)
    return {key: np.atleast_1d(value).tolist() for key, value in stats.items()}


class PixelHistogram:
    """Per-channel histogram of uint8 pixels: exact image statistics in constant memory, however many frames."""

    def __init__(self) -> None:
        self.counts = np.zeros((3, 256), dtype=np.int64)
        self.frames = 0

    def add(self, frames: np.ndarray) -> None:
        """Count the pixels of (N, H, W, 3) frames."""
        for channel in range(3):
            self.counts[channel] += np.bincount(frames[..., channel].ravel(), minlength=256)
        self.frames += int(frames.shape[0])

    def stats(self) -> dict[str, Any]:
        """LeRobot's image statistics: per channel, scaled to [0, 1], shaped (3, 1, 1); quantiles by histogram."""
        levels = np.arange(256) / 255.0
        total = self.counts.sum(axis=1)
        mean = (self.counts * levels).sum(axis=1) / total
        std = np.sqrt((self.counts * (levels[None, :] - mean[:, None]) ** 2).sum(axis=1) / total)
        present = self.counts > 0
        cumulative = np.cumsum(self.counts, axis=1) / total[:, None]
        values = {
            'min': [levels[np.argmax(row)] for row in present],
            'max': [levels[255 - np.argmax(row[::-1])] for row in present],
            'mean': mean.tolist(),
            'std': std.tolist(),
        }
        for q in QUANTILES:
            values[f'q{round(q * 100):02d}'] = [levels[np.searchsorted(row, q)] for row in cumulative]
        stats: dict[str, Any] = {key: [[[float(v)]] for v in value] for key, value in values.items()}
        stats['count'] = [self.frames]
        return stats


def _features(height: int, width: int, fps: float) -> dict[str, Any]:
    vector = {'dtype': 'float32', 'shape': [14], 'names': list(JOINT_NAMES)}
    features: dict[str, Any] = {STATE_FEATURE: dict(vector), ACTION_FEATURE: dict(vector)}
    for camera in CAMERAS:
        features[image_key(camera)] = {
            'dtype': 'video',
            'shape': [height, width, 3],
            'names': ['height', 'width', 'channels'],
            'info': {
                'video.height': height,
                'video.width': width,
                'video.codec': 'h264',
                'video.pix_fmt': 'yuv420p',
                'video.is_depth_map': False,
                'video.fps': fps,
                'video.channels': 3,
                'has_audio': False,
            },
        }
    for name in ('timestamp',):
        features[name] = {'dtype': 'float32', 'shape': [1], 'names': None}
    for name in ('frame_index', 'episode_index', 'index', 'task_index'):
        features[name] = {'dtype': 'int64', 'shape': [1], 'names': None}
    return features


class _FileSet:
    """The data parquet file and the three camera videos currently being filled."""

    def __init__(self, root: Path, counter: int, fps: Fraction, *, keyframe_every: int) -> None:
        self.chunk, self.file = _file_position(counter)
        self.root = root
        self.rows: dict[str, list[Any]] = {
            STATE_FEATURE: [],
            ACTION_FEATURE: [],
            'timestamp': [],
            'frame_index': [],
            'episode_index': [],
            'index': [],
            'task_index': [],
        }
        self.frames_in_file = 0
        self.videos = {
            camera: VideoWriter(
                root / VIDEO_PATH.format(video_key=image_key(camera), chunk_index=self.chunk, file_index=self.file),
                fps=fps,
                crf=VIDEO_CRF,
                keyframe_every=keyframe_every,
            )
            for camera in CAMERAS
        }

    def close(self) -> None:
        vector = pa.list_(pa.float32(), 14)
        table = pa.table(
            {
                STATE_FEATURE: pa.array(self.rows[STATE_FEATURE], type=vector),
                ACTION_FEATURE: pa.array(self.rows[ACTION_FEATURE], type=vector),
                'timestamp': pa.array(self.rows['timestamp'], type=pa.float32()),
                'frame_index': pa.array(self.rows['frame_index'], type=pa.int64()),
                'episode_index': pa.array(self.rows['episode_index'], type=pa.int64()),
                'index': pa.array(self.rows['index'], type=pa.int64()),
                'task_index': pa.array(self.rows['task_index'], type=pa.int64()),
            }
        )
        path = self.root / DATA_PATH.format(chunk_index=self.chunk, file_index=self.file)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        for writer in self.videos.values():
            writer.close()


def export_lerobot(
    collection: Path,
    root: Path,
    *,
    overwrite: bool = False,
    episodes_per_file: int = EPISODES_PER_FILE,
    keyframe_every: int = VIDEO_GOP,
    progress: Callable[[int, int], None] | None = None,
) -> ExportSummary:
    """Write the accepted demonstrations of ``collection`` as a LeRobot v3.0 dataset in ``root``.

    Args:
        collection: a folder written by ``robofollow collect``.
        root: dataset folder to create (LeRobot: ``LeRobotDataset(repo_id, root=root)``).
        overwrite: replace an existing ``root``.
        episodes_per_file: episodes per data and video file before the next file starts.
        keyframe_every: frames per keyframe of the videos (random reads decode up to this many frames).
        progress: called with (episodes written, episodes) after each episode.

    Raises:
        DatasetError: the collection is empty or unreadable, ``root`` exists and ``overwrite`` is false, or the
            dataset cannot be written. An existing ``root`` is replaced only once the new dataset is complete.
    """
    if episodes_per_file < 1:
        raise DatasetError('a LeRobot file holds at least one episode')
    if keyframe_every < 1:
        raise DatasetError('a keyframe interval is at least one frame')
    episodes = stored_episodes(collection)
    if not episodes:
        raise DatasetError(f'{collection} holds no accepted demonstration yet')
    if root.exists() and not overwrite:
        raise DatasetError(f'{root} exists; choose a new folder for the LeRobot dataset')
    fps = row_fps()
    staging, replaced = root.with_name(root.name + '.partial'), root.with_name(root.name + '.replaced')
    try:
        if replaced.exists() and not root.exists():
            replaced.rename(root)  # an export killed between the two renames below
        for leftover in (staging, replaced):
            shutil.rmtree(leftover, ignore_errors=True)
        summary = _write(
            staging,
            episodes,
            fps=fps,
            episodes_per_file=episodes_per_file,
            keyframe_every=keyframe_every,
            progress=progress,
        )
        # The previous export goes only once the new one is complete (a refusal above leaves it as it was).
        if root.exists():
            root.rename(replaced)
        try:
            staging.rename(root)
        except OSError:
            if replaced.exists():
                replaced.rename(root)
            raise
        shutil.rmtree(replaced, ignore_errors=True)
    except OSError as error:
        raise DatasetError(f'cannot write the LeRobot dataset {root}: {_os_problem(error)}') from error
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ExportSummary(root=root, episodes=summary[0], frames=summary[1], tasks=summary[2], fps=float(fps))


def _write(
    root: Path,
    episodes: Sequence[StoredEpisode],
    *,
    fps: Fraction,
    episodes_per_file: int,
    keyframe_every: int,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[int, int, int]:
    tasks: dict[str, int] = {}
    episode_rows: list[dict[str, Any]] = []
    provenance: list[dict[str, Any]] = []
    states: list[np.ndarray] = []
    actions: list[np.ndarray] = []
    pixels = {camera: PixelHistogram() for camera in CAMERAS}
    index = 0
    shape: tuple[int, int] | None = None
    files: _FileSet | None = None
    for episode_index, stored in enumerate(episodes):
        if files is None or episode_index % episodes_per_file == 0:
            if files is not None:
                files.close()
            files = _FileSet(root, episode_index // episodes_per_file, fps, keyframe_every=keyframe_every)
        frames, _ = read_raw_episode(stored.hdf5)
        length = len(frames) - 1
        if length < 1 or any(camera not in frames.images for camera in CAMERAS):
            raise DatasetError(f'{stored.hdf5}: a demonstration needs two frames and three cameras')
        height, width = frames.images[CAMERAS[0]].shape[1:3]
        shape = shape or (height, width)
        task_index = tasks.setdefault(stored.instruction, len(tasks))
        start_frame = files.frames_in_file
        rows = files.rows
        rows[STATE_FEATURE] += frames.states[:length].tolist()
        rows[ACTION_FEATURE] += frames.actions[:length].tolist()
        rows['timestamp'] += [float(i / fps) for i in range(length)]
        rows['frame_index'] += list(range(length))
        rows['episode_index'] += [episode_index] * length
        rows['index'] += list(range(index, index + length))
        rows['task_index'] += [task_index] * length
        for camera in CAMERAS:
            for frame in frames.images[camera][:length]:
                files.videos[camera].write(frame)
            pixels[camera].add(frames.images[camera][:length])
        states.append(frames.states[:length])
        actions.append(frames.actions[:length])
        files.frames_in_file += length
        row: dict[str, Any] = {
            'episode_index': episode_index,
            'tasks': [stored.instruction],
            'length': length,
            'data/chunk_index': files.chunk,
            'data/file_index': files.file,
            'dataset_from_index': index,
            'dataset_to_index': index + length,
        }
        for camera in CAMERAS:
            key = image_key(camera)
            row[f'videos/{key}/chunk_index'] = files.chunk
            row[f'videos/{key}/file_index'] = files.file
            row[f'videos/{key}/from_timestamp'] = float(start_frame / fps)
            row[f'videos/{key}/to_timestamp'] = float((start_frame + length) / fps)
        row['meta/episodes/chunk_index'] = 0
        row['meta/episodes/file_index'] = 0
        episode_rows.append(row)
        provenance.append(
            {'episode_index': episode_index, 'label': stored.label, 'seed': stored.seed, 'source': str(stored.hdf5)}
        )
        index += length
        if progress is not None:
            progress(episode_index + 1, len(episodes))
    assert files is not None and shape is not None
    files.close()
    _write_meta(root, episode_rows, tasks, states, actions, pixels, shape=shape, fps=fps, frames=index)
    (root / 'meta' / 'robofollow_episodes.json').write_text(json.dumps(provenance, indent=1) + '\n', encoding='utf-8')
    return len(episode_rows), index, len(tasks)


def _write_meta(
    root: Path,
    episode_rows: list[dict[str, Any]],
    tasks: dict[str, int],
    states: list[np.ndarray],
    actions: list[np.ndarray],
    pixels: dict[str, PixelHistogram],
    *,
    shape: tuple[int, int],
    fps: Fraction,
    frames: int,
) -> None:
    meta = root / 'meta'
    path = root / EPISODES_PATH.format(chunk_index=0, file_index=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(episode_rows), path)
    # LeRobot reads the task strings from the pandas index of this table, in task_index order.
    table = pd.DataFrame({'task_index': list(tasks.values())}, index=pd.Index(list(tasks), name='task'))
    table.to_parquet(meta / 'tasks.parquet')
    all_states, all_actions = np.concatenate(states), np.concatenate(actions)
    episode_index = np.concatenate([np.full(len(s), i) for i, s in enumerate(states)])
    frame_index = np.concatenate([np.arange(len(s)) for s in states])
    stats: dict[str, Any] = {
        STATE_FEATURE: _stats(all_states),
        ACTION_FEATURE: _stats(all_actions),
        'timestamp': _stats((frame_index / float(fps))[:, None]),
        'frame_index': _stats(frame_index[:, None]),
        'episode_index': _stats(episode_index[:, None]),
        'index': _stats(np.arange(frames)[:, None]),
        'task_index': _stats(
            np.concatenate([np.full(len(s), tasks[r['tasks'][0]]) for s, r in zip(states, episode_rows, strict=True)])[
                :, None
            ]
        ),
    }
    for camera in CAMERAS:
        stats[image_key(camera)] = pixels[camera].stats()
    (meta / 'stats.json').write_text(json.dumps(stats, indent=1) + '\n', encoding='utf-8')
    info = {
        'codebase_version': CODEBASE_VERSION,
        'robot_type': ROBOT_TYPE,
        'total_episodes': len(episode_rows),
        'total_frames': frames,
        'total_tasks': len(tasks),
        'chunks_size': CHUNKS_SIZE,
        'data_files_size_in_mb': 100,
        'video_files_size_in_mb': 200,
        'fps': float(fps),
        'splits': {'train': f'0:{len(episode_rows)}'},
        'data_path': DATA_PATH,
        'video_path': VIDEO_PATH,
        'features': _features(shape[0], shape[1], float(fps)),
    }
    (meta / 'info.json').write_text(json.dumps(info, indent=4) + '\n', encoding='utf-8')
