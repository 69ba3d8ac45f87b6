"""``robofollow entropy``: scene entropy H(T|S) of the training set, against the LIBERO reference."""

from __future__ import annotations

import argparse
import json
import math

from robofollow_ros.benchmark import libero_reference_entropy, scene_entropy, training_config_counts
from robofollow_ros.benchmark.entropy import EXPLANATION, LIBERO_SUITES, conditional_entropy

HELP = 'scene entropy H(T|S) of the training labels (vs the LIBERO reference)'
DESCRIPTION = """\
How much must a policy read the instruction? H(T|S) is the entropy of the task given the scene
configuration, computed from the registry's 75 training labels grouped into their six configurations.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``robofollow entropy``."""
    parser.add_argument('--json', action='store_true', help='print the numbers as one JSON object')


def run(args: argparse.Namespace) -> int:
    """Print H(T|S) with its per-configuration breakdown and the LIBERO reference."""
    counts = training_config_counts()
    total = sum(counts.values())
    value = scene_entropy()
    libero = libero_reference_entropy()
    if args.json:
        suites = {name: conditional_entropy(sizes) for name, sizes in LIBERO_SUITES.items()}
        report = {
            'h_t_given_s': value,
            'labels_per_config': counts,
            'libero_reference': libero,
            'libero_suites': suites,
        }
        print(json.dumps(report, indent=1))
        return 0
    print(f'RoboFollow training set: H(T|S) = {value:.3f} bits ({total} labels in {len(counts)} configurations)')
    print(f'  {"configuration":<14}{"labels":>7}{"p(s)":>8}{"log2 n":>9}{"p(s)*log2 n":>14}')
    for config, count in counts.items():
        share = count / total
        bits = math.log2(count) if count else 0.0
        print(f'  {config:<14}{count:>7}{share:>8.3f}{bits:>9.3f}{share * bits:>14.4f}')
    print(f'LIBERO reference: H(T|S) = {libero:.3f} bits (mean of four suites)')
    for name, sizes in LIBERO_SUITES.items():
        print(f'  {name:<16}{conditional_entropy(sizes):>7.3f} bits  (tasks per scene: {", ".join(map(str, sizes))})')
    print()
    print(EXPLANATION)
    return 0
