"""Confidence intervals, paired tests and rounds needed, checked by seeded simulation against known truth.

Coverage: for synthetic runs whose true rate or mean score is known, the stated 95 % intervals must contain
the truth in 93-97 % of 2,000 repetitions, per method. The paired tests must not reject more often than the
level when both runs are the same policy, and must find a 10-point completion difference on 554 paired
trials at least 80 % of the time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from robofollow_ros.statistics.cells import TaskTable, stratified_mean, table_intervals
from robofollow_ros.statistics.compare import PairedGroup, compare_records, pair_trials, paired_row
from robofollow_ros.statistics.intervals import (
    BOOTSTRAP,
    NO_SPREAD,
    WILSON,
    WILSON_CLUSTERED,
    mean_interval,
    rate_interval,
    wilson,
)
from robofollow_ros.statistics.paired import (
    A_BETTER,
    B_BETTER,
    MCNEMAR,
    NO_DIFFERENCE,
    SIGN_FLIP,
    holm,
    mcnemar_exact,
    sign_flip_pvalues,
)
from robofollow_ros.statistics.planning import Components, plan_rounds, rounds_for, variance_components

REPETITIONS = 2000
LEVEL = 0.95
# Tasks per scene in the 554 evaluation tasks (S1..S4): the "All" row weighs each scene equally.
SCENE_TASKS = (116, 132, 216, 90)


def task_rates(rng, tasks, mean, concentration=2.0):
    """Per-task success probabilities around ``mean``: tasks differ, as they do in the benchmark."""
    return rng.beta(mean * concentration, (1 - mean) * concentration, tasks)


def stage_scores(rng, rates, rounds):
    """Stage-weighted scores: five stages of 0.2, each passed with the task's probability (trials x rounds)."""
    return 0.2 * rng.binomial(5, np.repeat(rates[:, None], rounds, axis=1))


def table_of(values):
    """A TaskTable of one metric repeated in the three columns (IS, ES, CR) from a (tasks, rounds) array."""
    values = np.asarray(values, dtype=float)
    sums = np.repeat(values.sum(axis=1)[:, None], 3, axis=1)
    squares = np.repeat((values**2).sum(axis=1)[:, None], 3, axis=1)
    return TaskTable(tuple(map(str, range(len(values)))), sums, squares, np.full(len(values), values.shape[1], float))


def coverage(hits):
    return float(np.mean(hits))


def test_wilson_matches_the_textbook_interval_and_is_exact_at_the_boundaries():
    low, high = wilson(5, 20, confidence=LEVEL)
    assert (round(float(low), 4), round(float(high), 4)) == (0.1119, 0.4687)
    low, high = wilson(0, 16, confidence=LEVEL)
    assert float(low) == 0.0 and 0.19 < float(high) < 0.20
    assert rate_interval(np.ones(16), np.ones(16), confidence=LEVEL).method == WILSON
    assert rate_interval(np.full(8, 2.0), np.full(8, 3.0), confidence=LEVEL).method == WILSON_CLUSTERED


def test_wilson_covers_a_completion_rate_with_one_round_per_task():
    rng = np.random.default_rng(11)
    hits = []
    for _ in range(REPETITIONS):
        done = rng.random(40) < task_rates(rng, 40, 0.3)
        hits.append(rate_interval(done.astype(float), np.ones(40), confidence=LEVEL).contains(0.3))
    assert 0.93 <= coverage(hits) <= 0.97


@pytest.mark.parametrize(('tasks', 'rounds', 'rate'), [(30, 5, 0.4), (8, 10, 0.15)])
def test_wilson_at_the_effective_size_covers_when_rounds_share_a_task(tasks, rounds, rate):
    rng = np.random.default_rng(12)
    hits, methods = [], set()
    for _ in range(REPETITIONS):
        done = rng.binomial(rounds, task_rates(rng, tasks, rate))
        interval = rate_interval(done.astype(float), np.full(tasks, float(rounds)), confidence=LEVEL)
        hits.append(interval.contains(rate))
        methods.add(interval.method)
    assert methods == {WILSON_CLUSTERED}
    assert 0.93 <= coverage(hits) <= 0.97


# A cell of 16 tasks scoring about 12 % (as the blind baseline does) is the hard case, few tasks and skewed
# scores: there the interval covers about 93 % (92.6 % here), short of 95 %; docs/statistics.md gives the numbers.
@pytest.mark.parametrize(('tasks', 'rounds', 'mean', 'lowest'), [(30, 3, 0.35, 0.93), (16, 1, 0.12, 0.915)])
def test_the_bootstrap_over_tasks_covers_a_mean_stage_weighted_score(tasks, rounds, mean, lowest):
    rng = np.random.default_rng(13)
    resampler = np.random.default_rng(14)
    hits = []
    for _ in range(REPETITIONS):
        scores = stage_scores(rng, task_rates(rng, tasks, mean), rounds)
        interval = mean_interval(
            scores.sum(axis=1), np.full(tasks, rounds), confidence=LEVEL, rng=resampler, resamples=1000
        )
        assert interval.method in (BOOTSTRAP, NO_SPREAD)
        hits.append(interval.contains(mean))
    assert lowest <= coverage(hits) <= 0.97


def test_the_stratified_bootstrap_covers_the_mean_over_scenes():
    rng = np.random.default_rng(15)
    resampler = np.random.default_rng(16)
    means = (0.15, 0.3, 0.5, 0.2)
    truth = float(np.mean(means))
    hits = []
    for _ in range(REPETITIONS):
        tables = [
            table_of(stage_scores(rng, task_rates(rng, n, m), 1)) for n, m in zip((16, 24, 40, 27), means, strict=True)
        ]
        intervals = stratified_mean(tables, confidence=LEVEL, rng=resampler, resamples=1000)
        hits.append(intervals['IS'].contains(truth))
    assert 0.93 <= coverage(hits) <= 0.97


def test_the_paired_bootstrap_covers_the_difference_of_two_policies():
    rng = np.random.default_rng(17)
    resampler = np.random.default_rng(18)
    hits = []
    for _ in range(REPETITIONS):
        rates = task_rates(rng, 40, 0.5)
        a = stage_scores(rng, rates, 1)
        b = stage_scores(rng, np.clip(rates - 0.2, 0, 1), 1)
        truth = float(np.mean(rates) - np.mean(np.clip(rates - 0.2, 0, 1)))
        row = paired_row(
            [PairedGroup(table_of(a), table_of(b))],
            scope='cell', row='S1', level='L0', confidence=LEVEL, rng=resampler, resamples=1000, permutations=100,
        )  # fmt: skip
        hits.append(row.difference['IS'].contains(truth))
    # The truth here is the difference of the task population's means, the estimand of a bootstrap over tasks.
    assert 0.93 <= coverage(hits) <= 0.97


def test_groups_of_one_or_two_tasks_get_finite_or_missing_intervals_not_errors():
    records = [
        record(task, 'L0', scene, round_, score, score == 1.0)
        for scene, tasks in ((1, ['a']), (2, ['b', 'c']))
        for task in tasks
        for round_, score in ((1, 1.0), (2, 0.2))
    ]
    intervals = table_intervals(records)
    assert math.isnan(intervals['S1']['L0']['IS'].low) and intervals['S1']['L0']['IS'].method == 'none (one task)'
    for metric in ('IS', 'ES', 'CR'):
        for row in ('S2', 'Mean'):
            interval = intervals[row]['L0'][metric]
            assert 0.0 <= interval.low <= interval.estimate <= interval.high <= 1.0
    comparison = compare_records(records, [{**r, 'intent_score': 0.0} for r in records], permutations=99)
    assert all(np.isfinite([row.difference[m].low for m in ('IS', 'ES', 'CR')]).all() for row in comparison.rows)


def test_a_score_without_spread_gets_the_rates_interval_not_a_point():
    interval = mean_interval(np.ones(16), np.ones(16), confidence=LEVEL, rng=np.random.default_rng(0), resamples=500)
    assert interval.method == NO_SPREAD and interval.high == 1.0 and 0.75 < interval.low < 0.85


def flip_batches(differences, rng):
    """Sign-flip p-values of many data sets, 50 at a time, each batch with its own random flips (as each real
    comparison draws its own)."""
    return np.concatenate([sign_flip_pvalues(part, rng=rng, permutations=1999) for part in np.split(differences, 40)])


def test_same_policy_on_other_rounds_is_found_different_no_more_often_than_the_level():
    rng = np.random.default_rng(21)
    rates = task_rates(rng, 554 * REPETITIONS, 0.4).reshape(REPETITIONS, 554)
    a = rng.random(rates.shape) < rates
    b = rng.random(rates.shape) < rates
    completion = mcnemar_exact((a & ~b).sum(axis=1), (b & ~a).sum(axis=1))
    assert np.mean(completion <= 0.05) <= 0.05
    weights = np.concatenate([np.full(n, 1 / (len(SCENE_TASKS) * n)) for n in SCENE_TASKS])
    scores = weights * (0.2 * rng.binomial(5, rates) - 0.2 * rng.binomial(5, rates))
    p = flip_batches(scores, rng)
    # The permutation test's size is 5 % by construction, not below it: the simulated rate scatters around
    # 5 % by its standard error (0.49 points at 2,000 repetitions), so two standard errors are allowed.
    assert np.mean(p <= 0.05) <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / REPETITIONS)


def test_a_ten_point_completion_difference_on_554_paired_trials_is_detected_at_least_80_percent_of_the_time():
    rng = np.random.default_rng(22)
    # Hardest case: no correlation within a pair, so every discordant pair is noise as well as signal.
    a = rng.random((REPETITIONS, 554)) < 0.5
    b = rng.random((REPETITIONS, 554)) < 0.4
    p = mcnemar_exact((a & ~b).sum(axis=1), (b & ~a).sum(axis=1))
    assert np.mean(p <= 0.05) >= 0.80
    weights = np.concatenate([np.full(n, 1 / (len(SCENE_TASKS) * n)) for n in SCENE_TASKS])
    p = flip_batches(weights * (a.astype(float) - b), rng)
    assert np.mean(p <= 0.05) >= 0.80


def test_sign_flips_are_enumerated_for_small_groups_and_holm_adjusts_step_down():
    p = sign_flip_pvalues(np.array([[1.0, 1.0, 1.0], [1.0, -1.0, 0.0]]), rng=np.random.default_rng(0), permutations=10)
    assert p.tolist() == [0.25, 1.0]
    assert holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert mcnemar_exact(0, 0) == 1.0 and float(mcnemar_exact(6, 0)) == pytest.approx(2 / 64)


def test_rounds_needed_follow_the_variance_and_say_when_only_more_tasks_help():
    z = 1.959963984540054
    # One round, p = 0.5 with 16 tasks: m = z^2 * var / (T * w^2) rounds.
    components = variance_components(table_of(np.array([[1.0]] * 8 + [[0.0]] * 8)), 0)
    assert components.between == 0.0 and components.within == pytest.approx(16 / 15 * 0.25)
    assert rounds_for([components], half_width=0.05, z=z) == math.ceil(z * z * 16 / 15 * 0.25 / (16 * 0.0025))
    # Rounds that always agree: all variance is between tasks, no number of rounds narrows it.
    repeated = variance_components(table_of(np.array([[1.0, 1.0]] * 8 + [[0.0, 0.0]] * 8)), 0)
    assert repeated.within == 0.0 and repeated.between > 0.2
    assert rounds_for([repeated], half_width=0.05, z=z) is None
    assert rounds_for([Components(0.0, 0.25, 400, 1.0)], half_width=0.05, z=z) == 1


def record(task, level, scene, round_, intent, done, **extra):
    return {
        'task_id': task, 'scene': scene, 'level_tag': level, 'round': round_, 'seed': 42 + 100 * round_,
        'intent_score': intent, 'exec_score': intent, 'intent_ok': intent == 1.0, 'exec_ok': intent == 1.0,
        'completion_ok': done, 'variant': 'published', 'robot': 'aloha', **extra,
    }  # fmt: skip


def synthetic_run(rng, *, rate, rounds=(1,), tasks_per_cell=20):
    records = []
    for scene in (1, 2):
        for level in ('L0', 'L1'):
            for index in range(tasks_per_cell):
                for round_ in rounds:
                    done = bool(rng.random() < rate)
                    records.append(
                        record(f'{level}_s{scene}_{index}', level, scene, round_, 1.0 if done else 0.2, done)
                    )
    return records


def test_compare_pairs_by_trial_or_by_task_and_counts_the_unpaired():
    rng = np.random.default_rng(31)
    a = synthetic_run(rng, rate=0.5)
    b = synthetic_run(rng, rate=0.5, rounds=(2,))
    assert len(pair_trials(a, b, by='trial').a) == 0
    paired = pair_trials(a, b[:-3], by='task')
    assert len(paired.a) == 77 and (paired.unpaired_a, paired.unpaired_b) == (3, 0)
    assert all(
        x['task_id'] == y['task_id'] and x['round'] == 1 and y['round'] == 2
        for x, y in zip(paired.a, paired.b, strict=True)
    )


def test_compare_finds_the_better_run_and_no_difference_between_equals():
    rng = np.random.default_rng(32)
    strong, weak = synthetic_run(rng, rate=0.95), synthetic_run(rng, rate=0.1)
    comparison = compare_records(strong, weak, permutations=999, resamples=500)
    overall = comparison.scoped('all')[0]
    assert overall.trials == 80 and overall.verdict['CR'] == A_BETTER and overall.difference['CR'].low > 0.5
    assert {row.test['CR'] for row in comparison.scoped('cell')} == {MCNEMAR}
    assert overall.test['CR'] == SIGN_FLIP
    assert compare_records(weak, strong, permutations=999, resamples=500).scoped('all')[0].verdict['IS'] == B_BETTER
    same = compare_records(strong, strong, permutations=999, resamples=500)
    assert {row.verdict[m] for row in same.rows for m in ('IS', 'ES', 'CR')} == {NO_DIFFERENCE}


def test_table_intervals_cover_every_figure_and_the_mean_row():
    rng = np.random.default_rng(33)
    intervals = table_intervals(synthetic_run(rng, rate=0.4, rounds=(1, 2, 3)))
    assert list(intervals) == ['S1', 'S2', 'Mean'] and list(intervals['Mean']) == ['L0', 'L1']
    for levels in intervals.values():
        for metrics in levels.values():
            for interval in metrics.values():
                assert interval.low <= interval.estimate <= interval.high and interval.high - interval.low > 0.05
    assert intervals['S1']['L0']['CR'].method == WILSON_CLUSTERED


def test_planning_from_a_run_with_several_rounds_uses_both_parts_of_the_variance():
    rng = np.random.default_rng(34)
    plan = plan_rounds(synthetic_run(rng, rate=0.5, rounds=(1, 2, 3, 4)), half_width=0.1)
    assert plan.rounds_observed == 4
    # Independent trials: between-task variance near zero, so about z^2 * 0.25 / (20 * 0.01) = 4.8 rounds.
    assert all(3 <= value <= 8 for value in plan.rounds['S1'].values() for value in [value['CR']] if value)
