"""``robofollow collect``: expert demonstrations of the training labels, exported for training."""

from __future__ import annotations

import argparse
from pathlib import Path

from robofollow_ros.cli.options import add_ray_arguments, add_robot_argument
from robofollow_ros.errors import DatasetError

HELP = 'collect expert demonstrations of the training labels (raw HDF5, LeRobot, rosbag2, videos)'
DESCRIPTION = """\
Collect expert demonstrations of the RoboFollow training labels (robofollow tasks --split train).

Each attempt runs the privileged expert on a training layout with a training seed (never an evaluation
seed) and one of the label's paraphrases, records three cameras, the 14-D state and the absolute 14-D
action target of every frame, and is kept only if the referee scores it complete. Demonstrations are
stored in the published raw layout (OUT/sceneN/sceneN_<label>/data/episode<k>.hdf5); --format lerobot
also writes a LeRobot v3.0 dataset to OUT/lerobot, --format bag a rosbag2 per demonstration. Running
the same command again resumes; other options on the same OUT are refused. --workers N collects N labels
at once in processes of their own; a label's attempts walk its seeds in order in one process, so the
demonstrations are the same files whatever N (it may change between a run and its resume). --ray [ADDRESS]
collects them on Ray actors (on the cluster at ADDRESS, or a Ray instance started on this machine bound to
127.0.0.1; needs `pip install .[ray]`), one per CPU unless --workers says otherwise; the actors send each
demonstration's files back to this process, so the nodes need no shared folder.
"""


def _split(values: list[str] | None) -> list[str]:
    return [item.strip() for value in values or [] for item in value.split(',') if item.strip()]


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split('x'))
    except ValueError:
        raise argparse.ArgumentTypeError(f'image size must look like 320x240, got {text!r}') from None
    if width < 8 or height < 8:
        raise argparse.ArgumentTypeError('image size must be at least 8x8')
    return width, height


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``robofollow collect``."""
    parser.add_argument('--scene', action='append', help='scene 1-4 (repeat or comma-separate; default all)')
    parser.add_argument('--labels', action='append', help='label ids, globs or substrings (comma-separated)')
    parser.add_argument('--episodes', type=int, default=50, help='accepted demonstrations per label (default 50)')
    parser.add_argument('--out', type=Path, required=True, help='collection folder')
    parser.add_argument(
        '--format',
        action='append',
        help='hdf5 (always written), lerobot, bag (repeat or comma-separate; default hdf5)',
    )
    parser.add_argument('--video', action='store_true', help='also write an MP4 per demonstration')
    parser.add_argument('--image-size', type=_size, default=(320, 240), help='camera image size WxH (default 320x240)')
    parser.add_argument('--max-attempts', type=int, default=5000, help='attempts per label (default 5000)')
    parser.add_argument(
        '--workers',
        type=int,
        default=None,
        help='labels collected at once, each in a process of its own (default 1; with --ray, one per CPU; '
        'the files are the same either way)',
    )
    add_ray_arguments(parser, what='the collectors')
    parser.add_argument('--quiet', action='store_true', help='no progress display')
    add_robot_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Collect, export, print the acceptance per label."""
    from robofollow_ros.benchmark.registry import parse_scene
    from robofollow_ros.data.collect import CollectOptions, RaySettings, resolve_labels, run_collection

    formats = set(_split(args.format)) or {'hdf5'}
    unknown = formats - {'hdf5', 'lerobot', 'bag'}
    if unknown:
        raise DatasetError(f'unknown --format {", ".join(sorted(unknown))}: use hdf5, lerobot or bag')
    scenes = [parse_scene(value) for value in _split(args.scene)] or None
    patterns: list[str | None] = [*_split(args.labels)] or [None]
    labels = list(
        dict.fromkeys(label for pattern in patterns for label in resolve_labels(scenes=scenes, pattern=pattern))
    )
    options = CollectOptions(
        out=args.out,
        labels=labels,
        episodes=args.episodes,
        bag='bag' in formats,
        video=args.video,
        width=args.image_size[0],
        height=args.image_size[1],
        max_attempts=args.max_attempts,
        robot=args.robot,
    )
    ray = None if args.ray is None else RaySettings(address=args.ray or None, start_timeout=args.ray_start_timeout)
    workers = args.workers if args.workers is not None else (0 if ray is not None else 1)
    tallies = run_collection(options, progress=not args.quiet, workers=workers, ray=ray)
    attempts = sum(tally.attempts for tally in tallies.values())
    kept = sum(tally.accepted for tally in tallies.values())
    for tally in tallies.values():
        reasons = ', '.join(f'{reason} x{count}' for reason, count in sorted(tally.reasons.items()))
        print(
            f'{tally.label}: {tally.accepted}/{tally.attempts} accepted{f" (rejected: {reasons})" if reasons else ""}'
        )
    print(f'{kept} demonstrations from {attempts} attempts ({kept / max(attempts, 1):.1%} accepted) in {args.out}')
    if 'lerobot' in formats:
        from robofollow_ros.data.lerobot import export_lerobot
        from robofollow_ros.data.progress import ExportProgress

        progress = None if args.quiet else ExportProgress()
        summary = export_lerobot(args.out, args.out / 'lerobot', overwrite=True, progress=progress)
        print(
            f'LeRobot dataset: {summary.episodes} episodes, {summary.frames} frames, {summary.tasks} tasks, '
            f'{summary.fps:.6g} fps in {summary.root}'
        )
    return 0
