"""``robofollow audit``: check the arm commands a real cell's episode bags hold against the robot profile's limits."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from robofollow_ros.errors import RoboFollowError

HELP = "check the arm commands in a real cell's episode bags against its robot profile"
DESCRIPTION = """\
Read every arm and gripper command a real-mode episode bag holds (record:=bag on the real graph: the
commands as the bridge sent them, docs/bags.md) and check them as a controller executes them: finite,
within the profile's joint limits, both TCPs inside its workspace box, and every segment within the
velocity limits, each message followed from where the one before left the arm (5 % slack for the
recorder's arrival times). Accelerations are not judged.

PATH is an episode bag (a directory, or its .mcap / .db3 file) or a folder of them (a run's episodes/).
The profile is the one the bag's result record names, unless --robot-profile is given. One line per bag
on stdout; the first violations of a bag follow it. Exit status 0 when every bag is clean, 1 when a
command broke a limit, 2 when a bag could not be read.
"""
SHOWN_VIOLATIONS = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``robofollow audit``."""
    parser.add_argument('paths', nargs='+', metavar='PATH', help='episode bag, or a folder of them')
    parser.add_argument(
        '--robot-profile', metavar='NAME', help="robot profile (a shipped name or a path; default: the bag's record's)"
    )


def _bags(path: Path) -> list[Path]:
    """``path`` itself, or the bags of a folder of them (``robofollow score``'s ``episode_paths``, without the
    trajectory files, which hold no commands); none for a folder without bags."""
    from robofollow_ros.cli.score import episode_paths

    if not path.is_dir():
        return [path]
    try:
        return [episode for episode in episode_paths(path) if episode.suffix != '.json']
    except RoboFollowError:
        return []


def audit_bag(path: Path, profile_name: str | None) -> tuple[str, list[str]]:
    """One line on the bag and its violations.

    Raises:
        RoboFollowError: the bag or its profile cannot be read.
    """
    from robofollow_ros.bags.commands import read_arm_commands
    from robofollow_ros.bags.reader import read_episode_meta, read_episode_result
    from robofollow_ros.robot.profiles import load_profile
    from robofollow_ros.safety.command_audit import audit_commands
    from robofollow_ros.safety.profile_limits import limits_from_profile, profile_tcp

    if profile_name is None:
        profile_name = read_episode_meta(path).get('robot_profile') or (read_episode_result(path) or {}).get(
            'robot_profile'
        )
        if not profile_name:
            raise RoboFollowError(
                f'{path}: its record names no robot profile (a simulated episode?): give --robot-profile'
            )
    profile = load_profile(str(profile_name))
    commands = read_arm_commands(path, profile)
    if not commands:
        raise RoboFollowError(f'{path}: no arm command of {profile.name} in it (recorded before bags held them?)')
    report = audit_commands(commands, limits_from_profile(profile), tcp=profile_tcp(profile), home=profile.home_state())
    verdict = 'clean' if report.clean else f'{len(report.violations)} violations'
    count = sum(report.messages.values())
    line = (
        f'{path}: {count} commands, {report.points} points on {len(report.messages)} topics ({profile.name}): {verdict}'
    )
    return line, list(report.violations)


def run(args: argparse.Namespace) -> int:
    """Audit every bag; the exit status (see ``DESCRIPTION``)."""
    status = 0
    for given in args.paths:
        bags = _bags(Path(given))
        if not bags:
            print(f'{given}: no episode bag in it', file=sys.stderr)
            status = 2
        for bag in bags:
            try:
                line, violations = audit_bag(bag, args.robot_profile)
            except RoboFollowError as error:
                print(f'error: {error}', file=sys.stderr)
                status = 2
                continue
            print(line)
            for violation in violations[:SHOWN_VIOLATIONS]:
                print(f'  {violation}')
            if len(violations) > SHOWN_VIOLATIONS:
                print(f'  ... and {len(violations) - SHOWN_VIOLATIONS} more')
            if violations and status == 0:
                status = 1
    return status
