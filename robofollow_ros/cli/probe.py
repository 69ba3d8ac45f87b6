"""``robofollow probe``: the counterfactual-instruction probe (same scene and seed, every admissible instruction)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from robofollow_ros.cli.options import add_isolation_arguments, add_robot_argument

HELP = 'instruction sensitivity: same scene and seed, one run per instruction the scene admits'
DESCRIPTION = """\
Counterfactual-instruction probe. For every training configuration, the cell is reset to the same
layout with the same seed and the policy runs once per instruction the configuration admits (its
training labels and the L2 rewrites in its layout). The referee's reading of each episode says what the
policy went for: arm, object, action, target, side, route, orientation, branch. Instruction
sensitivity is the share of instruction pairs asking for different choices for which the policy made
both required choices. A language-blind policy scores near 0 %, the expert 100 %.
"""


def _split(values: list[str] | None) -> list[str]:
    return [item.strip() for value in values or [] for item in value.split(',') if item.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``robofollow probe``."""
    parser.add_argument(
        '--policy',
        default='expert',
        help='expert, blind, hold, lerobot, openpi, robotwin-tcp, gr00t, or module:function (default expert)',
    )
    parser.add_argument('--policy-kwargs', default=None, help='JSON object of keyword arguments for the policy')
    parser.add_argument('--scene', action='append', help='scene 1-4 (repeat or comma-separate; default all)')
    parser.add_argument('--config', action='append', help='training configuration, e.g. scene4_2 (default all)')
    parser.add_argument('--rounds', type=int, default=1, help='seeds per configuration (default 1)')
    parser.add_argument('--limit', type=int, default=None, help='at most this many instructions per configuration')
    parser.add_argument('--variant', default='published', help='ground-truth variant of the L2 rewrites')
    parser.add_argument('--out', type=Path, default=None, help='write probe.jsonl and sensitivity.md here')
    parser.add_argument('--quiet', action='store_true', help='no progress line')
    add_isolation_arguments(parser)
    add_robot_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Run the probe and print the per-scene sensitivity table."""
    from robofollow_ros.benchmark.parsing import parse_variant
    from robofollow_ros.benchmark.registry import parse_scene
    from robofollow_ros.diagnostics.probe import (
        ProbeRun,
        resolve_configs,
        run_probe,
        sensitivity_by_scene,
        sensitivity_markdown,
    )
    from robofollow_ros.errors import RoboFollowError
    from robofollow_ros.evaluation.guard import GuardedPolicy
    from robofollow_ros.policy.factory import parse_policy_kwargs, resolve_policy
    from robofollow_ros.policy.isolation.sandbox import SandboxOptions, check_sandbox_options
    from robofollow_ros.sim.env import CellEnv

    if args.rounds < 1:
        raise RoboFollowError('--rounds must be at least 1')
    if args.limit is not None and args.limit < 2:
        raise RoboFollowError('--limit must be at least 2 (a probe compares pairs of instructions)')
    variant = parse_variant(args.variant)
    configs = resolve_configs([parse_scene(s) for s in _split(args.scene)] or None, _split(args.config) or None)
    if args.policy_memory_limit < 0:
        raise RoboFollowError('--policy-memory-limit must be a number of MiB, or 0 for no limit')
    factory = resolve_policy(
        args.policy,
        kwargs=parse_policy_kwargs(args.policy_kwargs),
        trusted=args.trusted_policy,
        python=args.policy_python,
    )
    sandbox = SandboxOptions(scratch=args.policy_scratch, network=args.policy_network)
    check_sandbox_options(sandbox)
    policy = GuardedPolicy(factory, memory_limit_mib=args.policy_memory_limit, sandbox=sandbox)
    done = 0

    def progress(run_: ProbeRun) -> None:
        nonlocal done
        done += 1
        if not args.quiet:
            print(f'\rprobe: {done} runs ({run_.config}, round {run_.round})', end='', file=sys.stderr, flush=True)

    try:
        with CellEnv(render=policy.needs_images, robot=args.robot) as env:
            runs = run_probe(
                env,
                policy,
                configs,
                rounds=range(1, args.rounds + 1),
                variant=variant,
                limit=args.limit,
                on_run=progress,
            )
    finally:
        policy.close()
    if not args.quiet:
        print(file=sys.stderr)
    table = sensitivity_markdown(sensitivity_by_scene(runs), policy=args.policy)
    print(table, end='')
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        with (args.out / 'probe.jsonl').open('w', encoding='utf-8') as stream:
            for run_ in runs:
                stream.write(json.dumps(run_.to_record()) + '\n')
        (args.out / 'sensitivity.md').write_text(table, encoding='utf-8')
        print(f'runs in {args.out / "probe.jsonl"}, table in {args.out / "sensitivity.md"}')
    return 0
