"""Statistics of result records: confidence intervals, paired comparisons of two runs, rounds needed.

Pure functions over NumPy arrays (``intervals``, ``paired``, ``planning``) and their use on result records
(``cells``, ``compare``). Every resampling is seeded (``DEFAULT_SEED``) so that a report is reproducible; the
methods and why are in docs/statistics.md.
"""

import zlib

import numpy as np

DEFAULT_SEED = 20260
"""Seed of every bootstrap and permutation unless another is given; reports state it."""
DEFAULT_RESAMPLES = 2000
"""Bootstrap resamples per interval."""
DEFAULT_PERMUTATIONS = 9999
"""Random sign flips per permutation test (exact enumeration when a group has at most 12 tasks)."""
DEFAULT_CONFIDENCE = 0.95


def row_rng(seed: int, name: str) -> np.random.Generator:
    """The random stream of one row (e.g. ``cell/S1/L0``): its numbers do not depend on which other rows exist."""
    return np.random.default_rng([seed, zlib.crc32(name.encode('utf-8'))])
