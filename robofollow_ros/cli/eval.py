"""``robofollow eval``: run an evaluation suite and write resumable result records."""

from __future__ import annotations

import argparse
from pathlib import Path

from robofollow_ros.benchmark.constants import DEFAULT_VARIANT, MAX_QUERIES
from robofollow_ros.cli.options import add_isolation_arguments, add_ray_arguments, add_robot_argument
from robofollow_ros.evaluation.guard import DEFAULT_QUERY_TIMEOUT

HELP = 'run evaluation episodes over the ROS graph (or in-process) and write result records'
DESCRIPTION = """\
Run RoboFollow evaluation episodes and score them with the referee.

By default the episodes run over the ROS 2 node graph (sim, policy bridge, referee, evaluator, and the
recorder with --record bag), started as by `robofollow launch sim`. --in-process runs the MuJoCo cell,
the policy and the referee in this process, without ROS: the baseline that every ROS run is compared
with. Either way results go to OUT/results.jsonl, one record per trial, flushed after each trial;
running the same command again resumes where it stopped. A folder holds one run: resuming with another
policy, other --policy-kwargs, variant or limits is refused (use a new --out, or --force-new to set the
old results aside), and a second run into a busy folder is refused.

A custom policy (--policy module:function) must be importable (put its folder on PYTHONPATH). It runs
in its own process, which receives only the three camera images, the 14-D joint state and the
instruction and may use --policy-memory-limit MiB; every call into it must return within
--query-timeout seconds (building it, ten times that), or its process is killed, the trial records a
timeout and the next trial gets a fresh process. A policy process that dies (os._exit, a signal) is a
`crash`, one out of memory a `memory` failure. --trusted-policy runs it in this process instead
(faster to start, no isolation; records and run.json say `isolation: trusted`). Failures of the
policy are recorded per trial and the run goes on, except when the one policy server of a network
policy refuses connections through 3 trials in a row: then the run stops (resume it when the server
is back). --retry-errors plays the trials whose records hold a policy error again; their first
records and files are kept in OUT/retried-<time>/.

--policy lerobot --policy-kwargs '{"path": ".../pretrained_model"}' evaluates a LeRobot checkpoint in its
own sandboxed process under the Python that has LeRobot (--policy-python, else $ROBOFOLLOW_LEROBOT_PYTHON,
else .venv-lerobot from scripts/setup_lerobot.sh); see docs/policies.md. --policy-python runs any sandboxed
policy under the Python of its own environment.

--workers N runs N simulators as separate processes of this machine (with --in-process), or N graphs in
ROS domains ROS_DOMAIN_ID+0..N-1 driven by one evaluator (over the graph); --ray [ADDRESS] runs them as
Ray actors on a cluster (or on a Ray instance started for the run; needs `pip install .[ray]`; with
--in-process). Either way one process writes every file, a lost worker's (or graph's) trial runs again,
and the records are those of a one-process run.
--policy-kwargs '{"endpoints": ["host:port", ...]}' spreads a network policy (openpi, robotwin-tcp) over a
pool of servers: each simulator talks to one, and a server that goes down leaves the pool.
"""


def _split(values: list[str] | None) -> list[str]:
    return [item for value in values or [] for item in value.split(',') if item.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``robofollow eval``."""
    parser.add_argument('--in-process', action='store_true', help='simulate, act and score in this process')
    parser.add_argument(
        '--policy',
        default='expert',
        help='expert, blind, hold, lerobot, openpi, robotwin-tcp, gr00t, or module:function (default expert)',
    )
    parser.add_argument('--policy-kwargs', default=None, help='JSON object of keyword arguments for the policy')
    parser.add_argument('--scene', action='append', help='scene 1-4 (repeat or comma-separate; default all)')
    parser.add_argument('--level', action='append', help='level L0-L3 (repeat or comma-separate; default all)')
    parser.add_argument('--tasks', default=None, help='only task ids matching this glob or substring')
    parser.add_argument('--rounds', type=int, default=1, help='rounds per task (protocol: 10; default 1)')
    parser.add_argument('--first-round', type=int, default=1, help='number of the first round (default 1)')
    parser.add_argument(
        '--variant',
        default=DEFAULT_VARIANT,
        metavar='{published,corrected}',
        help='truth and scoring rules (default published: the published benchmark; see docs/scoring.md)',
    )
    parser.add_argument('--out', type=Path, default=None, help='output folder (default runs/<policy>)')
    parser.add_argument(
        '--record',
        choices=('none', 'json', 'bag'),
        default='none',
        help='also save each episode for re-scoring (json: --in-process only)',
    )
    parser.add_argument('--video', action='store_true', help='also write an MP4 of each episode (OUT/videos)')
    parser.add_argument(
        '--max-queries', type=int, default=MAX_QUERIES, help=f'policy queries per episode (protocol: {MAX_QUERIES})'
    )
    parser.add_argument(
        '--query-timeout',
        type=float,
        default=DEFAULT_QUERY_TIMEOUT,
        help=f'seconds one call into the policy may take (default {DEFAULT_QUERY_TIMEOUT:g})',
    )
    add_isolation_arguments(parser)
    parser.add_argument(
        '--force-new', action='store_true', help='if --out holds another run, set it aside and start a new one'
    )
    parser.add_argument(
        '--retry-errors',
        action='store_true',
        help='play again the trials that ended in a policy error (first records kept in OUT/retried-<time>)',
    )
    parser.add_argument(
        '--workers',
        type=int,
        default=None,
        help='simulators (or graphs) running trials at once (default 1; with --ray, one per CPU)',
    )
    add_ray_arguments(parser, what='the simulators')
    parser.add_argument('--quiet', action='store_true', help='no progress display')
    add_robot_argument(parser)


def preload(args: argparse.Namespace) -> None:
    """Import the simulator during start-up when trials run in this process (see ``robofollow_ros.interrupts``).

    A Ctrl-C inside MuJoCo's import (a C extension, then EGL through ctypes) would come out of it as an
    ``ImportError`` or a ``ctypes.ArgumentError``; during start-up it ends the process with one line instead.
    """
    if args.in_process and args.ray is None and args.workers in (None, 1):  # else other processes simulate
        import robofollow_ros.sim.env  # noqa: F401


def run(args: argparse.Namespace) -> int:
    """Run the suite; print where the results are."""
    from robofollow_ros.benchmark.parsing import parse_variant
    from robofollow_ros.benchmark.registry import parse_level, parse_scene
    from robofollow_ros.evaluation.episode import EpisodeLimits
    from robofollow_ros.evaluation.status import counts_line, trial_counts
    from robofollow_ros.evaluation.suite import SuiteOptions, run_suite
    from robofollow_ros.policy.factory import parse_policy_kwargs
    from robofollow_ros.policy.isolation.sandbox import protect_this_process
    from robofollow_ros.policy.preflight import check_policy_options

    protect_this_process()
    policy_kwargs = parse_policy_kwargs(args.policy_kwargs)
    check_policy_options(args.policy, policy_kwargs)  # before the run folder is touched
    options = SuiteOptions(
        out=args.out or Path('runs') / args.policy.replace(':', '_'),
        policy=args.policy,
        policy_kwargs=policy_kwargs,
        scenes=[parse_scene(value) for value in _split(args.scene)] or None,
        levels=[parse_level(value) for value in _split(args.level)] or None,
        pattern=args.tasks,
        rounds=args.rounds,
        first_round=args.first_round,
        variant=parse_variant(args.variant),
        record=args.record,
        video=args.video,
        limits=EpisodeLimits(max_queries=args.max_queries),
        query_timeout=args.query_timeout,
        trusted_policy=args.trusted_policy,
        policy_memory_limit=args.policy_memory_limit,
        policy_scratch=args.policy_scratch,
        policy_network=args.policy_network,
        policy_python=args.policy_python,
        force_new=args.force_new,
        retry_errors=args.retry_errors,
        workers=args.workers if args.workers is not None else (0 if args.ray is not None else 1),
        use_ray=args.ray is not None,
        ray_address=args.ray or None,
        ray_start_timeout=args.ray_start_timeout,
        robot=args.robot,
    )
    if args.in_process:
        records = run_suite(options, progress=not args.quiet)
    else:
        from robofollow_ros.graph.run import run_graph_suite

        records = run_graph_suite(options, progress=not args.quiet)
    print(f'{counts_line(trial_counts(records))}; results in {options.out / "results.jsonl"}')
    print(f'tables and plot: robofollow report {options.out / "results.jsonl"} --out {options.out / "report"}')
    return 0
