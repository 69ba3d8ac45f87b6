"""Saving episodes next to the results, crash-safe: each episode is published whole or not at all.

An episode is written under a hidden temporary name and renamed into ``episodes/`` in one step
(``robofollow_ros.textfiles.publish``); only then is its record appended to the results. A kill at any point
leaves at most a hidden temporary, or a published episode without a record; ``leftovers.clean_run_leftovers``
removes both (and nothing else) before a run resumes, so neither blocks the rerun, and ``robofollow score
episodes/*`` never sees a partial one.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from robofollow_ros.benchmark.types import Layout
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.textfiles import publish

RecordMode = Literal['none', 'json', 'bag']
EPISODES_DIR = 'episodes'
VIDEOS_DIR = 'videos'
"""Where ``--video`` puts each trial's ``<stem>.mp4`` (``evaluation.video.save_trial_video``)."""
LAYOUTS_DIR = 'layouts'
"""Where a run on a real cell keeps the pictures of each trial's layout for the operator."""


def episode_stem(task_id: str, round_: int) -> str:
    """The file name (without suffix) of a trial's episode."""
    return f'{task_id}__r{round_:02d}'


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def save_episode(
    out: Path,
    *,
    mode: RecordMode,
    stem: str,
    meta: Mapping[str, Any],
    trajectory: Trajectory,
    record: Mapping[str, Any],
    layout: Layout | None = None,
) -> str:
    """Publish one episode as ``episodes/<stem>.json`` or the bag folder ``episodes/<stem>`` (with ``layout``, the
    bag also shows the scene objects as markers).

    A published episode of the same name without a record (left by a kill before its record was written)
    is replaced. Returns the episode's path relative to ``out``.
    """
    folder = out / EPISODES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    if mode == 'bag':
        from robofollow_ros.bags import write_episode_bag

        path = folder / stem
        if path.exists():
            _remove(path)
        write_episode_bag(path, meta=meta, trajectory=trajectory, result=record, layout=layout)
    else:
        from robofollow_ros.referee.trajectory_json import dump_trajectory

        path = folder / f'{stem}.json'
        publish(
            path,
            lambda temporary: dump_trajectory(
                temporary, trajectory, task_id=str(meta['task_id']), variant=meta['variant'], meta=dict(meta)
            ),
        )
    return str(path.relative_to(out))
