"""Property tests of the safety filter and the dead-man: whatever the policy returns (out of limits, too fast,
NaN, outside the workspace), however old the state and however silent the policy, what comes out is within the
joint limits, the velocity limits and the workspace, is never an empty trajectory, and every change is reported."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from safety_support import ROW, aloha_limits, tcp

from robofollow_ros.robot.description import joint_layout
from robofollow_ros.safety.command_filter import MeasuredState, SafetyDecision, filter_chunk
from robofollow_ros.safety.deadman import DeadMan
from robofollow_ros.safety.jtc import arm_trajectories, check_trajectory
from robofollow_ros.safety.limits import WorkspaceBox

BOX = WorkspaceBox(lower=(-0.45, 0.1, 0.8), upper=(0.45, 0.3, 1.0))
"""Tighter than the unit tests' box, so that walks from the states below leave it often."""
LIMITS = aloha_limits(workspace=BOX)
LAYOUT = joint_layout('aloha')
REFUSING = {'malformed', 'non_finite', 'position_refused', 'too_fast', 'outside_workspace', 'stale_state'}

modes = st.fixed_dictionaries(
    {
        'limit_mode': st.sampled_from(['clamp', 'refuse']),
        'velocity_mode': st.sampled_from(['refuse', 'stretch']),
        'max_stretch': st.sampled_from([1.0, 2.0, 6.0]),
    }
)
SPAN = LIMITS.upper - LIMITS.lower


@st.composite
def states(draw: st.DrawFn) -> np.ndarray:
    """A measured state in the middle of the joint ranges, sometimes with one joint read past a limit."""
    state = LIMITS.lower + (0.35 + 0.3 * draw(hnp.arrays(np.float64, 14, elements=st.floats(0.0, 1.0)))) * SPAN
    if draw(st.integers(0, 3)) == 0:
        column = draw(st.integers(0, 13))
        state[column] = LIMITS.lower[column] + draw(st.sampled_from([-0.2, -0.01, 1.01, 1.2])) * SPAN[column]
    return state


ages = st.one_of(
    st.floats(0.0, LIMITS.max_state_age_s),
    st.floats(0.0, LIMITS.max_state_age_s),
    st.floats(0.0, LIMITS.max_state_age_s),
    st.floats(LIMITS.max_state_age_s, 10.0),
    st.sampled_from([float('nan'), float('inf')]),
)


@st.composite
def chunks(draw: st.DrawFn, state: np.ndarray) -> np.ndarray:
    """Rows drifting away from ``state`` with noise, each of a drawn scale (slow to far too fast, some leaving
    the limits and the box), a value sometimes replaced by a non-finite one."""
    rows = draw(st.integers(1, 20))
    drift = draw(hnp.arrays(np.float64, 14, elements=st.floats(-1.0, 1.0))) * draw(
        st.sampled_from([0.0, 0.005, 0.01, 0.02, 0.1, 0.5])
    )
    noise = draw(hnp.arrays(np.float64, (rows, 14), elements=st.floats(-1.0, 1.0))) * draw(
        st.sampled_from([0.0, 0.002, 0.005, 0.05, 0.3, 3.0])
    )
    chunk = state + np.cumsum(drift + noise, axis=0)
    if draw(st.booleans()) and draw(st.booleans()):
        row, column = draw(st.integers(0, rows - 1)), draw(st.integers(0, 13))
        chunk[row, column] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    return chunk


def assert_safe(decision: SafetyDecision, state: np.ndarray, limits=LIMITS) -> None:
    """The decision's command respects every limit, and is a hold at the clipped measured state when it holds."""
    command = decision.command
    assert command is not None
    positions, times = command.positions, command.times
    assert positions.ndim == 2 and positions.shape[1] == 14 and len(positions) >= 1 and times.shape == (len(positions),)
    assert np.isfinite(positions).all() and np.isfinite(times).all()
    assert (positions >= limits.lower).all() and (positions <= limits.upper).all()
    durations = np.diff(times, prepend=0.0)
    assert (durations > 0).all()
    for arm, trajectory in arm_trajectories(positions, times, LAYOUT).items():
        assert check_trajectory(trajectory, controller_joints=LAYOUT.command_joints(arm)) == ()
    speeds = np.abs(np.diff(np.vstack([state[None, :], positions]), axis=0)) / durations[:, None]
    assert (speeds <= limits.velocity * (1 + 1e-6)).all()
    if command.hold:
        assert len(positions) == 1
        np.testing.assert_array_equal(positions[0], np.clip(state, limits.lower, limits.upper))
        return
    # Inside the box, or (an arm measured outside it) never further outside than the row before.
    previous = np.stack([BOX.excess(point) for point in tcp(state)])
    for row in positions:
        excess = np.stack([BOX.excess(point) for point in tcp(row)])
        assert (excess <= previous + 1e-9).all()
        previous = excess


def assert_reported(decision: SafetyDecision, chunk: np.ndarray, age: float, limits=LIMITS) -> None:
    """Every difference between the chunk and what is sent has an intervention naming it."""
    seen = {(item.kind, item.row, item.joint) for item in decision.interventions}
    kinds = {item.kind for item in decision.interventions}
    if not (np.isfinite(age) and age <= limits.max_state_age_s):
        assert 'stale_state' in kinds and decision.held
    for row, column in np.argwhere(~np.isfinite(chunk)):
        assert ('non_finite', int(row), limits.names[column]) in seen and decision.held
    if decision.held:
        assert kinds & REFUSING
        return
    sent = decision.command.positions
    for row, column in np.argwhere(sent != chunk[: len(sent)]):
        assert ('position_clamped', int(row), limits.names[column]) in seen
    durations = np.diff(decision.command.times, prepend=0.0)
    for row in np.flatnonzero(np.abs(durations - ROW) > 1e-12):
        assert any(item.kind == 'row_stretched' and item.row == row for item in decision.interventions)
    if len(sent) < len(chunk):
        refused = [item for item in decision.interventions if item.kind == 'rows_refused']
        assert [(item.row, item.value) for item in refused] == [(len(sent), len(chunk) - len(sent))]
        assert kinds & REFUSING
    if not decision.interventions:
        np.testing.assert_array_equal(sent, chunk)
        np.testing.assert_allclose(decision.command.times, ROW * np.arange(1, len(chunk) + 1))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), state=states(), age=ages, mode=modes)
def test_whatever_the_policy_sends_the_command_stays_within_every_limit(data, state, age, mode):
    limits = dataclasses.replace(LIMITS, **mode)
    chunk = data.draw(chunks(state))
    decision = filter_chunk(chunk, state=MeasuredState(state, age), limits=limits, row_period_s=ROW, tcp=tcp)
    assert_safe(decision, state, limits)
    assert_reported(decision, chunk, age, limits)


@settings(max_examples=100, deadline=None)
@given(state=states(), waits=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8), deadline=st.floats(0.05, 0.5))
def test_a_silent_policy_gets_exactly_one_hold_at_the_measured_state(state, waits, deadline):
    now = [100.0]
    deadman = DeadMan(deadline_s=deadline, clock=lambda: now[0])
    deadman.query_sent()
    holds = []
    for wait in waits:
        now[0] += wait
        decision = deadman.poll(MeasuredState(state, 0.0), LIMITS, row_period_s=ROW)
        if decision is not None:
            assert_safe(decision, state)
            assert decision.held and decision.interventions[0].kind == 'policy_silent'
            holds.append(now[0] - 100.0)
    elapsed = now[0] - 100.0  # the clock's own sum (float rounding decides ties as the dead-man sees them)
    assert len(holds) == (1 if elapsed > deadline else 0)
    assert all(held > deadline for held in holds)
    assert deadman.answer_arrived() is (elapsed <= deadline)
