"""The evaluator node's parameters as a suite (``SuiteOptions``), and checking them before a graph starts.

The evaluator reads these parameters when it starts; ``robofollow launch`` and ``sim.launch.py`` check the same
values (``check_suite_parameters``) before the first node starts, so a bad launch argument (``policy:=nope``,
``scenes:=9``) ends in one line instead of a graph that starts and then fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from robofollow_ros.benchmark.constants import DEFAULT_VARIANT, MAX_QUERIES
from robofollow_ros.benchmark.parsing import parse_variant
from robofollow_ros.benchmark.registry import parse_level, parse_scene
from robofollow_ros.errors import GraphError, RoboFollowError
from robofollow_ros.evaluation.episode import EpisodeLimits
from robofollow_ros.evaluation.guard import DEFAULT_POLICY_MEMORY_MIB, DEFAULT_QUERY_TIMEOUT
from robofollow_ros.evaluation.options import SuiteOptions
from robofollow_ros.graph.domains import parse_workers
from robofollow_ros.policy.factory import parse_policy_kwargs
from robofollow_ros.robot.specs import DEFAULT_ROBOT, get_robot_spec

SUITE_PARAMETERS: dict[str, Any] = {
    'workers': 1,
    'out': 'runs/graph',
    'policy': 'expert',
    'policy_kwargs': '{}',
    'scenes': '',
    'levels': '',
    'tasks': '',
    'task_ids': '',
    'rounds': 1,
    'first_round': 1,
    'variant': DEFAULT_VARIANT,
    'record': 'none',
    'max_queries': MAX_QUERIES,
    'query_timeout': DEFAULT_QUERY_TIMEOUT,
    'trusted_policy': False,
    'policy_memory_limit': DEFAULT_POLICY_MEMORY_MIB,
    'policy_scratch': '',
    'policy_network': '',
    'policy_python': '',
    'force_new': False,
    'robot': DEFAULT_ROBOT,
    'retry_errors': False,
}
"""The evaluator's suite parameters and their defaults."""
SUITE_MINIMUMS: dict[str, float] = {
    'workers': 1,
    'rounds': 1,
    'first_round': 1,
    'max_queries': 1,
    'query_timeout': 0.001,
    'policy_memory_limit': 0,
}
"""The smallest value of each numeric suite parameter (the evaluator declares them as ranges)."""
RECORD_MODES = ('none', 'bag')


def suite_options(values: Mapping[str, Any], *, labels: Mapping[str, str] | None = None) -> SuiteOptions:
    """The suite the evaluator runs for these parameter values (missing ones take ``SUITE_PARAMETERS``).

    ``labels`` names a parameter in errors (default: the parameter's own name), so that a launch file's check can
    name the launch argument the user typed (``policy_timeout``) rather than the node parameter (``query_timeout``).

    Raises:
        RoboFollowError: a value that cannot be read (a scene, level, variant, robot, number or JSON object).
    """
    value = {**SUITE_PARAMETERS, **values}

    def label(name: str) -> str:
        return (labels or {}).get(name, name)

    try:
        return SuiteOptions(
            out=Path(str(value['out'])),
            policy=str(value['policy']),
            policy_kwargs=parse_policy_kwargs(str(value['policy_kwargs'])),
            scenes=[parse_scene(s) for s in items(value['scenes'])] or None,
            levels=[parse_level(level) for level in items(value['levels'])] or None,
            pattern=str(value['tasks']) or None,
            task_ids=items(value['task_ids']) or None,
            rounds=number(label('rounds'), value['rounds'], int),
            first_round=number(label('first_round'), value['first_round'], int),
            variant=parse_variant(str(value['variant'])),
            record=str(value['record']),  # type: ignore[arg-type]
            limits=EpisodeLimits(max_queries=number(label('max_queries'), value['max_queries'], int)),
            query_timeout=number(label('query_timeout'), value['query_timeout'], float),
            trusted_policy=flag(label('trusted_policy'), value['trusted_policy']),
            policy_memory_limit=number(label('policy_memory_limit'), value['policy_memory_limit'], int),
            policy_scratch=Path(str(value['policy_scratch'])) if value['policy_scratch'] else None,
            policy_network=str(value['policy_network']) or None,
            policy_python=str(value['policy_python']) or None,
            force_new=flag(label('force_new'), value['force_new']),
            robot=get_robot_spec(str(value['robot'])).name,
            retry_errors=flag(label('retry_errors'), value['retry_errors']),
            workers=parse_workers(value['workers']),
        )
    except (ValueError, TypeError) as error:
        raise GraphError(str(error)) from None


def check_suite_parameters(values: Mapping[str, Any], *, labels: Mapping[str, str] | None = None) -> None:
    """Refuse evaluator parameters that would only fail once the graph runs: unreadable values, an unknown
    policy, options the suite refuses, or filters that select no task (``labels``: as for ``suite_options``).

    Raises:
        GraphError: what is wrong, in one line.
    """
    from robofollow_ros.evaluation.suite import check_options, plan_trials
    from robofollow_ros.policy.factory import resolve_policy

    try:
        options = suite_options(values, labels=labels)
        if options.record not in RECORD_MODES:
            raise GraphError(f'record must be one of {", ".join(RECORD_MODES)} (got {options.record!r})')
        check_options(options)
        resolve_policy(
            options.policy, kwargs=options.policy_kwargs, trusted=options.trusted_policy, python=options.policy_python
        )
        if not plan_trials(options):
            raise GraphError('the scenes, levels and tasks given select no task')
    except RoboFollowError as error:
        raise GraphError(f'launch arguments: {error}') from None


FLAG_WORDS = {'true': True, 'false': False}


def flag(name: str, value: object) -> bool:
    """A boolean parameter: ``True``/``False`` or the words ``true``/``false`` (any case), nothing else.

    ``bool('maybe')`` is true: a mistyped ``trusted_policy:=maybe`` must not switch policy isolation off.

    Raises:
        GraphError: any other value.
    """
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word not in FLAG_WORDS:
        raise GraphError(f'{name} must be true or false (got {value!r})')
    return FLAG_WORDS[word]


def number(name: str, value: Any, kind: type[int] | type[float]) -> Any:
    """A numeric parameter of ``kind``; a boolean or unreadable value is refused naming the parameter.

    Raises:
        GraphError: not a number of that kind.
    """
    if isinstance(value, bool):
        raise GraphError(f'{name} must be a number (got {value!r})')
    try:
        return kind(value)
    except (TypeError, ValueError):
        kind_name = 'a whole number' if kind is int else 'a number'
        raise GraphError(f'{name} must be {kind_name} (got {value!r})') from None


def items(value: object) -> list[str]:
    """A comma-separated parameter (or a list one) as its items."""
    if isinstance(value, (list, tuple)):
        return [str(item) for item in value]
    return [item.strip() for item in str(value).split(',') if item.strip()]
