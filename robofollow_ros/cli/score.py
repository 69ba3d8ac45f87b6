"""``robofollow score``: score trajectory files or episode bags offline, one JSON record per line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from robofollow_ros.benchmark.constants import DEFAULT_VARIANT
from robofollow_ros.benchmark.parsing import parse_variant
from robofollow_ros.benchmark.types import Layout, Task, Variant
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.referee.trajectory import Trajectory

HELP = 'score trajectory files or episode bags with the referee'
DESCRIPTION = """\
Score recorded episodes with the RoboFollow referee and print one JSON result record per episode
(one per line) on stdout.

PATH is a trajectory file (robofollow-trajectory/1 JSON, see docs/trajectory-format.md) or a rosbag2
episode bag recorded by robofollow (a directory, or its .mcap / .db3 file). The task comes from the
file's task_id (bag: /robofollow/episode), the layout from its meta "layout", else the task's own layout.
"""
BAG_SUFFIXES = ('.mcap', '.db3')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``robofollow score``."""
    parser.add_argument('paths', nargs='+', metavar='PATH', help='trajectory JSON file or episode bag')
    parser.add_argument(
        '--variant',
        metavar='{published,corrected}',
        help='truth and scoring rules (default: the variant recorded with the episode, else published)',
    )
    parser.add_argument('--config', metavar='FILE', help='referee constants overriding config/referee.yaml')


def _read(path: Path) -> tuple[str, str | None, dict[str, Any], Trajectory]:
    if path.is_dir() or path.suffix in BAG_SUFFIXES:
        from robofollow_ros.bags import read_episode_bag

        meta, trajectory = read_episode_bag(path)
        task_id = meta.get('task_id')
        if not isinstance(task_id, str):
            raise RoboFollowError(f'{path}: the episode meta data has no task_id')
        return task_id, meta.get('variant'), dict(meta), trajectory
    from robofollow_ros.referee.trajectory_json import load_trajectory

    document = load_trajectory(path)
    return document.task_id, document.variant, dict(document.meta), document.trajectory


def _task_and_layout(task_id: str, variant: Variant, meta: dict[str, Any]) -> tuple[Task, Layout]:
    from robofollow_ros.benchmark import registry

    task = registry.get_task(task_id, variant=variant)
    layout_name = meta.get('layout')
    layout = registry.get_layout(task.scene, layout_name) if layout_name else registry.layout_of(task)
    return task, layout


def score_path(path: Path, *, variant: str | None = None, config: Any = None) -> dict[str, Any]:
    """Score one trajectory file or bag and return its result record."""
    from robofollow_ros.referee.score import score_episode

    task_id, recorded_variant, meta, trajectory = _read(path)
    chosen = parse_variant(variant or recorded_variant or DEFAULT_VARIANT)
    task, layout = _task_and_layout(task_id, chosen, meta)
    keep = {key: meta[key] for key in ('seed', 'round', 'recovered', 'warnings') if meta.get(key) is not None}
    result = score_episode(task, trajectory, layout=layout, config=config, meta=keep, variant=chosen)
    record = result.to_record()
    record['source'] = str(path)
    return record


def run(args: argparse.Namespace) -> int:
    """Score every PATH; print the records as JSON Lines."""
    from robofollow_ros.referee.config import load_config

    config = load_config(args.config) if args.config else None
    if args.variant is not None:
        parse_variant(args.variant)
    for name in args.paths:
        path = Path(name)
        if not path.exists():
            raise RoboFollowError(f'{path}: no such file or directory')
        record = score_path(path, variant=args.variant, config=config)
        sys.stdout.write(json.dumps(record, allow_nan=False) + '\n')
        sys.stdout.flush()
    return 0
