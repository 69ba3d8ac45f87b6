"""Paired tests of two runs on the same trials: exact McNemar for completion, sign-flip permutation for scores.

Both test the null hypothesis that, trial by trial, the two runs are exchangeable (which run produced which
outcome of a pair is a coin toss). They are exact under it: the McNemar test conditions on the discordant
pairs, the permutation test flips the sign of each task's difference, enumerating every flip for small
groups and drawing random flips otherwise (p-values counted with the observed flip, so never below
``1 / (permutations + 1)``). Every function is vectorised over a leading axis so that simulations of many
runs at once are cheap.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

A_BETTER = 'A better'
B_BETTER = 'B better'
NO_DIFFERENCE = 'no detectable difference at this size'
MCNEMAR = 'exact McNemar (sign test on discordant trials)'
SIGN_FLIP = 'paired permutation (sign flips per task)'
EXACT_LIMIT = 12
"""Groups of at most this many tasks get every sign flip enumerated (4,096 at most)."""


def mcnemar_exact(a_only: ArrayLike, b_only: ArrayLike) -> NDArray:
    """Two-sided exact McNemar p-values from the discordant counts (A complete and B not; B and not A)."""
    b = np.asarray(a_only, dtype=int)
    c = np.asarray(b_only, dtype=int)
    n = b + c
    p = np.minimum(1.0, 2.0 * stats.binom.cdf(np.minimum(b, c), np.maximum(n, 1), 0.5))
    return np.where(n == 0, 1.0, p)


def sign_matrix(tasks: int, *, rng: np.random.Generator, permutations: int) -> tuple[NDArray, bool]:
    """``(flips, tasks)`` signs ±1, every flip when ``tasks <= EXACT_LIMIT`` (then ``True``), else random ones."""
    if tasks <= EXACT_LIMIT:
        return np.array(list(itertools.product((1.0, -1.0), repeat=tasks))).reshape(-1, tasks), True
    bits = rng.integers(0, 2, size=(permutations, tasks), dtype=np.int8)
    return (1 - 2 * bits).astype(float), False


def sign_flip_pvalues(
    differences: ArrayLike, *, rng: np.random.Generator, permutations: int, signs: NDArray | None = None
) -> NDArray:
    """Two-sided sign-flip permutation p-values of ``sum(differences)`` along the last axis.

    Args:
        differences: per task (last axis) its weighted difference A - B, so that the statistic of interest
            is their sum; leading axes are independent data sets.
        rng: source of the random flips.
        permutations: random flips when there are more than ``EXACT_LIMIT`` tasks.
        signs: a ready ``sign_matrix`` to use instead (it must match the number of tasks).
    """
    d = np.asarray(differences, dtype=float)
    tasks = d.shape[-1]
    if signs is None:
        signs, exact = sign_matrix(tasks, rng=rng, permutations=permutations)
    else:
        exact = signs.shape[0] == 2**tasks and tasks <= EXACT_LIMIT
    observed = np.abs(d.sum(axis=-1))
    flipped = np.abs(d @ signs.T)
    # A flip that only reorders rounding error must count as "as extreme".
    tolerance = 1e-9 * np.maximum(1.0, np.abs(d).sum(axis=-1))
    extreme = (flipped >= (observed - tolerance)[..., None]).sum(axis=-1)
    if exact:
        return extreme / signs.shape[0]
    return (1.0 + extreme) / (1.0 + signs.shape[0])


def holm(p_values: ArrayLike) -> NDArray:
    """Holm's step-down adjustment of a family of p-values (family-wise error at most the level)."""
    p = np.asarray(p_values, dtype=float)
    if p.size == 0:
        return p
    order = np.argsort(p)
    scaled = p[order] * (p.size - np.arange(p.size))
    adjusted = np.minimum(1.0, np.maximum.accumulate(scaled))
    result = np.empty_like(p)
    result[order] = adjusted
    return result


def verdict(difference: float, p_value: float, *, alpha: float) -> str:
    """``A better`` / ``B better`` when the test rejects at ``alpha``, else no detectable difference."""
    if p_value <= alpha and difference > 0:
        return A_BETTER
    if p_value <= alpha and difference < 0:
        return B_BETTER
    return NO_DIFFERENCE
