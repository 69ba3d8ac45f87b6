"""The ``robofollow`` command: one subcommand per module of this package.

Each subcommand module defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``, and
may define ``preload(args)``: heavy imports done during start-up, where Ctrl-C ends the process at once
with one line. Errors derived from ``RoboFollowError`` are printed as one line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from robofollow_ros import __version__
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.interrupts import exit_at_once_while_starting, interrupt_behind
from robofollow_ros.sim.gl import choose_gl_backend

SUBCOMMANDS: dict[str, str] = {
    'tasks': 'robofollow_ros.cli.tasks',
    'entropy': 'robofollow_ros.cli.entropy',
    'score': 'robofollow_ros.cli.score',
    'audit': 'robofollow_ros.cli.audit',
    'report': 'robofollow_ros.cli.report',
    'compare': 'robofollow_ros.cli.compare',
    'eval': 'robofollow_ros.cli.eval',
    'demo': 'robofollow_ros.cli.demo',
    'collect': 'robofollow_ros.cli.collect',
    'serve-policy': 'robofollow_ros.cli.serve_policy',
    'probe': 'robofollow_ros.cli.probe',
    'launch': 'robofollow_ros.cli.launch',
    'calibrate': 'robofollow_ros.cli.calibrate',
    'operator': 'robofollow_ros.cli.operator',
    'markers': 'robofollow_ros.cli.markers',
}

RESUMABLE = frozenset({'eval', 'demo'})
FAST = frozenset({'operator'})
"""Subcommands that must answer at once (``robofollow operator stop`` is an emergency stop): named first on the
command line, they are parsed alone, without importing the other subcommands (numpy, MuJoCo, OpenCV, the task
registry: seconds on a loaded machine) or choosing a GL backend (which runs ``ldconfig``); their modules import
nothing heavy."""

DESCRIPTION = """\
RoboFollow on ROS 2: does a robot policy really follow instructions?

Every RoboFollow scene supports many tasks, so a policy must read the instruction. A referee scores
each stage twice, Intent (right target?) and Execution (done?), plus a Completion Rate, over four
levels: L0 training, L1 new layout, L2 new wording, L3 both.
"""

EPILOG = """\
examples:
  robofollow demo                          expert vs language-blind baseline in simulation
  robofollow tasks --count                 evaluation tasks per scene and level
  robofollow tasks --scene 4 --level 3     list the Scene 4 L3 tasks
  robofollow entropy                       scene entropy H(T|S) of the training set
  robofollow eval --in-process --policy expert --scene 1 --level 0
  robofollow serve-policy --policy hold --port 8000   serve a policy to openpi clients
  robofollow score run/episode_0001.json   score a trajectory file or a rosbag2 directory
  robofollow score run/episodes/           score every recorded episode of a run
  robofollow report run/results.jsonl      tables (Markdown, CSV, JSON) and a plot
  robofollow compare runs/a runs/b         A vs B trial by trial: differences, intervals, verdicts
  robofollow collect --scene 1 --episodes 2 --out demos --format lerobot
  robofollow calibrate board.png --camera-info cam_high.yaml   camera extrinsic from the table board
  robofollow markers --out tags/           printable ArUco tags for a real cell's objects and table
  robofollow operator stop                 hold a real cell's arms now (also: home, ready, void)
"""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Return the argument parser with every available subcommand (or with subcommand ``only`` alone)."""
    parser = argparse.ArgumentParser(
        prog='robofollow',
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument('--version', action='version', version=f'%(prog)s {__version__}')
    subparsers = parser.add_subparsers(dest='command', metavar='COMMAND')
    for name, module_name in SUBCOMMANDS.items():
        if only is not None and name != only:
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:
                continue
            raise
        sub = subparsers.add_parser(
            name,
            help=module.HELP,
            description=getattr(module, 'DESCRIPTION', module.HELP),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(sub)
        sub.set_defaults(handler=module.run, preload=getattr(module, 'preload', None))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``robofollow`` command line; returns the process exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    fast = arguments[0] if arguments[:1] and arguments[0] in FAST else None
    if fast is None:
        choose_gl_backend()  # before a subcommand imports MuJoCo
    with exit_at_once_while_starting():  # importing the subcommands takes seconds: Ctrl-C there is one line
        parser = build_parser(only=fast)
        args = parser.parse_args(arguments)
        if getattr(args, 'preload', None) is not None:
            args.preload(args)
    if getattr(args, 'handler', None) is None:
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except BrokenPipeError:
        # The reader (e.g. `head`) went away: stop quietly, as command-line tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except BaseException as error:
        # A Ctrl-C inside a C extension's import comes out as an ImportError caused by it: still an interrupt.
        stop = interrupt_behind(error)
        if stop is not None:
            # SIGTERM arrives as a KeyboardInterrupt subclass naming the signal; plain Ctrl-C names nothing.
            name = str(stop) or 'SIGINT'
            resume = '; run the same command again to resume' if args.command in RESUMABLE else ''
            print(f'robofollow {args.command}: interrupted ({name}){resume}', file=sys.stderr)
            return 143 if name == 'SIGTERM' else 130
        if isinstance(error, RoboFollowError):
            print(f'robofollow {args.command}: error: {error}', file=sys.stderr)
            return 2
        raise


if __name__ == '__main__':
    sys.exit(main())
