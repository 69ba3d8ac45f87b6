"""A trial on a real cell says whether the cell kept real time: joint-state gaps and chunks the arm did not reach.

The bridge's ``DriverFeedback`` times the arrivals of each arm's joint states from an episode's start; the episode's
``RealTimeKeeping`` travels in ``EpisodeEnd`` to the record (``real_time``), the progress line and run.json's
counts. Under load a CI-like run showed fake hardware at real-time factor 0.75 and joint states 0.3-0.66 s old, and
nothing in the results said so (issue 29).
"""

from __future__ import annotations

import io

import pytest
from graph_helpers import private_node
from sensor_msgs.msg import JointState

from robofollow_ros.evaluation.progress import Progress
from robofollow_ros.evaluation.real_time import LATE_GAP_ROWS, RealTimeKeeping, trials_not_real_time
from robofollow_ros.evaluation.status import counts_line, trial_counts
from robofollow_ros.realcell.driver_feedback import DriverFeedback
from robofollow_ros.realcell.fake_driver import FakeDriver
from robofollow_ros.robot.profiles import load_profile
from robofollow_ros.ros.protocol import EpisodeEnd

DOMAIN = 31
LATE = RealTimeKeeping(state_gap_max_s=0.41, late_state_gaps=3, late_gap_s=0.12, unreached_chunks=1)
KEPT = RealTimeKeeping(state_gap_max_s=0.02, late_state_gaps=0, late_gap_s=0.12, unreached_chunks=0)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_trial_keeps_real_time_only_without_late_states_and_unreached_chunks() -> None:
    assert KEPT.kept and not LATE.kept
    assert not RealTimeKeeping(0.05, 0, 0.12, 1).kept and not RealTimeKeeping(0.2, 1, 0.12, 0).kept
    assert RealTimeKeeping.from_record(LATE.record()) == LATE
    assert LATE.record()['kept'] is False
    assert LATE.summary() == (
        'real time not kept: 3 joint-state gaps over 0.12 s (largest 0.41 s), 1 chunks not reached in time'
    )
    assert KEPT.summary() == 'real time kept'


def test_the_episode_end_carries_the_real_time_keeping_into_the_record() -> None:
    end = EpisodeEnd('e1', 5, queries=2, executed_rows=40, real_time=LATE)
    back = EpisodeEnd.from_message(end.to_message())
    assert back == end
    assert back.bookkeeping()['real_time'] == LATE.record()
    simulated = EpisodeEnd.from_message(EpisodeEnd('e2', 5, queries=2, executed_rows=40).to_message())
    assert simulated.real_time is None and 'real_time' not in simulated.bookkeeping()


def test_run_counts_and_progress_lines_say_when_real_time_was_not_kept() -> None:
    records = [
        {'task_id': 'a', 'round': 1, 'real_time': LATE.record(), 'completion_ok': True},
        {'task_id': 'b', 'round': 1, 'real_time': KEPT.record()},
    ]
    counts = trial_counts(records)
    assert counts['trials_not_real_time'] == trials_not_real_time(records) == 1
    assert counts_line(counts).endswith('; the cell did not keep real time in 1 (their records say how)')
    assert 'trials_not_real_time' not in trial_counts([{'task_id': 'sim', 'round': 1}])
    stream = io.StringIO()
    progress = Progress(2, stream=stream)
    progress.update(records[0], wall_seconds=1.0)
    progress.update(records[1], wall_seconds=1.0)
    first, second = stream.getvalue().splitlines()
    assert first.endswith(f'| {LATE.summary()}') and 'real time' not in second


@pytest.mark.ros
@pytest.mark.parametrize('profile_name', ['aloha_ros2_control', 'aloha_interbotix', 'piper'])
def test_driver_feedback_counts_the_gaps_between_an_arms_joint_states(profile_name: str) -> None:
    profile = load_profile(profile_name)
    messages = []
    for topic, (names, positions) in (
        FakeDriver(profile, initial=profile.home_state()).joint_states(profile.home_state()).items()
    ):
        arms = tuple(arm for arm in ('left', 'right') if profile.arms[arm].joint_states == topic)
        messages.append((arms, JointState(name=names, position=positions)))
    clock = Clock()
    late_s = LATE_GAP_ROWS * profile.row_period
    with private_node(DOMAIN, 'feedback_gaps') as (node, _):
        feedback = DriverFeedback(node, profile, monotonic=clock)

        def tick(seconds: float) -> None:
            clock.now += seconds
            for arms, message in messages:
                feedback.on_state(arms, message)

        tick(0.0)
        tick(5.0)  # before the episode: not counted
        feedback.mark_gaps(late_s=late_s)
        for _ in range(10):
            tick(0.01)
        assert feedback.gaps_since_mark().late == 0
        assert feedback.gaps_since_mark().largest_s == pytest.approx(0.01)
        tick(late_s + 0.05)
        tick(0.01)
        gaps = feedback.gaps_since_mark()
        assert gaps.late == 2 and gaps.largest_s == pytest.approx(late_s + 0.05)  # both arms went unobserved
        clock.now += 1.0  # the states stop: the gap still open counts
        gaps = feedback.gaps_since_mark()
        assert gaps.late == 4 and gaps.largest_s == pytest.approx(1.0)
        feedback.mark_gaps(late_s=late_s)
        assert feedback.gaps_since_mark().late == 0
