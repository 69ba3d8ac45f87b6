"""Confidence intervals: Wilson for completion rates, a bootstrap over tasks for the stage-weighted scores.

The unit of resampling is the task: the rounds of a task share its instruction and layout, so they are not
independent trials. Every function here is vectorised over resamples and takes its randomness from a
``numpy.random.Generator`` the caller seeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

WILSON = 'Wilson'
WILSON_CLUSTERED = 'Wilson, effective n (rounds share a task)'
BOOTSTRAP = 'bootstrap over tasks (expanded percentile)'
STRATIFIED = 'bootstrap over tasks within each scene (expanded percentile)'
NO_SPREAD = 'no spread: Wilson bound on the share of tasks unlike the rest'
SINGLE_TASK = 'none (one task)'


@dataclass(frozen=True)
class Interval:
    """A point estimate with its confidence interval (fractions) and the method that gave it."""

    estimate: float
    low: float
    high: float
    method: str

    @property
    def half_width(self) -> float:
        """Half the width of the interval."""
        return (self.high - self.low) / 2.0

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the closed interval (with a tolerance for float rounding)."""
        return self.low - 1e-12 <= value <= self.high + 1e-12

    def as_dict(self) -> dict[str, float | str]:
        """JSON-able form."""
        return {'estimate': self.estimate, 'low': self.low, 'high': self.high, 'method': self.method}


def z_value(confidence: float) -> float:
    """The two-sided standard normal quantile of ``confidence`` (1.96 for 0.95)."""
    check_confidence(confidence)
    return float(stats.norm.ppf(0.5 + confidence / 2.0))


def check_confidence(confidence: float) -> None:
    """Raise ``ValueError`` unless ``0 < confidence < 1``."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f'confidence level must lie between 0 and 1, got {confidence}')


def wilson(successes: ArrayLike, trials: ArrayLike, *, confidence: float) -> tuple[NDArray, NDArray]:
    """Wilson score interval of a binomial proportion; ``successes`` and ``trials`` may be arrays (not integers)."""
    x = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    z = z_value(confidence)
    with np.errstate(invalid='ignore', divide='ignore'):
        p = x / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        spread = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = np.clip(centre - spread, 0.0, 1.0)
    high = np.clip(centre + spread, 0.0, 1.0)
    # At the boundaries the exact Wilson bound is 0 or 1: keep it free of rounding error.
    low = np.where(x <= 0, 0.0, low)
    high = np.where(x >= n, 1.0, high)
    return low, high


def rate_interval(task_successes: ArrayLike, task_trials: ArrayLike, *, confidence: float) -> Interval:
    """Interval of a task-macro completion rate (mean over tasks of each task's success fraction).

    With one trial per task this is the Wilson interval. When rounds share a task, successes within a task
    are correlated; the Wilson interval is then taken at the effective sample size ``p(1-p) / Var(p)``,
    where ``Var(p)`` is the between-task variance of the task fractions over the number of tasks (kept
    between the number of tasks and the number of trials).
    """
    successes = np.asarray(task_successes, dtype=float)
    counts = np.asarray(task_trials, dtype=float)
    tasks = successes.size
    fractions = successes / counts
    rate = float(fractions.mean())
    trials = float(counts.sum())
    if np.all(counts == 1):
        low, high = wilson(successes.sum(), trials, confidence=confidence)
        return Interval(rate, float(low), float(high), WILSON)
    variance = float(fractions.var(ddof=1)) / tasks if tasks > 1 else 0.0
    if variance > 0 and 0.0 < rate < 1.0:
        effective = min(max(rate * (1.0 - rate) / variance, float(tasks)), trials)
    else:
        effective = trials
    low, high = wilson(rate * effective, effective, confidence=confidence)
    return Interval(rate, float(low), float(high), WILSON_CLUSTERED)


def no_spread_bounds(
    value: float, *, tasks: int, confidence: float, lowest: float = 0.0, highest: float = 1.0
) -> tuple[float, float]:
    """Bounds for a mean when every task gave the same ``value`` (so a bootstrap has nothing to resample).

    The share of tasks that would come out differently is at most the Wilson upper bound ``u`` of 0 out of
    ``tasks``, and each could lie anywhere in ``[lowest, highest]``; so the mean lies in
    ``[value - u (value - lowest), value + u (highest - value)]``. At 0 and 1 this is the Wilson interval.
    """
    _, upper = wilson(0, tasks, confidence=confidence)
    share = float(upper)
    return value - share * (value - lowest), value + share * (highest - value)


def expanded_alpha(clusters: int, confidence: float) -> float:
    """Tail probability for an expanded percentile interval from ``clusters`` resampling units.

    The plain percentile bootstrap is too narrow for small samples (its spread uses the divide-by-n
    variance and normal tails); Hesterberg's expansion widens the percentiles to match a t interval with
    ``clusters - 1`` degrees of freedom.
    """
    alpha = 1.0 - confidence
    if clusters < 2:
        return alpha
    factor = math.sqrt(clusters / (clusters - 1)) * float(stats.t.ppf(1 - alpha / 2, clusters - 1))
    return float(2.0 * stats.norm.sf(factor))


def resample_weights(rng: np.random.Generator, clusters: int, resamples: int) -> NDArray:
    """``(resamples, clusters)`` counts: how often each cluster is drawn in each bootstrap resample."""
    draws = rng.integers(0, clusters, size=(resamples, clusters))
    offsets = (np.arange(resamples) * clusters)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=resamples * clusters).reshape(resamples, clusters)


def group_statistic(weights: NDArray, sums: NDArray, counts: NDArray, macro: NDArray) -> NDArray:
    """Per resample (rows of ``weights``) and metric (columns of ``sums``), the group's statistic.

    A micro metric is the mean over trials, ``sum(w * sums) / sum(w * counts)``; a macro metric the mean
    over tasks of the task means, ``sum(w * sums / counts) / sum(w)``.
    """
    weights = np.asarray(weights, dtype=float)
    micro = (weights @ sums) / (weights @ counts)[..., None]
    task_means = sums / counts[:, None]
    macro_values = (weights @ task_means) / weights.sum(axis=-1)[..., None]
    return np.where(macro, macro_values, micro)


def percentile_interval(replicates: NDArray, *, clusters: int, confidence: float) -> tuple[NDArray, NDArray]:
    """Expanded percentile bounds of bootstrap ``replicates`` (resamples along axis 0)."""
    alpha = expanded_alpha(clusters, confidence)
    low, high = np.quantile(replicates, [alpha / 2, 1 - alpha / 2], axis=0)
    return low, high


def mean_interval(
    task_sums: ArrayLike,
    task_counts: ArrayLike,
    *,
    confidence: float,
    rng: np.random.Generator,
    resamples: int,
    macro: bool = False,
) -> Interval:
    """Interval of a mean score in [0, 1] of one group of tasks, by a bootstrap over tasks.

    Args:
        task_sums: per task, the sum of its trials' scores.
        task_counts: per task, its number of trials.
        confidence: e.g. 0.95.
        rng: source of the resamples.
        resamples: bootstrap resamples.
        macro: mean over tasks of task means, rather than over trials.
    """
    sums = np.asarray(task_sums, dtype=float).reshape(-1, 1)
    counts = np.asarray(task_counts, dtype=float)
    flags = np.array([macro])
    estimate = float(group_statistic(np.ones(counts.size), sums, counts, flags)[0])
    if counts.size < 2:
        return Interval(estimate, math.nan, math.nan, SINGLE_TASK)
    replicates = group_statistic(resample_weights(rng, counts.size, resamples), sums, counts, flags)[:, 0]
    if np.ptp(replicates) == 0:
        # Every task scored the same: a percentile interval would have no width.
        low, high = no_spread_bounds(estimate, tasks=counts.size, confidence=confidence)
        return Interval(estimate, low, high, NO_SPREAD)
    low, high = percentile_interval(replicates, clusters=counts.size, confidence=confidence)
    return Interval(estimate, float(low), float(high), BOOTSTRAP)
