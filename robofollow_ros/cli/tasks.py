"""``robofollow tasks``: list, filter and count the benchmark's tasks."""

from __future__ import annotations

import argparse
import json

from robofollow_ros.benchmark import (
    LEVELS,
    SCENES,
    eval_tasks,
    get_layout,
    layout_names,
    parse_scene,
    training_labels,
)
from robofollow_ros.benchmark.serialize import task_to_dict
from robofollow_ros.benchmark.types import Task
from robofollow_ros.errors import RegistryError, UnknownLayoutError, UnknownTaskError

HELP = 'list, filter and count training labels and evaluation tasks'
DESCRIPTION = """\
List the RoboFollow tasks: the 554 evaluation tasks (default) or the 75 training labels.

examples:
  robofollow tasks --count                     evaluation tasks per scene and level (554 in all)
  robofollow tasks --scene 4 --level L3        the Scene 4 L3 tasks
  robofollow tasks --pattern 'L1_s1*' --json   Scene 1 L1 tasks with ground truth, as JSON
  robofollow tasks --split train --scene s2    the Scene 2 training labels
  robofollow tasks --layout scene2.5           the tasks of layout 2.5 (bowls swapped)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``robofollow tasks``."""
    parser.add_argument('--scene', help='scene 1-4 (also s1, scene1)')
    parser.add_argument('--level', help='level 0-3 (also L0); evaluation tasks only')
    parser.add_argument(
        '--split', choices=('eval', 'train'), default='eval', help='evaluation tasks or training labels'
    )
    parser.add_argument('--pattern', help='glob (with * ? [) or substring matched against the task ID')
    parser.add_argument('--layout', help='only tasks in this layout (e.g. default, scene1_2, scene2.5, scene4.6)')
    parser.add_argument(
        '--variant',
        metavar='{published,corrected}',
        default='published',
        help='ground truth: published (default) or corrected (docs/scoring.md)',
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument('--json', action='store_true', help='print one JSON array of tasks with ground truth')
    output.add_argument('--count', action='store_true', help='print a table of counts (scene x level)')


def _select(args: argparse.Namespace) -> list[Task]:
    if args.split == 'train':
        if args.level is not None:
            raise RegistryError('training labels have no level; drop --level or use --split eval')
        tasks = training_labels(scene=args.scene, pattern=args.pattern)
    else:
        tasks = eval_tasks(scene=args.scene, level=args.level, variant=args.variant, pattern=args.pattern)
    if args.pattern is not None and not tasks:
        raise UnknownTaskError(f'no {args.split} task ID matches {args.pattern!r}')
    if args.layout is not None:
        tasks = _in_layout(tasks, args.layout, scene=args.scene)
    return tasks


def _in_layout(tasks: list[Task], name: str, *, scene: str | None) -> list[Task]:
    scenes = [parse_scene(scene)] if scene is not None else list(SCENES)
    known = {}
    for number in scenes:
        try:
            known[number] = get_layout(number, name).name
        except UnknownLayoutError:
            continue
    if not known:
        choices = ', '.join(sorted({layout for number in scenes for layout in layout_names(number)}))
        raise UnknownLayoutError(f'unknown layout {name!r}; layouts: {choices}')
    return [task for task in tasks if known.get(task.scene) == get_layout(task.scene, task.layout).name]


def _count_table(tasks: list[Task], *, split: str) -> str:
    columns = ['train'] if split == 'train' else [f'L{level}' for level in LEVELS]
    counts = {(scene, column): 0 for scene in SCENES for column in columns}
    for task in tasks:
        counts[(task.scene, task.level_tag)] += 1
    width = max(6, *(len(column) for column in columns))
    lines = ['scene  ' + ''.join(f'{column:>{width}}' for column in columns) + f'{"total":>{width}}']
    for scene in SCENES:
        row = [counts[(scene, column)] for column in columns]
        lines.append(f'S{scene:<6}' + ''.join(f'{value:>{width}}' for value in row) + f'{sum(row):>{width}}')
    totals = [sum(counts[(scene, column)] for scene in SCENES) for column in columns]
    lines.append('total  ' + ''.join(f'{value:>{width}}' for value in totals) + f'{sum(totals):>{width}}')
    return '\n'.join(lines)


def run(args: argparse.Namespace) -> int:
    """List, count or dump the selected tasks."""
    tasks = _select(args)
    if args.count:
        print(_count_table(tasks, split=args.split))
        return 0
    if args.json:
        print(json.dumps([task_to_dict(task) for task in tasks], indent=1))
        return 0
    for task in tasks:
        flags = f'  [{", ".join(task.flags)}]' if task.flags and args.split == 'eval' else ''
        print(f'{task.task_id}\t{task.level_tag}\t{task.layout}\t{task.instruction}{flags}')
    return 0
