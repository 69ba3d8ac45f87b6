"""``robofollow score``: score trajectory files or episode bags offline, one JSON record per line."""

from __future__ import annotations

import argparse
import json
import stat
import sys
from pathlib import Path
from typing import Any

from robofollow_ros.benchmark.constants import DEFAULT_VARIANT
from robofollow_ros.benchmark.parsing import parse_variant
from robofollow_ros.benchmark.types import Layout, Task, Variant
from robofollow_ros.errors import RoboFollowError, TrajectoryError
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.textfiles import shown

HELP = 'score trajectory files or episode bags with the referee'
DESCRIPTION = """\
Score recorded episodes with the RoboFollow referee and print one JSON result record per episode
(one per line) on stdout.

PATH is a trajectory file (robofollow-trajectory/1 JSON, see docs/trajectory-format.md), a rosbag2
episode bag recorded by robofollow (a directory, or its .mcap / .db3 file), or a folder of such episodes
(e.g. the episodes/ folder of an evaluation run; hidden entries are skipped). The task comes from the
file's task_id (bag: /robofollow/episode) and is scored in its own layout: an episode whose meta "layout"
names another layout, whose frames hold other objects or whose objects start elsewhere is refused.

Every PATH is scored; each one that cannot be is reported on stderr with its name, and the exit status
is 2 at the end if any failed (also for a folder without episodes, or a FIFO or other special file, which
is never opened). A truncated bag that could be recovered is scored with a warning.
"""
BAG_SUFFIXES = ('.mcap', '.db3')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``robofollow score``."""
    parser.add_argument('paths', nargs='+', metavar='PATH', help='trajectory JSON file, episode bag, or a folder')
    parser.add_argument(
        '--variant',
        metavar='{published,corrected}',
        help='truth and scoring rules (default: the variant recorded with the episode, else published)',
    )
    parser.add_argument('--config', metavar='FILE', help='referee constants overriding config/referee.yaml')


def _special_kind(path: Path) -> str | None:
    """What ``path`` is when it is neither a regular file nor a folder (``None`` otherwise or if absent)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return 'a FIFO'
    if stat.S_ISSOCK(mode):
        return 'a socket'
    return 'a device' if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else 'a special file'


def _read(path: Path, object_poses: str | None = None) -> tuple[str, str | None, dict[str, Any], Trajectory]:
    kind = _special_kind(path)
    if kind is not None:
        raise RoboFollowError(f'{path}: is {kind}, not a file or folder; skipped without opening it')
    if path.is_dir() or path.suffix in BAG_SUFFIXES:
        from robofollow_ros.bags import read_episode_bag

        meta, trajectory = (
            read_episode_bag(path) if object_poses is None else read_episode_bag(path, object_poses=object_poses)
        )
        task_id = meta.get('task_id')
        if not isinstance(task_id, str):
            raise RoboFollowError(f'{path}: the episode meta data has no task_id')
        return task_id, meta.get('variant'), dict(meta), trajectory
    if object_poses is not None:
        raise RoboFollowError(f'{path}: object poses from {object_poses} are read from bags only')
    from robofollow_ros.referee.trajectory_json import load_trajectory

    document = load_trajectory(path)
    return document.task_id, document.variant, dict(document.meta), document.trajectory


def _task_and_layout(task_id: str, variant: Variant, meta: dict[str, Any]) -> tuple[Task, Layout]:
    """The task and its own layout; a recorded layout (meta ``layout``) must be that one.

    Raises:
        RoboFollowError: unknown task, or the episode names another layout.
    """
    from robofollow_ros.benchmark import registry

    task = registry.get_task(task_id, variant=variant)
    layout = registry.layout_of(task)
    recorded = meta.get('layout')
    if recorded is None:
        return task, layout
    try:
        named = registry.get_layout(task.scene, str(recorded)).name
    except RoboFollowError:
        named = None
    if named != layout.name:
        raise TrajectoryError(
            f'task {task_id} is set in layout {layout.name!r} of scene {task.scene}, but the episode was recorded '
            f'in layout {recorded!r} (meta "layout"); score it as a task of the layout it was recorded in'
        )
    return task, layout


KEPT_META: dict[str, tuple[type, str]] = {
    'seed': (int, 'an integer'),
    'round': (int, 'an integer'),
    'recovered': (str, 'text'),
    'warnings': (list, 'a list of texts'),
}
"""The episode meta data a result record carries, and what each must be when it is not null."""


def _kept_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """The ``KEPT_META`` entries of ``meta`` that are not null.

    Raises:
        TrajectoryError: one of them is not of its kind (a NaN seed, a boolean round, a warning that is not text).
    """
    kept = {key: meta[key] for key in KEPT_META if meta.get(key) is not None}
    for key, value in kept.items():
        kind, expected = KEPT_META[key]
        wrong = isinstance(value, bool) or not isinstance(value, kind)
        if wrong or (kind is list and not all(isinstance(item, str) for item in value)):
            raise TrajectoryError(f'meta "{key}" must be {expected} or null, got {shown(value)}')
    return kept


def _other_layouts(task: Task) -> tuple[Layout, ...]:
    from robofollow_ros.benchmark import registry

    return tuple(registry.get_layout(task.scene, name) for name in registry.layout_names(task.scene))


def score_path(
    path: Path, *, variant: str | None = None, config: Any = None, object_poses: str | None = None
) -> dict[str, Any]:
    """Score one trajectory file or bag and return its result record (a bag's object poses from the topics under
    ``object_poses``, e.g. ``topics.TRUTH_POSE_PREFIX``, if given)."""
    from robofollow_ros.referee.layout_check import check_recorded_layout
    from robofollow_ros.referee.score import score_episode
    from robofollow_ros.referee.validation import check_physical

    task_id, recorded_variant, meta, trajectory = _read(path, object_poses)
    chosen = parse_variant(variant or recorded_variant or DEFAULT_VARIANT)
    task, layout = _task_and_layout(task_id, chosen, meta)
    check_physical(trajectory)  # before the layout check, which would call a 1e308 position merely misplaced
    check_recorded_layout(trajectory, task=task, layout=layout, others=_other_layouts(task))
    keep = _kept_meta(meta)
    result = score_episode(task, trajectory, layout=layout, config=config, meta=keep, variant=chosen)
    record = result.to_record()
    record['source'] = str(path)
    return record


def _is_bag(path: Path) -> bool:
    return (path / 'metadata.yaml').exists() or any(child.suffix in BAG_SUFFIXES for child in path.iterdir())


def episode_paths(path: Path) -> list[Path]:
    """The episodes ``path`` names: itself, or for a folder that is not a bag, its episode files and bags.

    A ``.json`` entry of a folder that is a FIFO or another special file is listed (``score_path`` then
    refuses it without opening it), so that it is named rather than silently passed over.

    Raises:
        RoboFollowError: ``path`` does not exist, or is a folder without episodes.
    """
    if not path.exists():
        raise RoboFollowError(f'{path}: no such file or directory')
    if not path.is_dir() or _is_bag(path):
        return [path]
    found = [
        child
        for child in sorted(path.iterdir())
        if not child.name.startswith('.') and (child.suffix == '.json' or (child.is_dir() and _is_bag(child)))
    ]
    if not found:
        raise RoboFollowError(
            f'no episodes found in {path} (expected trajectory .json files or episode bags, e.g. the episodes/ '
            'folder of a run)'
        )
    return found


def _named(path: Path, error: Exception) -> str:
    message = str(error)
    return message if str(path) in message else f'{path}: {message}'


def run(args: argparse.Namespace) -> int:
    """Score every episode; print the records as JSON Lines, each failure as one line on stderr."""
    from robofollow_ros.evaluation.digests import check_file_unchanged
    from robofollow_ros.referee.config import load_config

    config = load_config(args.config) if args.config else None
    if args.variant is not None:
        parse_variant(args.variant)
    failures = scored = 0
    for name in args.paths:
        try:
            paths = episode_paths(Path(name))
        except RoboFollowError as error:
            paths, failures = [], failures + 1
            print(f'robofollow score: error: {error}', file=sys.stderr)
        for path in paths:
            try:
                check_file_unchanged(path, what=f'cannot score {path}')
                record = score_path(path, variant=args.variant, config=config)
            except RoboFollowError as error:
                failures += 1
                print(f'robofollow score: error: {_named(path, error)}', file=sys.stderr)
                continue
            scored += 1
            if record.get('recovered'):
                print(
                    f'warning: {path}: damaged bag, scored what was recovered ({record["recovered"]})', file=sys.stderr
                )
            for warning in record.get('warnings') or ():
                print(f'warning: {path}: {warning}', file=sys.stderr)
            sys.stdout.write(json.dumps(record, allow_nan=False) + '\n')
            sys.stdout.flush()
    if failures and failures + scored > 1:
        print(f'robofollow score: {failures} of {failures + scored} episodes could not be scored', file=sys.stderr)
    return 2 if failures else 0
