"""Confidence intervals: Wilson for completion rates, a bootstrap over tasks for the stage-weighted scores.

The unit of resampling is the task: the rounds of a task share its instruction and layout, so they are not
independent trials. Every function here is vectorised over resamples and takes its randomness from a
``numpy.random.Generator`` the caller seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

WILSON = 'Wilson'
WILSON_CLUSTERED = 'Wilson, effective n (rounds share a task)'
BOOTSTRAP = 'bootstrap over tasks (BCa, expanded)'
STRATIFIED = 'bootstrap over tasks within each scene (BCa, expanded)'
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
    # The variance comes from only as many tasks as there are: widen as a t interval would (expanded_alpha).
    widened = min(1.0 - expanded_alpha(tasks, confidence), 1.0 - 1e-9)
    low, high = wilson(rate * effective, effective, confidence=widened)
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
    """Tail probability for an expanded bootstrap interval from ``clusters`` resampling units.

    Bootstrap percentiles are too narrow for small samples (their spread uses the divide-by-n variance and
    normal tails); Hesterberg's expansion widens them to match a t interval with ``clusters - 1`` degrees of
    freedom.
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


def jackknife(sums: NDArray, counts: NDArray, macro: NDArray) -> NDArray:
    """``(tasks, metrics)``: the group's statistic with each task left out in turn."""
    tasks = counts.size
    if tasks < 2:
        # Leaving out the only task leaves nothing: count it as no change (it adds no acceleration).
        return group_statistic(np.ones((tasks, tasks)), sums, counts, macro)
    return group_statistic(1.0 - np.eye(tasks), sums, counts, macro)


def mean_of_groups_jackknife(estimates: Sequence[NDArray], jackknifed: Sequence[NDArray]) -> NDArray:
    """Jackknife of the unweighted mean over groups: leaving a task out changes only its own group's value.

    Args:
        estimates: per group, its statistic ``(metrics,)``.
        jackknifed: per group, its ``jackknife`` ``(tasks, metrics)``.
    """
    total = np.sum(estimates, axis=0)
    count = len(estimates)
    return np.concatenate(
        [(total - estimate + jack) / count for estimate, jack in zip(estimates, jackknifed, strict=True)]
    )


def bca_interval(
    replicates: NDArray, estimate: NDArray, jackknifed: NDArray, *, clusters: int, confidence: float
) -> tuple[NDArray, NDArray]:
    """Bias-corrected and accelerated bounds per column of bootstrap ``replicates`` (resamples along axis 0).

    The bias correction and the acceleration (from the jackknife) bend the percentiles towards where a skewed
    statistic, such as a low completion rate over few tasks, actually scatters; the tail probability is the
    expanded one (``expanded_alpha``) for small numbers of tasks.
    """
    count = replicates.shape[0]
    alpha = expanded_alpha(clusters, confidence)
    close = np.abs(replicates - estimate) <= 1e-12
    below = ((replicates < estimate) & ~close).sum(axis=0) + 0.5 * close.sum(axis=0)
    bias = stats.norm.ppf(np.clip(below / count, 0.5 / count, 1 - 0.5 / count))
    spread = jackknifed.mean(axis=0) - jackknifed
    denominator = 6.0 * np.power((spread**2).sum(axis=0), 1.5)
    with np.errstate(invalid='ignore', divide='ignore'):
        acceleration = np.where(denominator > 0, (spread**3).sum(axis=0) / denominator, 0.0)
    tails = stats.norm.ppf(np.array([alpha / 2, 1 - alpha / 2]))[:, None]
    shifted = bias + tails
    with np.errstate(invalid='ignore', divide='ignore'):
        levels = stats.norm.cdf(bias + shifted / (1 - acceleration * shifted))
    plain = np.broadcast_to(np.array([alpha / 2, 1 - alpha / 2])[:, None], levels.shape)
    levels = np.clip(np.where(np.isfinite(levels), levels, plain), 0.0, 1.0)
    low = np.array([np.quantile(replicates[:, j], levels[0, j]) for j in range(replicates.shape[1])])
    high = np.array([np.quantile(replicates[:, j], levels[1, j]) for j in range(replicates.shape[1])])
    return low, high


def mean_intervals(
    task_sums: ArrayLike,
    task_counts: ArrayLike,
    macro: ArrayLike,
    *,
    confidence: float,
    rng: np.random.Generator,
    resamples: int,
) -> list[Interval]:
    """Intervals of mean scores in [0, 1] of one group of tasks (one per column), by one bootstrap over tasks.

    Args:
        task_sums: ``(tasks, metrics)``, per task the sum of its trials' scores.
        task_counts: per task, its number of trials.
        macro: per metric, whether it is the mean over tasks of task means rather than over trials.
        confidence: e.g. 0.95.
        rng: source of the resamples (the same resamples serve every column).
        resamples: bootstrap resamples.
    """
    sums = np.asarray(task_sums, dtype=float)
    counts = np.asarray(task_counts, dtype=float)
    flags = np.asarray(macro, dtype=bool)
    estimate = group_statistic(np.ones(counts.size), sums, counts, flags)
    if counts.size < 2:
        return [Interval(float(value), math.nan, math.nan, SINGLE_TASK) for value in estimate]
    replicates = group_statistic(resample_weights(rng, counts.size, resamples), sums, counts, flags)
    low, high = bca_interval(
        replicates, estimate, jackknife(sums, counts, flags), clusters=counts.size, confidence=confidence
    )
    result = []
    for column, value in enumerate(estimate):
        if np.ptp(replicates[:, column]) == 0:
            # Every task scored the same: the bootstrap has nothing to resample.
            bounds = no_spread_bounds(float(value), tasks=counts.size, confidence=confidence)
            result.append(Interval(float(value), bounds[0], bounds[1], NO_SPREAD))
        else:
            result.append(Interval(float(value), float(low[column]), float(high[column]), BOOTSTRAP))
    return result


def mean_interval(
    task_sums: ArrayLike,
    task_counts: ArrayLike,
    *,
    confidence: float,
    rng: np.random.Generator,
    resamples: int,
    macro: bool = False,
) -> Interval:
    """Interval of one mean score in [0, 1] of one group of tasks (``mean_intervals`` of a single metric)."""
    sums = np.asarray(task_sums, dtype=float).reshape(-1, 1)
    [interval] = mean_intervals(sums, task_counts, [macro], confidence=confidence, rng=rng, resamples=resamples)
    return interval
