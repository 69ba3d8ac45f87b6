"""Statistics of result records: confidence intervals, paired comparisons of two runs, rounds needed.

Pure functions over NumPy arrays (``intervals``, ``paired``, ``planning``) and their use on result records
(``cells``, ``compare``). Every resampling is seeded (``DEFAULT_SEED``) so that a report is reproducible; the
methods and why are in docs/statistics.md.
"""

DEFAULT_SEED = 20260
"""Seed of every bootstrap and permutation unless another is given; reports state it."""
DEFAULT_RESAMPLES = 2000
"""Bootstrap resamples per interval."""
DEFAULT_PERMUTATIONS = 9999
"""Random sign flips per permutation test (exact enumeration when a group has at most 12 tasks)."""
DEFAULT_CONFIDENCE = 0.95
