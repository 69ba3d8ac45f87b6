"""The acceleration rule of the safety filter and where a chunk starts from (issue 29): a row may change each joint's
speed by at most its acceleration limit over one row period (the first row from the start's commanded speed, the
last row of a whole chunk to rest), and a chunk starts where the arms are commanded to be while they follow their
command, so a measurement lagging a moving arm cannot refuse every later chunk."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from safety_support import ROW, aloha_limits, home, tcp

from robofollow_ros.errors import ProfileError, SafetyError
from robofollow_ros.robot.profiles import load_profile, parse_profile, profile_path
from robofollow_ros.safety.command_filter import ChunkStart, Command, MeasuredState, filter_chunk
from robofollow_ros.safety.controlled_stop import (
    FOLLOWING_WITHIN,
    SentCommand,
    chunk_start,
    stop_decelerations,
)
from robofollow_ros.safety.limits import SafetyLimits, arm_joint_values
from robofollow_ros.safety.profile_limits import limits_from_profile, profile_tcp

ACCELERATION = 10.0
"""rad/s^2 on every arm joint in these tests: a speed change of 0.6 rad/s per 0.06 s row at most."""
STEP = ACCELERATION * ROW * ROW
"""rad: how much a row may move further than the row before it."""


def limits(**changes: object) -> SafetyLimits:
    return aloha_limits(**{'acceleration': arm_joint_values(ACCELERATION), **changes})


def ramp_up(rows: int, *, column: int = 0, factor: float = 1.0, start: np.ndarray | None = None) -> np.ndarray:
    """Rows from ``start`` (home) whose ``column`` speeds up by ``factor`` times the limit every row."""
    base = home().positions if start is None else start
    chunk = np.tile(base, (rows, 1))
    steps = factor * STEP * np.arange(1, rows + 1)
    chunk[:, column] += np.cumsum(steps)
    return chunk


def accelerations(decision) -> list[tuple[int | None, str | None, float]]:
    return [(i.row, i.joint, i.value) for i in decision.interventions if i.kind == 'over_acceleration']


def test_rows_speeding_up_and_slowing_down_at_the_limit_go_out_whole():
    chunk = np.tile(home().positions, (5, 1))
    chunk[:, 0] += STEP * np.cumsum([1, 2, 3, 2, 1])  # speeds of 1, 2, 3, 2, 1 steps per row, then rest
    decision = filter_chunk(chunk, state=home(), limits=limits(), row_period_s=ROW, tcp=tcp)
    assert decision.untouched, decision.summary()


def test_a_first_row_from_rest_faster_than_the_limit_allows_holds():
    chunk = ramp_up(2, factor=1.5)
    decision = filter_chunk(chunk, state=home(), limits=limits(), row_period_s=ROW, tcp=tcp)
    assert decision.held
    assert accelerations(decision) == [(0, 'left_waist', pytest.approx(1.5 * ACCELERATION))]
    assert decision.interventions[0].limit == ACCELERATION


def test_a_speed_step_mid_chunk_refuses_the_chunk_from_that_row():
    chunk = np.tile(home().positions, (5, 1))
    chunk[:, 8] += STEP * np.cumsum([1, 1, 1, 4, 4])  # row 3 changes the right shoulder's speed by 3 steps
    decision = filter_chunk(chunk, state=home(), limits=limits(), row_period_s=ROW, tcp=tcp)
    assert decision.rows_sent == 3
    assert accelerations(decision) == [(3, 'right_shoulder', pytest.approx(3 * ACCELERATION))]
    assert ('rows_refused', 3) in [(i.kind, i.row) for i in decision.interventions]


def test_a_whole_chunk_whose_last_row_is_too_fast_to_stop_on_refuses_that_row():
    chunk = ramp_up(3)  # last row at 3 steps per row: stopping on it changes the speed by 3 steps
    decision = filter_chunk(chunk, state=home(), limits=limits(), row_period_s=ROW, tcp=tcp)
    assert decision.rows_sent == 2
    assert accelerations(decision) == [(2, 'left_waist', pytest.approx(3 * ACCELERATION))]


def test_rows_cut_short_by_another_rule_are_not_judged_at_their_end():
    chunk = ramp_up(5)  # speeds of 1, 2, 3, 4 steps a row: the last too fast to stop on
    chunk[4, 0] += 10.0  # beyond the waist's limit: refused from row 4 on, the caller's controlled stop follows
    decision = filter_chunk(chunk, state=home(), limits=limits(), row_period_s=ROW, tcp=tcp)
    assert decision.rows_sent == 4 and accelerations(decision) == []


def test_a_speed_change_exactly_at_the_limit_passes():
    chunk = ramp_up(1)  # one step from rest, then at rest: exactly the limit both times
    decision = filter_chunk(chunk, state=home(), limits=limits(), row_period_s=ROW, tcp=tcp)
    assert decision.untouched, decision.summary()
    chunk[0, 0] += 1e-6 * STEP
    assert accelerations(filter_chunk(chunk, state=home(), limits=limits(), row_period_s=ROW, tcp=tcp))


def test_grippers_have_no_acceleration_limit_in_the_profiles():
    profile_limits = limits_from_profile(load_profile('aloha_ros2_control'))
    assert np.isinf(profile_limits.acceleration[[6, 13]]).all()
    assert (profile_limits.acceleration[[0, 5, 7, 12]] == 50.0).all()
    chunk = np.tile(load_profile('aloha_ros2_control').home_state(), (8, 1))
    chunk[:, 6] = np.minimum(1.0, 0.0 + 0.3 * np.arange(1, 9))  # closed to open at the gripper's full speed
    state = MeasuredState(positions=np.r_[chunk[0, :6], 0.0, chunk[0, 7:]], age_s=0.0)
    profile_tcp_function = profile_tcp(load_profile('aloha_ros2_control'))
    decision = filter_chunk(chunk, state=state, limits=profile_limits, row_period_s=ROW, tcp=profile_tcp_function)
    assert accelerations(decision) == []


def test_the_first_row_is_judged_from_the_start_not_the_measured_state():
    moving = 3 * STEP / ROW  # rad/s: the arm is commanded to move at three steps per row
    commanded = home().positions.copy()
    commanded[0] = 0.2
    lagging = MeasuredState(positions=home().positions, age_s=0.1)  # 0.2 rad behind: a late measurement
    chunk = np.tile(commanded, (6, 1))
    chunk[:, 0] += STEP * np.cumsum([3, 3, 3, 2, 1, 0])  # going on at its speed, then slowing down to rest
    start = ChunkStart(position=commanded, velocity=np.r_[moving, np.zeros(13)])
    going_on = filter_chunk(chunk, state=lagging, limits=limits(), row_period_s=ROW, tcp=tcp, start=start)
    assert going_on.untouched, going_on.summary()
    from_the_measurement = filter_chunk(chunk, state=lagging, limits=limits(), row_period_s=ROW, tcp=tcp)
    assert from_the_measurement.held  # 0.2 rad + a row in one row: too fast, from rest
    for broken, message in (
        (dataclasses.replace(start, position=np.zeros(13)), 'chunk start: position needs 14 finite numbers'),
        (dataclasses.replace(start, velocity=np.full(14, np.nan)), 'chunk start: velocity needs 14 finite numbers'),
    ):
        with pytest.raises(SafetyError, match=message):
            filter_chunk(chunk, state=lagging, limits=limits(), row_period_s=ROW, tcp=tcp, start=broken)


def sent_ramp(speed: float, *, seconds: float, sent_at: float = 100.0) -> SentCommand:
    """A trajectory moving the left waist from home at ``speed`` rad/s for ``seconds``, sent at ``sent_at``."""
    times = ROW * np.arange(1, round(seconds / ROW) + 1)
    positions = np.tile(home().positions, (len(times), 1))
    positions[:, 0] += speed * times
    return SentCommand(start=home().positions, command=Command(positions, times, hold=False), sent_at=sent_at)


def test_a_chunk_starts_where_a_following_arm_is_commanded_to_be_at_its_commanded_speed():
    sent = sent_ramp(1.0, seconds=1.2)
    measured = home().positions.copy()
    measured[0] = 0.5  # where it was commanded 0.1 s before now: the measurement is 0.1 s old
    start = chunk_start(sent, MeasuredState(measured, age_s=0.1), now=100.6)
    assert start.position[0] == pytest.approx(0.6) and start.velocity[0] == pytest.approx(1.0)
    assert np.count_nonzero(start.velocity) == 1


def test_an_arm_off_its_command_or_with_nothing_sent_starts_where_it_is_measured_at_rest():
    sent = sent_ramp(1.0, seconds=1.2)
    measured = home().positions.copy()
    measured[0] = 0.5 + 1.01 * FOLLOWING_WITHIN  # blocked or pushed: not where it was commanded
    for start in (
        chunk_start(sent, MeasuredState(measured, age_s=0.1), now=100.6),
        chunk_start(None, MeasuredState(measured, age_s=0.1), now=100.6),
        chunk_start(sent, MeasuredState(measured, age_s=float('inf')), now=100.6),
    ):
        np.testing.assert_array_equal(start.position, measured)
        assert start.velocity.shape == (14,) and not start.velocity.any()


def test_a_measurement_of_unknown_age_is_not_taken_for_a_following_arm():
    sent = sent_ramp(1.0, seconds=1.2)
    start = chunk_start(sent, MeasuredState(home().positions, age_s=float('inf')), now=100.6)
    np.testing.assert_array_equal(start.position, home().positions)  # where it is measured, though the ramp began there
    assert not start.velocity.any()


def test_an_arm_exactly_following_within_the_tolerance_follows():
    sent = sent_ramp(1.0, seconds=0.6)  # ended: commanded at rest on its last row
    measured = np.asarray(sent.command.positions[-1]).copy()
    measured[3] = FOLLOWING_WITHIN  # commanded 0.0 there: off by exactly the tolerance
    start = chunk_start(sent, MeasuredState(measured, age_s=0.05), now=101.0)
    np.testing.assert_array_equal(start.position, sent.command.positions[-1])


def test_after_its_last_row_the_commanded_arm_is_at_rest_on_it():
    sent = sent_ramp(1.0, seconds=0.6)
    measured = home().positions.copy()
    measured[0] = 0.6
    start = chunk_start(sent, MeasuredState(measured, age_s=0.05), now=101.0)
    assert start.position[0] == pytest.approx(0.6) and not start.velocity.any()


def test_a_chunk_right_after_the_last_one_ended_starts_from_its_last_speed():
    # The fuzz over a Piper: a chunk ending at -1.4 rad/s, the next starting at once at +2.6 rad/s; each passed the
    # rule from rest, together they reversed a joint by 4 rad/s in one 20 ms tick (60 rad/s^2 against 50).
    sent = sent_ramp(1.0, seconds=0.6)  # ends at 100.6 moving at 1 rad/s
    measured = home().positions.copy()
    measured[0] = 0.6
    state = MeasuredState(measured, age_s=0.01)
    just_after = chunk_start(sent, state, now=100.62, row_period_s=ROW)
    assert just_after.position[0] == pytest.approx(0.6) and just_after.velocity[0] == pytest.approx(1.0)
    assert not chunk_start(sent, state, now=100.62 + ROW, row_period_s=ROW).velocity.any()
    back = np.tile(measured, (3, 1))
    back[:, 0] -= STEP * np.array([1.0, 2.0, 3.0])  # from rest: within the limit
    assert filter_chunk(back, state=state, limits=limits(), row_period_s=ROW, tcp=tcp).untouched
    reversed_at_once = filter_chunk(back, state=state, limits=limits(), row_period_s=ROW, tcp=tcp, start=just_after)
    assert reversed_at_once.held and accelerations(reversed_at_once)[0][:2] == (0, 'left_waist')


def test_the_last_speed_holds_from_the_trajectorys_end_for_exactly_one_row_period():
    positions = np.tile(home().positions, (2, 1))
    positions[:, 0] += [0.25, 0.5]  # 1 rad/s, ending at 0.5 s: every time here is exact in binary
    sent = SentCommand(start=home().positions, command=Command(positions, np.array([0.25, 0.5]), hold=False), sent_at=0)
    measured = positions[-1].copy()
    state = MeasuredState(measured, age_s=0.0)
    assert chunk_start(sent, state, now=0.5, row_period_s=0.25).velocity[0] == 1.0  # at the end itself
    assert not chunk_start(sent, state, now=0.75, row_period_s=0.25).velocity.any()  # one row period on: at rest


def test_a_stop_decelerates_no_harder_than_the_acceleration_limit():
    gentle = limits(acceleration=arm_joint_values(2.0))
    decelerations = stop_decelerations(gentle, stop_seconds=0.5)
    assert (decelerations[[0, 7]] == 2.0).all()  # pi / 0.5 s would be 6.3
    assert decelerations[6] == pytest.approx(gentle.velocity[6] / 0.5)  # no limit on the gripper: the stop's own


def test_a_profile_states_acceleration_limits_or_none_and_bad_ones_are_refused_in_one_line(tmp_path):
    import yaml

    data = yaml.safe_load(profile_path('aloha_ros2_control').read_text())
    del data['arms']['left']['acceleration']
    assert np.isinf(parse_profile(data, path=tmp_path / 'p.yaml').arms['left'].acceleration).all()
    data['arms']['left']['acceleration'] = [50.0, 50.0, -1.0, 50.0, 50.0, 50.0]
    with pytest.raises(ProfileError, match=r'arms\.left\.acceleration\[2\].*must be positive'):
        parse_profile(data, path=tmp_path / 'p.yaml')
    with pytest.raises(SafetyError, match='acceleration needs 14 positive numbers'):
        aloha_limits(acceleration=np.zeros(14))
    with pytest.raises(SafetyError, match='acceleration needs 14 positive numbers'):
        aloha_limits(acceleration=np.ones(3))
    for_robot = SafetyLimits.for_robot('aloha', workspace=None, acceleration=10.0)
    np.testing.assert_array_equal(for_robot.acceleration, arm_joint_values(10.0))
    assert np.isinf(SafetyLimits.for_robot('aloha', workspace=None).acceleration).all()
    gentle = aloha_limits(acceleration=[0.5] * 14)
    assert isinstance(gentle.acceleration, np.ndarray) and (gentle.acceleration == 0.5).all()
