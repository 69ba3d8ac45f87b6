"""The report plot: IS and ES stay distinguishable when equal, 0 % and 100 % are visible, a title names the run."""

from __future__ import annotations

import re

from robofollow_ros.referee.aggregate import GroupSummary
from robofollow_ros.referee.table1 import Table, build_table, figure_of, to_markdown

EQUAL = {'S1': {'L0': (100.0, 100.0, 100.0), 'L1': (50.0, 50.0, 0.0)}}


def lines_of(axis):
    return {line.get_label(): line for line in axis.get_lines()}


def test_equal_is_and_es_are_drawn_apart_and_the_full_range_is_visible():
    table = Table(levels=('L0', 'L1'), rows=('S1',), cells=EQUAL)
    figure = figure_of({'': table}, title='Policy x · run abc')
    [axis] = figure.axes
    lines = lines_of(axis)
    intent, execution = lines['IS'], lines['ES']
    assert list(intent.get_ydata()) == list(execution.get_ydata()) == [100.0, 50.0]
    assert list(intent.get_xdata()) != list(execution.get_xdata())
    assert intent.get_marker() != execution.get_marker() and intent.get_linestyle() != execution.get_linestyle()
    low, high = axis.get_ylim()
    assert low < 0.0 and high > 100.0 + 2 * intent.get_markersize() / 10
    assert figure._suptitle.get_text() == 'Policy x · run abc'


def test_a_comparison_names_each_policy_in_the_legend():
    table = Table(levels=('L0', 'L1'), rows=('S1',), cells=EQUAL)
    figure = figure_of({'expert': table, 'blind': table})
    assert {'expert IS', 'blind IS', 'expert CR', 'blind ES'} <= set(lines_of(figure.axes[0]))


def summary(scene, level, intent, execution, completion):
    return GroupSummary(
        scene=scene, level=level, episodes=3, task_count=3, mean_intent_score=intent, mean_exec_score=execution,
        completion_rate=completion, intent_full_rate=0.0, exec_full_rate=0.0, episode_micro_completion_rate=0.0,
    )  # fmt: skip


def test_the_mean_row_has_one_decimal_like_every_other_row():
    table = build_table([summary(1, 'L0', 0.8, 0.567, 0.75), summary(2, 'L0', 0.6, 0.6, 0.0)])
    mean = to_markdown(table).splitlines()[-1]
    assert mean == '| **Mean** | 70.0 / 58.4 / 37.5 |'
    assert all(re.fullmatch(r'\d+\.\d', value) for value in re.findall(r'[\d.]+', mean))
