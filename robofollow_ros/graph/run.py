"""Running an evaluation suite over the ROS graph from Python (``robofollow eval`` without ``--in-process``)."""

from __future__ import annotations

import json
import signal
from typing import Any

from robofollow_ros.errors import GraphError
from robofollow_ros.evaluation.results import ResultsFile, trial_key
from robofollow_ros.evaluation.suite import RESULTS_NAME, RunInterrupted, SuiteOptions, plan_trials


def launch_arguments(options: SuiteOptions, *, record_images: bool = False) -> dict[str, str]:
    """The ``sim`` graph's launch arguments for a suite."""
    if options.record == 'json':
        raise GraphError('the graph records episodes as bags: use --record bag (or --in-process for JSON files)')
    return {
        'robot': options.robot,
        'policy': options.policy,
        'policy_kwargs': json.dumps(dict(options.policy_kwargs)),
        'scenes': ','.join(str(scene) for scene in options.scenes or []),
        'levels': ','.join(f'L{level}' for level in options.levels or []),
        'tasks': options.pattern or '',
        'task_ids': ','.join(options.task_ids or []),
        'rounds': str(options.rounds),
        'first_round': str(options.first_round),
        'variant': options.variant,
        'max_queries': str(options.limits.max_queries),
        'record': options.record,
        'policy_timeout': str(options.query_timeout),
        'trusted_policy': 'true' if options.trusted_policy else 'false',
        'policy_memory_limit': str(options.policy_memory_limit),
        'policy_scratch': str(options.policy_scratch or ''),
        'policy_network': options.policy_network or '',
        'policy_python': options.policy_python or '',
        'force_new': 'true' if options.force_new else 'false',
        'retry_errors': 'true' if options.retry_errors else 'false',
        'record_images': 'true' if record_images else 'false',
        'out': str(options.out),
        'workers': str(options.workers),
    }


def run_graph_suite(
    options: SuiteOptions, *, progress: bool = True, record_images: bool = False
) -> list[dict[str, Any]]:
    """Start the ``sim`` graph for ``options`` (``options.workers`` graphs in as many ROS domains, one evaluator),
    wait until its evaluator is done, return the suite's records.

    Raises:
        GraphError: unknown robot, or the graph ended with a non-zero exit code (a node died, or the evaluator
            failed).
        RunInterrupted: SIGINT or SIGTERM stopped the graph (as the in-process suite raises it).
    """
    from robofollow_ros.graph.declaration import load_graph
    from robofollow_ros.graph.supervisor import Supervisor

    if options.use_ray:
        raise GraphError('--ray runs in-process simulators; add --in-process')
    arguments = launch_arguments(options, record_images=record_images)
    arguments['progress'] = 'true' if progress else 'false'
    supervisor = Supervisor(load_graph('sim', arguments))
    code = supervisor.run()
    if supervisor.stop_signal is not None:
        raise RunInterrupted(signal.Signals(supervisor.stop_signal).name)
    if code != 0:
        raise GraphError(f'the graph ended with exit code {code} (see the messages above)')
    wanted = {trial.key for trial in plan_trials(options)}
    return [record for record in ResultsFile(options.out / RESULTS_NAME).records if trial_key(record) in wanted]
