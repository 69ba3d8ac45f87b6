"""``GraphTrials`` runs two trials per graph one step apart, without ROS: fake graphs record the calls made to them.

Trial k+1 is reset and started once the bridge has ended trial k and before k's result is collected (the referee
scores k meanwhile); a graph lost with two trials in flight gives both back, the earlier first in line, and another
graph runs them; every trial is collected exactly once.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import eval_process
import pytest

from robofollow_ros.errors import GraphLostError
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.suite import SuiteOptions, plan_trials, run_identity
from robofollow_ros.ros.graph_trials import GraphTrials

EPISODE_SECONDS = 0.01
"""Each fake episode takes this long, so that every graph gets trials."""
LIVE = {'policy_error': None, 'error_kind': None, 'queries': 10, 'executed_rows': 80, 'intent_score': 1.0}


class _Logger:
    def warning(self, message: str) -> None:
        """Kept quiet."""


class FakeGraph:
    """Answers at once; ``calls`` lists (domain, what, task id) in the order the evaluator made them. With
    ``lost``, waiting for the first result raises ``GraphLostError`` (the graph went away)."""

    timeout = 60.0

    def __init__(self, domain: int, calls: list[tuple[int, str, str]], *, lost: bool = False) -> None:
        self.domain = domain
        self.calls = calls
        self.lost = lost
        self.stopping = False
        self.lock = threading.Lock()

    def _note(self, what: str, spec: EpisodeSpec) -> None:
        with self.lock:
            self.calls.append((self.domain, what, spec.task_id))

    def prepare_episode(self, spec: EpisodeSpec) -> None:
        """Nothing to prepare: a simulated graph."""

    def start_episode(self, spec: EpisodeSpec, *, deadline: float) -> None:
        self._note('start', spec)

    def void_reason(self, spec: EpisodeSpec) -> str | None:
        return None

    def wait_for_bag(self, spec: EpisodeSpec, *, timeout: float) -> bool:
        """The recorder has published the episode's bag (a stand-in writes it with the result)."""
        return True

    def wait_for_end(self, spec: EpisodeSpec, *, deadline: float) -> None:
        time.sleep(EPISODE_SECONDS)
        self._note('end', spec)

    def wait_for_result(self, spec: EpisodeSpec, *, deadline: float) -> tuple[dict[str, Any], float]:
        if self.lost:
            raise GraphLostError(f'the graph in ROS domain {self.domain} is gone (its referee left)')
        self._note('result', spec)
        return {**LIVE, 'episode_id': spec.episode_id, 'end_stamp_ns': 1}, 0.0

    def get_logger(self) -> _Logger:
        return _Logger()


def _run(graphs: list[FakeGraph], tmp_path: Path, count: int) -> tuple[list[str], GraphTrials]:
    options = SuiteOptions(out=tmp_path, policy='expert', pattern='*L1_s1*')
    todo = plan_trials(options)[:count]
    trials = GraphTrials(graphs)(options, identity=run_identity(options, privileged=True))  # type: ignore[arg-type]
    results = [result.key[0] for result in trials.results(todo)]
    assert sorted(results) == sorted(trial.task.task_id for trial in todo), 'each trial collected exactly once'
    return [trial.task.task_id for trial in todo], trials


def test_the_next_trial_starts_before_the_last_result_is_collected(tmp_path) -> None:
    calls: list[tuple[int, str, str]] = []
    order, _ = _run([FakeGraph(0, calls)], tmp_path, 4)
    a, b, c, d = order
    assert [(what, task) for _, what, task in calls] == [
        ('start', a), ('end', a),
        ('start', b), ('result', a), ('end', b),
        ('start', c), ('result', b), ('end', c),
        ('start', d), ('result', c), ('end', d),
        ('result', d),
    ]  # fmt: skip


def test_a_graph_lost_with_two_trials_in_flight_gives_both_back_and_another_runs_them(tmp_path) -> None:
    calls: list[tuple[int, str, str]] = []
    order, trials = _run([FakeGraph(0, calls, lost=True), FakeGraph(1, calls)], tmp_path, 6)
    collected = {task for domain, what, task in calls if what == 'result'}
    assert collected == set(order)
    assert not [task for domain, what, task in calls if domain == 0 and what == 'result']
    started_on_lost = [task for domain, what, task in calls if domain == 0 and what == 'start']
    assert started_on_lost and all((1, 'result', task) in calls for task in started_on_lost), (
        'every trial the lost graph had started ran again on the other'
    )
    assert len(trials.problems) == 1 and 'back in the queue' in trials.problems[0]
    assert sum(trials.ran.values()) == 6 and trials.ran[0] == 0


@pytest.mark.parametrize('count', [1, 2, 3])
def test_short_runs_collect_every_result(tmp_path, count: int) -> None:
    calls: list[tuple[int, str, str]] = []
    order, _ = _run([FakeGraph(0, calls), FakeGraph(1, calls)], tmp_path, count)
    assert {task for _, what, task in calls if what == 'result'} == set(order)


def test_hidden_bags_of_recorders_that_are_gone_are_removed_and_live_ones_kept(tmp_path, live_pid) -> None:
    from robofollow_ros.ros.graph_trials import remove_orphaned_partials

    gone = eval_process.dead_pid()
    orphan = tmp_path / f'.task__r01.partial-{gone}'
    live = tmp_path / f'.task__r02.partial-{live_pid}'
    foreign = tmp_path / f'.my_notes.partial-{gone}'
    final = tmp_path / 'task__r01'
    for folder in (orphan, live, foreign, final):
        (folder / folder.name).mkdir(parents=True)
    assert remove_orphaned_partials(tmp_path, stems={'task__r01', 'task__r02'}) == [orphan]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([live.name, foreign.name, final.name])
