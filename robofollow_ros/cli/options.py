"""Command-line options shared by several subcommands (not a subcommand itself)."""

from __future__ import annotations

import argparse

from robofollow_ros.sim.robots import DEFAULT_ROBOT, ROBOTS, robot_names


def add_robot_argument(parser: argparse.ArgumentParser) -> None:
    """``--robot NAME``: which registered robot the simulated cell is built with."""
    listing = '; '.join(f'{name}: {ROBOTS[name].description}' for name in robot_names())
    parser.add_argument(
        '--robot',
        choices=robot_names(),
        default=DEFAULT_ROBOT,
        help=f'robot of the simulated cell (default {DEFAULT_ROBOT}; {listing})',
    )
