"""``robofollow demo``: a small simulated evaluation of the expert and the language-blind baseline."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from robofollow_ros.cli.options import add_robot_argument

if TYPE_CHECKING:
    from robofollow_ros.referee.table1 import Table

HELP = 'demo evaluation in simulation: expert vs language-blind baseline, one task per scene and level'
DESCRIPTION = """\
Run a small RoboFollow evaluation in the MuJoCo cell over the ROS 2 node graph (sim, policy bridge,
referee, recorder and evaluator nodes; --in-process for the same without ROS) and compare two policies:

  expert   the scripted planner with privileged state: it follows every instruction
  blind    the same planner, but language-blind: it always performs one fixed training task of the
           scene configuration, whatever the instruction says

Each policy runs the middle evaluation task of every scene x level cell (16 tasks; --all for all 554).
The gap between the two tables is what RoboFollow measures: a policy that ignores the instruction can
look fine on some cells and collapses where the instruction matters. Expert episodes are saved as
episode bags (trajectory files with --in-process) that `robofollow score` re-scores offline. Running the
demo again resumes it; results of another version of the package are moved aside into
OUT/<policy>/superseded-<time>/ first.
"""

POLICIES = ('expert', 'blind')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``robofollow demo``."""
    parser.add_argument('--out', type=Path, default=Path('runs') / 'demo', help='output folder (default runs/demo)')
    parser.add_argument('--all', action='store_true', help='all 554 evaluation tasks instead of 16')
    parser.add_argument('--rounds', type=int, default=1, help='rounds per task (default 1)')
    parser.add_argument('--quiet', action='store_true', help='no per-trial progress lines')
    add_robot_argument(parser)
    parser.add_argument('--in-process', action='store_true', help='run without ROS, in this process')


def demo_task_ids() -> list[str]:
    """The middle evaluation task (in registry order) of every scene × level cell: a spread of actions."""
    from robofollow_ros import benchmark

    cells = (benchmark.eval_tasks(scene=scene, level=level) for scene in benchmark.SCENES for level in benchmark.LEVELS)
    return [tasks[len(tasks) // 2].task_id for tasks in cells]


def side_by_side(tables: dict[str, Table]) -> str:
    """A Markdown table with IS / ES / CR of each policy per scene and level."""
    names = list(tables)
    first = tables[names[0]]
    header = '| Scene | Level | ' + ' | '.join(f'{name} IS / ES / CR' for name in names) + ' |'
    lines = [header, '|---|---|' + '---|' * len(names)]
    for row in first.rows:
        for level in first.levels:
            cells = []
            for name in names:
                value = tables[name].cells.get(row, {}).get(level)
                cells.append(' / '.join(f'{v:.1f}' for v in value) if value else '–')
            lines.append(f'| {row} | {level} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines) + '\n'


def preload(args: argparse.Namespace) -> None:
    """Import the simulator during start-up when it runs in this process (see ``robofollow_ros.interrupts``).

    A Ctrl-C inside MuJoCo's import (a C extension, then EGL through ctypes) would come out of it as an
    ``ImportError`` or a ``ctypes.ArgumentError``; during start-up it ends the process with one line instead.
    """
    if args.in_process:
        import robofollow_ros.sim.env  # noqa: F401


def run(args: argparse.Namespace) -> int:
    """Evaluate both policies, write their reports, print the comparison."""
    from robofollow_ros.cli.report import one_run
    from robofollow_ros.errors import RoboFollowError
    from robofollow_ros.evaluation.suite import SuiteOptions, run_suite
    from robofollow_ros.referee.table1 import plot_comparison, write_report

    if args.rounds < 1:
        raise RoboFollowError('--rounds must be at least 1')
    task_ids = None if args.all else demo_task_ids()
    tables: dict[str, Table] = {}
    for policy in POLICIES:
        out = args.out / policy
        options = SuiteOptions(
            out=out,
            policy=policy,
            task_ids=task_ids,
            rounds=args.rounds,
            record=('json' if args.in_process else 'bag') if policy == 'expert' else 'none',
            force_new=True,
            robot=args.robot,
        )
        where = 'in this process' if args.in_process else 'over the ROS 2 node graph'
        count = len(task_ids) if task_ids else 554
        print(f'== {policy}: {count} tasks x {args.rounds} round(s), {where} -> {out}', flush=True)
        if args.in_process:
            records = run_suite(options, progress=not args.quiet)
        else:
            from robofollow_ros.graph.run import run_graph_suite

            records = run_graph_suite(options, progress=not args.quiet)
        tables[policy] = write_report(records, out / 'report', about=one_run(records, sources=[str(out)])).table
    comparison = side_by_side(tables)
    (args.out / 'comparison.md').write_text(comparison, encoding='utf-8')
    plot_comparison(tables, args.out / 'comparison.png', title=' vs '.join(POLICIES) + f' ({args.out})')
    print()
    print(comparison)
    print(
        f'reports: {args.out}/<policy>/report/summary.{{md,csv,json,png}}; comparison: {args.out}/comparison.{{md,png}}'
    )
    episode = '<episode>.json' if args.in_process else '<episode bag>'
    print(f're-score an episode offline: robofollow score {args.out}/expert/episodes/{episode}')
    return 0
