"""The dead-man (``robofollow_ros.safety.deadman``) with an injected clock: no answer within the deadline gives one
hold at the measured position, a late answer is refused, an answer in time is accepted."""

from __future__ import annotations

import numpy as np
import pytest
from safety_support import ROW, aloha_limits, home

from robofollow_ros.errors import SafetyError
from robofollow_ros.safety.deadman import DeadMan


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_a_silent_policy_is_held_once_when_the_deadline_passes():
    clock, limits, state = FakeClock(), aloha_limits(), home()
    deadman = DeadMan(deadline_s=2.0, clock=clock)
    assert deadman.poll(state, limits, row_period_s=ROW) is None  # nothing outstanding
    deadman.query_sent()
    clock.now += 1.9
    assert deadman.poll(state, limits, row_period_s=ROW) is None and not deadman.overdue()
    clock.now += 0.2
    decision = deadman.poll(state, limits, row_period_s=ROW)
    assert decision is not None and decision.held
    np.testing.assert_array_equal(decision.command.positions, state.positions[None, :])
    silent = decision.interventions[0]
    assert (silent.kind, silent.limit) == ('policy_silent', 2.0) and silent.value == pytest.approx(2.1)
    clock.now += 5.0
    assert deadman.poll(state, limits, row_period_s=ROW) is None  # already holding
    assert deadman.answer_arrived() is False  # late: drop the chunk
    assert not deadman.waiting


def test_an_answer_in_time_is_accepted_and_the_next_query_starts_afresh():
    clock = FakeClock()
    deadman = DeadMan(deadline_s=1.0, clock=clock)
    deadman.query_sent()
    clock.now += 0.7
    assert deadman.answer_arrived() is True
    clock.now += 10.0
    assert deadman.poll(home(), aloha_limits(), row_period_s=ROW) is None
    assert deadman.answer_arrived() is False  # answers no query
    deadman.query_sent()
    clock.now += 1.5
    assert deadman.poll(home(), aloha_limits(), row_period_s=ROW) is not None


@pytest.mark.parametrize('deadline', [0.0, -1.0, float('nan'), float('inf')])
def test_an_unusable_deadline_is_refused(deadline: float):
    with pytest.raises(SafetyError, match='dead-man deadline'):
        DeadMan(deadline_s=deadline, clock=FakeClock())
