"""Training seeds and paraphrase draws for demonstrations, disjoint from every evaluation seed.

Evaluation seeds are ``42 + 100 * round + offset`` with ``offset < 1000`` (protocol §1.7), so the ten
protocol rounds use seeds below 2,042 and even 9,000 rounds stay below 1,000,000. Demonstration attempt ``k``
of a label uses seed ``TRAINING_SEED_BASE + k``: the published collector also walks seeds upward from a start,
and starting at one million keeps training layouts apart from evaluation layouts.
"""

from __future__ import annotations

import random

from robofollow_ros.benchmark.types import Task
from robofollow_ros.errors import DatasetError

TRAINING_SEED_BASE = 1_000_000
MAX_ATTEMPTS = 100_000


def training_seed(attempt: int) -> int:
    """The seed of demonstration attempt ``attempt`` (0, 1, ...) of any training label."""
    if not 0 <= attempt < MAX_ATTEMPTS:
        raise DatasetError(f'attempt {attempt} is outside 0..{MAX_ATTEMPTS - 1}')
    return TRAINING_SEED_BASE + attempt


def draw_paraphrase(task: Task, *, seed: int) -> str:
    """One of the label's training paraphrases, drawn from ``seed`` (same seed, same paraphrase)."""
    paraphrases = task.paraphrases or (task.instruction,)
    return paraphrases[random.Random(f'{task.task_id}:{seed}').randrange(len(paraphrases))]
