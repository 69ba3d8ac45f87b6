"""Scene entropy H(T|S): how many tasks a policy must tell apart in one scene (protocol §6).

S ranges over scene configurations, p(s) is proportional to the number of task labels in s (equally, to
demonstrations: 50 per label) and p(t|s) is uniform, so H(T|S) = sum_s p(s) log2 n_s. For RoboFollow
the six training configurations of protocol §2.0 give 3.782 bits. The LIBERO reference (0.880 bits) groups each
LIBERO suite's ten tasks by shared scene and averages the four suites with equal weight.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping

LIBERO_SUITES: dict[str, tuple[int, ...]] = {
    'LIBERO-Spatial': (1,) * 10,
    'LIBERO-Object': (1,) * 10,
    'LIBERO-Goal': (10,),
    'LIBERO-Long': (2,) + (1,) * 8,
}
"""Tasks per shared scene in each LIBERO suite: Spatial and Object give each task its own scene, all ten
Goal tasks share one scene, and in Long one scene is shared by two of the ten tasks."""

EXPLANATION = """\
H(T|S) = sum over scene configurations s of p(s) * log2(n_s), with p(s) = n_s / N (labels, equivalently
demonstrations, per configuration) and p(t|s) = 1/n_s: the average number of bits the instruction must
carry to pick the task once the scene is seen. A scene that admits a single task needs none (0 bits).
LIBERO reference: each suite's ten tasks grouped by shared scene (Spatial 0, Object 0, Goal log2 10 = 3.322,
Long 0.2 bits: one scene shared by two tasks), suites weighted equally."""


def conditional_entropy(group_sizes: Iterable[int]) -> float:
    """H(T|S) in bits for scenes holding ``group_sizes`` equiprobable tasks, p(s) proportional to size."""
    sizes = [size for size in group_sizes if size > 0]
    total = sum(sizes)
    return sum(size / total * math.log2(size) for size in sizes) if total else 0.0


def entropy_of_configs(configs: Iterable[str]) -> tuple[float, Mapping[str, int]]:
    """H(T|S) of a list holding one configuration name per task label, and the label count per configuration."""
    counts = Counter(configs)
    return conditional_entropy(counts.values()), dict(counts)


def libero_reference_entropy() -> float:
    """The LIBERO reference value: the mean of the four suites' H(T|S) (0.880 bits)."""
    return sum(conditional_entropy(sizes) for sizes in LIBERO_SUITES.values()) / len(LIBERO_SUITES)
