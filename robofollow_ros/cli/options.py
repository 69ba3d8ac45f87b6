"""Command-line options shared by several subcommands (not a subcommand itself)."""

from __future__ import annotations

import argparse
from pathlib import Path

from robofollow_ros.errors import RoboFollowError
from robofollow_ros.evaluation.guard import DEFAULT_POLICY_MEMORY_MIB
from robofollow_ros.evaluation.options import DEFAULT_RAY_START_TIMEOUT
from robofollow_ros.robot.specs import DEFAULT_ROBOT, ROBOTS, robot_names


def add_robot_argument(parser: argparse.ArgumentParser) -> None:
    """``--robot NAME``: which registered robot the simulated cell is built with."""
    listing = '; '.join(f'{name}: {ROBOTS[name].description}' for name in robot_names())
    parser.add_argument(
        '--robot',
        choices=robot_names(),
        default=DEFAULT_ROBOT,
        help=f'robot of the simulated cell (default {DEFAULT_ROBOT}; {listing})',
    )


def add_ray_arguments(parser: argparse.ArgumentParser, *, what: str) -> None:
    """``--ray [ADDRESS]`` (``what`` runs as Ray actors) and ``--ray-start-timeout SECONDS``."""
    parser.add_argument(
        '--ray',
        nargs='?',
        const='',
        default=None,
        metavar='ADDRESS',
        help=f'run {what} as Ray actors (on the cluster at ADDRESS, or a local Ray instance)',
    )
    parser.add_argument(
        '--ray-start-timeout',
        type=float,
        default=DEFAULT_RAY_START_TIMEOUT,
        metavar='SECONDS',
        help=f'how long Ray may take to start or to be joined at ADDRESS (default {DEFAULT_RAY_START_TIMEOUT:g})',
    )


def add_confidence_arguments(parser: argparse.ArgumentParser, *, seed: int) -> None:
    """``--confidence PERCENT`` (level of the intervals, default 95) and ``--seed`` (of the resampling)."""
    parser.add_argument(
        '--confidence', type=float, default=95.0, metavar='PERCENT', help='level of every interval in %% (default 95)'
    )
    parser.add_argument('--seed', type=int, default=seed, help=f'resampling seed (default {seed})')


def confidence_fraction(percent: float) -> float:
    """``95`` -> ``0.95``.

    Raises:
        RoboFollowError: not strictly between 0 and 100.
    """
    if not 0.0 < percent < 100.0:
        raise RoboFollowError(f'--confidence must lie between 0 and 100 (percent), got {percent:g}')
    return percent / 100.0


def add_isolation_arguments(parser: argparse.ArgumentParser) -> None:
    """``--trusted-policy``, ``--policy-memory-limit MIB``, ``--policy-scratch DIR``, ``--policy-network
    HOST:PORT`` and ``--policy-python PATH``: how a ``module:function`` policy runs (in its sandbox unless
    trusted)."""
    parser.add_argument(
        '--trusted-policy',
        action='store_true',
        help="run a module:function policy in the simulator's process instead of its sandbox (no protection)",
    )
    parser.add_argument(
        '--policy-scratch',
        type=Path,
        metavar='DIR',
        help='a folder outside --out the sandboxed policy may write, kept between its processes (default: a '
        'private tmpfs /tmp that ends with each process)',
    )
    parser.add_argument(
        '--policy-network',
        metavar='HOST:PORT',
        help='let the sandboxed policy open TCP connections to HOST:PORT, reached at 127.0.0.1:PORT inside its '
        'sandbox (nothing else; every record and report says so)',
    )
    parser.add_argument(
        '--policy-python',
        metavar='PATH',
        help='run the sandboxed policy under this Python (e.g. <venv>/bin/python of an environment with its '
        'dependencies and module; default: this one, and for --policy lerobot $ROBOFOLLOW_LEROBOT_PYTHON or '
        '.venv-lerobot)',
    )
    parser.add_argument(
        '--policy-memory-limit',
        type=int,
        default=DEFAULT_POLICY_MEMORY_MIB,
        metavar='MIB',
        help=f'memory cap of a module:function policy in MiB, 0 for none (default {DEFAULT_POLICY_MEMORY_MIB})',
    )
