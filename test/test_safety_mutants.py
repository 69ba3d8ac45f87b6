"""Edges of the safety rules that the mutation run of ``safety/`` (``scripts/mutation.sh``, docs/mutation.md) found
untested: where each tolerance ends, the rows after a stretched one, the numbers and words every intervention,
refusal and JointTrajectoryController violation reports, the documented defaults, and inputs that are not numbers
at all (a reading or a bound of ``None`` is refused as unusable, never crashes the filter)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from safety_support import BOX, ROW, aloha_limits, home

from robofollow_ros.errors import SafetyError
from robofollow_ros.robot.description import joint_layout
from robofollow_ros.robot.profiles import load_profile
from robofollow_ros.safety.command_filter import (
    SPEED_TOLERANCE,
    Command,
    MeasuredState,
    filter_chunk,
    hold_command,
)
from robofollow_ros.safety.controlled_stop import (
    REST_SPEED,
    SentCommand,
    commanded_at,
    controlled_stop,
    stop_decelerations,
)
from robofollow_ros.safety.deadman import DeadMan
from robofollow_ros.safety.jtc import (
    arm_trajectories,
    check_command_qos,
    check_trajectory,
    trajectory_view,
)
from robofollow_ros.safety.limits import POSITION_TOLERANCE, Intervention, SafetyLimits, WorkspaceBox
from robofollow_ros.safety.profile_limits import limits_from_profile
from robofollow_ros.state_layout import GENERIC_LAYOUT
from robofollow_ros.units import NS_PER_S

NAN = float('nan')
CENTRE = (np.asarray(BOX.lower) + np.asarray(BOX.upper)) / 2


def steps(rows: int, *, column: int = 0, step: float = 0.01) -> np.ndarray:
    """``rows`` rows from home moving ``column`` by ``step`` per row (slow, inside the limits and the box)."""
    chunk = np.tile(home().positions, (rows, 1))
    chunk[:, column] += step * np.arange(1, rows + 1)
    return chunk


def reported(decision, kind: str) -> list[Intervention]:
    return [item for item in decision.interventions if item.kind == kind]


# Interventions and decisions: what logs and episode records say.


def test_an_intervention_describes_itself_in_one_line_with_its_row_and_joint_when_it_has_them():
    assert Intervention('too_fast', 0, 'left_waist', 6.2, 3.14159).describe() == (
        'too_fast row 0 left_waist: 6.2 (limit 3.14159)'
    )
    assert Intervention('rows_refused', 3, None, 2.0, NAN).describe() == 'rows_refused row 3: 2 (limit nan)'
    assert Intervention('hold_clipped', None, 'left_left_finger', 1.03, 1.0).describe() == (
        'hold_clipped left_left_finger: 1.03 (limit 1)'
    )
    assert Intervention('stale_state', None, None, 0.5, 0.2).describe() == 'stale_state: 0.5 (limit 0.2)'


def test_an_intervention_record_keeps_finite_numbers_as_floats_and_others_as_none():
    record = Intervention('too_fast', 0, 'left_waist', np.float64(6.2), np.float64(3.14159)).to_dict()
    assert record == {'kind': 'too_fast', 'row': 0, 'joint': 'left_waist', 'value': 6.2, 'limit': 3.14159}
    assert type(record['value']) is float and type(record['limit']) is float
    record = Intervention('non_finite', 1, 'left_waist', float('inf'), NAN).to_dict()
    assert record['value'] is None and record['limit'] is None


@pytest.mark.parametrize('count', [1, 4, 5, 6])
def test_a_summary_shows_at_most_four_interventions_and_counts_the_rest(count: int):
    limits = aloha_limits(limit_mode='clamp', workspace=None)
    start = limits.upper - 0.001
    chunk = start[None, :].copy()
    chunk[0, :count] = limits.upper[:count] + 0.01
    decision = filter_chunk(chunk, state=MeasuredState(start, 0.0), limits=limits, row_period_s=ROW)
    assert len(decision.interventions) == count
    shown = '; '.join(item.describe() for item in decision.interventions[:4])
    more = f' (+{count - 4} more)' if count > 4 else ''
    assert decision.summary() == f'1/1 rows sent: {shown}{more}'


def test_a_summary_and_a_record_say_whether_the_chunk_is_sent_held_or_nothing_is():
    limits = aloha_limits()
    assert hold_command(home(), limits, row_period_s=ROW).summary() == 'hold'
    stale = filter_chunk(steps(5), state=home(age_s=0.5), limits=limits, row_period_s=ROW, tcp=lambda s: (CENTRE,) * 2)
    assert stale.summary() == 'hold: stale_state: 0.5 (limit 0.2)'
    assert stale.to_dict()['outcome'] == 'hold'
    sent = filter_chunk(steps(2), state=home(), limits=limits, row_period_s=ROW, tcp=lambda s: (CENTRE,) * 2)
    assert sent.to_dict() == {'outcome': 'send', 'rows_in': 2, 'rows_sent': 2, 'interventions': []}
    nothing = hold_command(MeasuredState(np.full(14, np.nan), 0.0), limits, row_period_s=ROW)
    assert nothing.to_dict() == {
        'outcome': 'none',
        'rows_in': 0,
        'rows_sent': 0,
        'interventions': [{'kind': 'invalid_state', 'row': None, 'joint': None, 'value': None, 'limit': None}],
    }


# Limits and the workspace box.


@pytest.mark.parametrize(
    ('lower', 'upper', 'message'),
    [
        ((0.0, 0.0), (1.0, 1.0, 1.0), 'three numbers each'),
        ((0.0, 0.0, 0.0), (1.0, 1.0), 'three numbers each'),
        ((0.0, 0.0, None), (1.0, 1.0, 1.0), 'finite lower < upper'),
        ((0.0, 0.0, 0.0), (1.0, None, 1.0), 'finite lower < upper'),
        ((0.0, 0.0, 1.0), (1.0, 1.0, 1.0), 'finite lower < upper'),
    ],
)
def test_a_workspace_box_needs_three_finite_numbers_a_side_lower_strictly_below_upper(lower, upper, message):
    with pytest.raises(SafetyError, match=message):
        WorkspaceBox(lower=lower, upper=upper)


def test_the_workspace_box_holds_its_boundary_and_nothing_beyond_it():
    box = WorkspaceBox(lower=(-1.0, -1.0, 0.0), upper=(1.0, 1.0, 2.0))
    assert box.contains([-1.0, -1.0, 0.0]) and box.contains([1.0, 1.0, 2.0]) and box.contains((0.0, 0.0, 1.0))
    for outside in ([-1.01, 0.0, 1.0], [0.0, 0.0, 2.01], [2.0, 0.0, 1.0], [0.0, 0.0, -5.0]):
        assert not box.contains(outside), outside
    assert not box.contains([NAN, 0.0, 1.0]) and not box.contains([None, 0.0, 1.0])


@pytest.mark.parametrize(
    ('changes', 'message'),
    [
        ({'lower': [None] * 14}, 'safety limits: lower needs 14 finite numbers, got (14,)'),
        ({'upper': np.zeros(13)}, 'safety limits: upper needs 14 finite numbers, got (13,)'),
        ({'velocity': np.full(14, np.nan)}, 'safety limits: velocity needs 14 finite numbers, got (14,)'),
        ({'velocity': -np.ones(14)}, 'safety limits: every velocity limit must be positive'),
        ({'limit_mode': 'ignore'}, "safety limits: limit_mode must be one of ('clamp', 'refuse'), got 'ignore'"),
        ({'velocity_mode': 'slow'}, "safety limits: velocity_mode must be one of ('refuse', 'stretch'), got 'slow'"),
        ({'max_state_age_s': 0.0}, 'safety limits: max_state_age_s must be positive, got 0.0'),
        ({'max_state_age_s': -1.0}, 'safety limits: max_state_age_s must be positive, got -1.0'),
        ({'max_state_age_s': NAN}, 'safety limits: max_state_age_s must be positive, got nan'),
        ({'max_stretch': 0.5}, 'safety limits: max_stretch must be at least 1, got 0.5'),
        ({'max_stretch': float('inf')}, 'safety limits: max_stretch must be at least 1, got inf'),
        ({'names': GENERIC_LAYOUT.names[:13]}, 'safety limits: names needs 14 joint names, got 13'),
    ],
)
def test_unusable_limits_are_refused_saying_which_and_why(changes: dict, message: str):
    with pytest.raises(SafetyError) as raised:
        aloha_limits(**changes)
    assert str(raised.value) == message


def test_limits_with_an_empty_range_name_its_joint_and_slow_joints_are_fine():
    limits = aloha_limits()
    lower = limits.lower.copy()
    lower[8] = limits.upper[8]
    with pytest.raises(SafetyError) as raised:
        aloha_limits(lower=lower)
    assert str(raised.value) == 'safety limits: lower must be below upper, not for right_shoulder'
    assert aloha_limits(velocity=np.full(14, 0.5)).velocity.tolist() == [0.5] * 14


def test_limits_from_the_urdf_keep_every_setting_given_and_default_to_the_documented_ones():
    default = SafetyLimits.for_robot('aloha', workspace=None)
    assert (default.max_state_age_s, default.limit_mode, default.velocity_mode, default.max_stretch) == (
        0.2,
        'refuse',
        'refuse',
        4.0,
    )
    chosen = SafetyLimits.for_robot(
        'aloha', workspace=BOX, max_state_age_s=0.05, limit_mode='clamp', velocity_mode='stretch', max_stretch=2.5
    )
    assert (chosen.max_state_age_s, chosen.limit_mode, chosen.velocity_mode, chosen.max_stretch) == (
        0.05,
        'clamp',
        'stretch',
        2.5,
    )
    assert chosen.workspace == BOX


def test_the_velocity_scale_slows_every_joint_and_the_gripper_unless_the_grippers_speed_is_given():
    full = SafetyLimits.for_robot('aloha', workspace=None)
    half = SafetyLimits.for_robot('aloha', workspace=None, velocity_scale=0.5)
    np.testing.assert_allclose(half.velocity, full.velocity * 0.5)
    given = SafetyLimits.for_robot('aloha', workspace=None, velocity_scale=0.5, gripper_velocity=20.0)
    assert given.velocity[6] == given.velocity[13] == 20.0
    np.testing.assert_allclose(given.velocity[0:6], half.velocity[0:6])


@pytest.mark.parametrize('scale', [0.0, -1.0, NAN, float('inf')])
def test_an_unusable_velocity_scale_is_refused(scale: float):
    with pytest.raises(SafetyError) as raised:
        SafetyLimits.for_robot('aloha', workspace=None, velocity_scale=scale)
    assert str(raised.value) == f'safety limits: velocity_scale must be positive, got {scale}'


def test_profile_limits_keep_every_setting_given_and_default_to_the_documented_ones():
    profile = load_profile('aloha_ros2_control')
    default = limits_from_profile(profile)
    assert (default.max_state_age_s, default.velocity_mode, default.max_stretch) == (0.2, 'refuse', 4.0)
    chosen = limits_from_profile(
        profile, velocity_mode='stretch', max_state_age_s=0.05, max_stretch=2.0, gripper_velocity=20.0
    )
    assert (chosen.max_state_age_s, chosen.velocity_mode, chosen.max_stretch) == (0.05, 'stretch', 2.0)
    assert chosen.velocity[6] == chosen.velocity[13] == 20.0


# The filter: state, chunk shape, joint limits, velocity, workspace.


def test_a_state_of_missing_readings_sends_nothing():
    state = MeasuredState(positions=[None] * 14, age_s=0.0)
    decision = filter_chunk(steps(3), state=state, limits=aloha_limits(workspace=None), row_period_s=ROW)
    assert decision.command is None and [item.kind for item in decision.interventions] == ['invalid_state']


def test_a_hold_keeps_the_chunks_row_count_and_answers_no_chunk_by_default():
    limits = aloha_limits()
    assert hold_command(home(), limits, row_period_s=ROW).rows_in == 0
    nothing = hold_command(MeasuredState(np.full(14, np.nan), 0.0), limits, row_period_s=ROW, rows_in=4)
    assert nothing.command is None and nothing.rows_in == 4


def test_a_hold_below_a_lower_limit_reports_the_lower_limit():
    limits = aloha_limits()
    positions = home().positions.copy()
    positions[9] = limits.lower[9] - 0.01
    decision = hold_command(MeasuredState(positions, 0.0), limits, row_period_s=ROW)
    assert decision.command.positions[0, 9] == limits.lower[9]
    assert [(item.kind, item.joint, item.value, item.limit) for item in decision.interventions] == [
        ('hold_clipped', 'right_elbow', positions[9], limits.lower[9])
    ]


def test_the_missing_tcp_function_is_named_in_the_refusal():
    with pytest.raises(SafetyError) as raised:
        filter_chunk(steps(1), state=home(), limits=aloha_limits(), row_period_s=ROW)
    assert str(raised.value) == 'the safety limits have a workspace box: pass the tcp function (forward kinematics)'


def test_a_state_exactly_as_old_as_allowed_is_not_stale_and_an_older_one_reports_its_age():
    limits = aloha_limits(max_state_age_s=0.25, workspace=None)
    fresh = filter_chunk(steps(5), state=home(age_s=0.25), limits=limits, row_period_s=ROW)
    assert fresh.untouched and fresh.rows_sent == 5
    stale = filter_chunk(steps(5), state=home(age_s=0.5), limits=limits, row_period_s=ROW)
    assert stale.held and stale.rows_in == 5
    assert [item.to_dict() for item in stale.interventions] == [
        {'kind': 'stale_state', 'row': None, 'joint': None, 'value': 0.5, 'limit': 0.25}
    ]


def test_without_a_workspace_box_the_tcp_is_not_checked():
    far = np.array([9.0, 9.0, 9.0])
    decision = filter_chunk(
        steps(3), state=home(), limits=aloha_limits(workspace=None), row_period_s=ROW, tcp=lambda s: (far, far)
    )
    assert decision.untouched and decision.rows_sent == 3


@pytest.mark.parametrize(
    ('chunk', 'size', 'rows_in'),
    [
        (np.zeros((3, 13)), 39.0, 3),
        (np.zeros(14), 14.0, 0),
        (np.zeros((0, 14)), 0.0, 0),
        (np.zeros((2, 3, 14)), 84.0, 0),
        ('hello', NAN, 0),
        ([[0.0] * 14, [0.0] * 13], NAN, 0),
    ],
    ids=['13-columns', 'one-row-1d', 'no-rows', '3d', 'text', 'ragged'],
)
def test_a_malformed_chunk_reports_its_size_against_fourteen_and_its_row_count(chunk, size: float, rows_in: int):
    decision = filter_chunk(chunk, state=home(), limits=aloha_limits(workspace=None), row_period_s=ROW)
    assert decision.held and decision.rows_in == rows_in
    [malformed] = decision.interventions
    assert malformed.kind == 'malformed' and malformed.limit == 14.0
    assert malformed.to_dict()['value'] == (None if np.isnan(size) else size)


def test_targets_on_a_limit_or_within_its_tolerance_are_sent_in_refuse_mode_and_report_their_bound():
    limits = aloha_limits(limit_mode='refuse', workspace=None)
    start = home().positions.copy()
    start[3], start[10] = limits.lower[3] + 0.001, limits.upper[10] - 0.001
    chunk = np.tile(start, (2, 1))
    chunk[0, 3], chunk[0, 10] = limits.lower[3], limits.upper[10]
    chunk[1, 3], chunk[1, 10] = limits.lower[3] - POSITION_TOLERANCE, limits.upper[10] + POSITION_TOLERANCE
    decision = filter_chunk(chunk, state=MeasuredState(start, 0.0), limits=limits, row_period_s=ROW)
    assert decision.rows_sent == 2
    assert [(item.kind, item.row, item.joint, item.limit) for item in decision.interventions] == [
        ('position_clamped', 1, 'left_forearm_roll', limits.lower[3]),
        ('position_clamped', 1, 'right_forearm_roll', limits.upper[10]),
    ]


def test_a_chunk_refused_part_way_keeps_the_times_of_the_rows_sent_and_reports_the_rest():
    limits = aloha_limits(workspace=None)
    chunk = steps(6, column=9, step=-0.05)
    chunk[4:, 9] = limits.lower[9] - 0.1
    decision = filter_chunk(chunk, state=home(), limits=limits, row_period_s=ROW)
    assert decision.rows_sent == 4
    np.testing.assert_allclose(decision.command.times, ROW * np.arange(1, 5))
    assert [item.to_dict() for item in decision.interventions] == [
        {'kind': 'position_refused', 'row': 4, 'joint': 'right_elbow', 'value': chunk[4, 9], 'limit': limits.lower[9]},
        {'kind': 'rows_refused', 'row': 4, 'joint': None, 'value': 2.0, 'limit': None},
    ]
    chunk[0, 9] = limits.lower[9] - 0.1
    everything = filter_chunk(chunk, state=home(), limits=limits, row_period_s=ROW)
    assert everything.held and everything.rows_in == 6


def test_the_speed_slack_is_inclusive_and_only_joints_beyond_it_are_reported_too_fast():
    limits = aloha_limits(workspace=None)
    edge = ROW * (1.0 + SPEED_TOLERANCE) * limits.velocity[0]  # the waist at its limit plus the slack, from 0
    chunk = np.tile(home().positions, (2, 1))
    chunk[:, 0] = edge
    assert filter_chunk(chunk, state=home(), limits=limits, row_period_s=ROW).untouched
    chunk[1, 3] = 2.0 * limits.velocity[3] * ROW
    chunk[1, 0] = 2.0 * edge
    decision = filter_chunk(chunk, state=home(), limits=limits, row_period_s=ROW)
    assert decision.rows_sent == 1
    assert [(item.row, item.joint) for item in reported(decision, 'too_fast')] == [(1, 'left_forearm_roll')]


def test_stretch_mode_stretches_up_to_exactly_max_stretch_and_keeps_checking_the_rows_after():
    limits = aloha_limits(velocity_mode='stretch', max_stretch=4.0, workspace=None)
    velocity = limits.velocity
    chunk = np.tile(home().positions, (3, 1))
    chunk[:, 9] = 2.0 * velocity[9] * ROW  # row 0: the right elbow needs 2 row periods
    chunk[1:, 8] = 4.0 * velocity[8] * ROW  # row 1: the right shoulder needs exactly max_stretch
    chunk[2, 3] = 5.0 * velocity[3] * ROW  # row 2: the left forearm needs 5: refused
    decision = filter_chunk(chunk, state=home(), limits=limits, row_period_s=ROW)
    assert decision.rows_sent == 2
    np.testing.assert_allclose(decision.command.times, [2.0 * ROW, 6.0 * ROW])
    assert [(item.row, item.joint, item.value) for item in reported(decision, 'row_stretched')] == [
        (0, 'right_elbow', pytest.approx(2.0 * ROW)),
        (1, 'right_shoulder', pytest.approx(4.0 * ROW)),
    ]
    [fast] = reported(decision, 'too_fast')
    assert (fast.row, fast.joint, fast.limit) == (2, 'left_forearm_roll', velocity[3])
    assert fast.value == pytest.approx(1.25 * velocity[3])  # its speed when given max_stretch row periods


def test_a_tcp_on_the_box_boundary_is_inside():
    corners = (np.array(BOX.lower), np.array(BOX.upper))
    decision = filter_chunk(steps(3), state=home(), limits=aloha_limits(), row_period_s=ROW, tcp=lambda s: corners)
    assert decision.untouched


@pytest.mark.parametrize(
    'points',
    [(CENTRE, CENTRE, CENTRE), (np.append(CENTRE, 0.0), CENTRE), (CENTRE,), None],
    ids=['three-points', 'four-coordinates', 'one-point', 'none'],
)
def test_a_tcp_function_that_gives_no_two_points_of_three_numbers_refuses_from_that_row(points):
    def tcp(state: np.ndarray):
        return (CENTRE, CENTRE) if state[0] < 0.015 else points

    decision = filter_chunk(steps(3), state=home(), limits=aloha_limits(), row_period_s=ROW, tcp=tcp)
    assert decision.rows_sent == 1
    assert [item.to_dict() for item in decision.interventions] == [
        {'kind': 'outside_workspace', 'row': 1, 'joint': None, 'value': None, 'limit': None},
        {'kind': 'rows_refused', 'row': 1, 'joint': None, 'value': 2.0, 'limit': None},
    ]


def test_a_tcp_with_a_missing_coordinate_is_outside_the_box():
    left = np.array([None, CENTRE[1], CENTRE[2]])
    decision = filter_chunk(
        steps(2), state=home(), limits=aloha_limits(), row_period_s=ROW, tcp=lambda s: (left, CENTRE)
    )
    assert decision.held
    [outside] = reported(decision, 'outside_workspace')
    assert (outside.row, outside.joint, outside.to_dict()['value']) == (0, 'left_tcp_x', None)


# The controlled stop.


def test_the_commanded_state_along_a_trajectory_of_several_points():
    start = np.asarray(home().positions, dtype=np.float64).copy()
    start[0] = 0.3
    positions = np.tile(start, (3, 1))
    positions[:, 0] = [0.36, 0.48, 0.48]
    sent = SentCommand(start=start, command=Command(positions, np.array([0.06, 0.12, 0.18]), hold=False), sent_at=0.0)

    def at(now: float) -> tuple[float, float]:
        position, velocity = commanded_at(sent, now)
        np.testing.assert_array_equal(position[1:], start[1:])
        assert not velocity[1:].any()
        return float(position[0]), float(velocity[0])

    assert at(0.0) == (pytest.approx(0.3), pytest.approx(1.0))  # just sent: its start, heading for the first point
    assert at(0.06) == (pytest.approx(0.36), pytest.approx(2.0))  # on a point: the next segment's velocity
    assert at(0.09) == (pytest.approx(0.42), pytest.approx(2.0))
    assert at(0.15) == (pytest.approx(0.48), pytest.approx(0.0))
    assert at(0.18) == (0.48, 0.0)  # its last point: at rest
    assert at(5.0) == (0.48, 0.0)


def test_each_joint_decelerates_at_its_velocity_limit_over_the_stopping_time():
    limits = aloha_limits()
    np.testing.assert_allclose(stop_decelerations(limits), limits.velocity / 0.5)
    np.testing.assert_allclose(stop_decelerations(limits, stop_seconds=0.25), limits.velocity * 4.0)
    np.testing.assert_allclose(stop_decelerations(limits, stop_seconds=2.0), limits.velocity / 2.0)
    for seconds in (0.0, -1.0, NAN, float('inf')):
        with pytest.raises(SafetyError) as raised:
            stop_decelerations(limits, stop_seconds=seconds)
        assert str(raised.value) == f'stopping time must be a positive number of seconds, got {seconds}'


def test_a_stop_is_sampled_every_row_period_until_the_slowest_joint_rests():
    limits = aloha_limits()
    start = np.asarray(home().positions, dtype=np.float64)
    velocity = np.zeros(14)
    velocity[2] = 0.15
    deceleration = np.full(14, 0.5)  # 0.15 rad/s to rest at 0.5 rad/s^2: 0.3 s, five row periods
    command = controlled_stop(start, velocity, limits, deceleration=deceleration, row_period_s=ROW)
    np.testing.assert_allclose(command.times, ROW * np.arange(1, 6))
    t = command.times
    np.testing.assert_allclose(command.positions[:, 2], start[2] + 0.15 * (t - t**2 / 0.6))
    assert command.positions[-1, 2] == pytest.approx(start[2] + 0.15 * 0.3 / 2)


def test_a_joint_slower_than_the_rest_speed_counts_as_at_rest():
    limits = aloha_limits()
    start = np.asarray(home().positions, dtype=np.float64)
    deceleration = stop_decelerations(limits)
    velocity = np.zeros(14)
    velocity[0] = REST_SPEED / 10
    resting = controlled_stop(start, velocity, limits, deceleration=deceleration, row_period_s=ROW)
    assert resting.times.tolist() == [ROW]
    np.testing.assert_array_equal(resting.positions, start[None, :])
    velocity[0] = REST_SPEED
    moving = controlled_stop(start, velocity, limits, deceleration=deceleration, row_period_s=ROW)
    assert moving.positions[-1, 0] > start[0]


def test_an_arm_at_rest_outside_its_limits_is_brought_back_no_faster_than_its_velocity_limits():
    limits = aloha_limits()
    start = np.asarray(home().positions, dtype=np.float64).copy()
    start[4], start[10] = limits.upper[4] + 0.5, limits.lower[10] - 0.2
    command = controlled_stop(start, np.zeros(14), limits, deceleration=stop_decelerations(limits), row_period_s=ROW)
    assert (command.positions[0, 4], command.positions[0, 10]) == (limits.upper[4], limits.lower[10])
    assert command.times.tolist() == [pytest.approx(max(0.5 / limits.velocity[4], 0.2 / limits.velocity[10]))]


@pytest.mark.parametrize('label', ['position', 'velocity', 'deceleration'])
@pytest.mark.parametrize('bad', [[None] * 14, np.zeros(13)], ids=['missing', 'thirteen'])
def test_a_stop_from_values_that_are_not_fourteen_numbers_is_refused_naming_them(label: str, bad):
    limits = aloha_limits()
    values = {'position': home().positions, 'velocity': np.zeros(14), 'deceleration': stop_decelerations(limits)}
    values[label] = bad
    with pytest.raises(SafetyError) as raised:
        controlled_stop(
            values['position'], values['velocity'], limits, deceleration=values['deceleration'], row_period_s=ROW
        )
    assert str(raised.value) == f'controlled stop: {label} needs 14 finite numbers'


def test_a_stop_needs_every_deceleration_positive_however_small():
    limits = aloha_limits()
    deceleration = np.full(14, 0.5)
    assert controlled_stop(home().positions, np.zeros(14), limits, deceleration=deceleration, row_period_s=ROW).hold
    deceleration[13] = 0.0
    with pytest.raises(SafetyError) as raised:
        controlled_stop(home().positions, np.zeros(14), limits, deceleration=deceleration, row_period_s=ROW)
    assert str(raised.value) == 'controlled stop: every deceleration must be positive'


# The dead-man.


def test_the_dead_man_counts_nothing_while_no_query_is_out_and_an_answer_on_the_deadline_is_in_time():
    clock = SimpleNamespace(now=50.0)
    deadman = DeadMan(deadline_s=2.0, clock=lambda: clock.now)
    assert deadman.waited() == 0.0 and not deadman.overdue()
    deadman.query_sent()
    clock.now = 52.0
    assert deadman.waited() == 2.0 and not deadman.overdue()
    assert deadman.poll(home(), aloha_limits(), row_period_s=ROW) is None
    assert deadman.answer_arrived() is True


# The JointTrajectoryController's interface.

JOINTS = GENERIC_LAYOUT.command_joints('left')


def stamp(nanoseconds: int, *, nanosec: int | None = None) -> SimpleNamespace:
    sec, rest = divmod(nanoseconds, NS_PER_S)
    return SimpleNamespace(sec=sec, nanosec=rest if nanosec is None else nanosec)


def point(seconds: float, positions=(0.0,) * 7, *, velocities=(), accelerations=(), nanosec=None):
    return SimpleNamespace(
        positions=list(positions),
        velocities=list(velocities),
        accelerations=list(accelerations),
        time_from_start=stamp(round(seconds * NS_PER_S), nanosec=nanosec),
    )


def message(points, *, stamp_ns: int = 0, nanosec: int | None = None, names=JOINTS) -> SimpleNamespace:
    """A JointTrajectory as plain attributes (what the checks read)."""
    return SimpleNamespace(
        header=SimpleNamespace(stamp=stamp(stamp_ns, nanosec=nanosec)), joint_names=list(names), points=list(points)
    )


def violations(problems) -> list[tuple[str, int | None, str]]:
    return [(problem.kind, problem.point, problem.detail) for problem in problems]


def test_every_violation_names_its_point_and_says_why():
    names = (JOINTS[0], JOINTS[0], 'elbow_of_someone_else', *JOINTS[1:5])
    points = [
        point(0.0),
        point(0.06, (0.0,) * 6, velocities=(0.1,) * 3, accelerations=(0.0,) * 2),
        point(0.06, (0.0, NAN, 0.0, 0.0, 0.0, 0.0, 0.0)),
        point(0.12, velocities=(1e-7,) * 7),
    ]
    assert violations(check_trajectory(message(points, names=names), controller_joints=JOINTS)) == [
        ('duplicate_joint', None, "joint 'left_joint1' is named 2 times"),
        ('unknown_joint', None, "joint 'elbow_of_someone_else' is not one of the controller's"),
        ('missing_joint', None, 'controller joints not named: left_joint6, left_gripper'),
        ('time_not_positive', 0, 'time_from_start must be positive'),
        ('positions_size', 1, '6 positions for 7 joints'),
        ('velocities_size', 1, '3 velocities for 7 joints'),
        ('accelerations_size', 1, '2 accelerations for 7 joints'),
        ('time_not_increasing', 2, 'time_from_start 60000000 ns after 60000000 ns: not strictly increasing'),
        ('non_finite', 2, 'a position, velocity or acceleration is not finite'),
    ]
    moving = [point(0.06), point(0.12), point(0.18, velocities=(0.5,) * 7)]
    assert violations(check_trajectory(message(moving), controller_joints=JOINTS)) == [
        ('nonzero_end_velocity', 2, 'the last point is not at rest')
    ]
    assert violations(check_trajectory(message([]), controller_joints=JOINTS)) == [
        ('empty_trajectory', None, 'no points: the JTC rejects it and the arm keeps going')
    ]
    assert violations(check_trajectory(message([point(0.06, ())], names=()), controller_joints=JOINTS)) == [
        ('no_joints', None, 'joint_names is empty')
    ]


def test_the_first_point_may_be_due_one_nanosecond_after_the_start():
    assert check_trajectory(message([point(1e-9)]), controller_joints=JOINTS) == ()


def test_nanoseconds_must_lie_below_one_second_in_every_stamp():
    late = message([point(0.06), point(0.0, nanosec=NS_PER_S)], stamp_ns=NS_PER_S, nanosec=NS_PER_S)
    assert violations(check_trajectory(late, controller_joints=JOINTS)) == [
        ('stamp_invalid', None, 'stamp nanosec 1000000000 is outside [0, 1e9)'),
        ('time_from_start_invalid', 1, 'time_from_start nanosec 1000000000 is outside [0, 1e9)'),
    ]
    negative = message([point(1.0, nanosec=-1)])  # 1 s less 1 ns, but spelt out of range
    assert [(kind, index) for kind, index, _ in violations(check_trajectory(negative, controller_joints=JOINTS))] == [
        ('time_from_start_invalid', 0)
    ]


def test_a_stamp_is_judged_against_the_arrival_to_the_nanosecond():
    arrival = 100 * NS_PER_S
    now = message([point(0.06)], stamp_ns=arrival)
    assert check_trajectory(now, controller_joints=JOINTS, received_ns=arrival) == ()
    due_on_arrival = message([point(0.06)], stamp_ns=arrival - 60_000_000)
    assert check_trajectory(due_on_arrival, controller_joints=JOINTS, received_ns=arrival) == ()
    due_before = message([point(0.06), point(0.12)], stamp_ns=arrival - 60_000_001)
    assert [
        kind for kind, *_ in violations(check_trajectory(due_before, controller_joints=JOINTS, received_ns=arrival))
    ] == ['point_in_past']
    third = message([point(0.3), point(0.5)], stamp_ns=arrival - NS_PER_S // 3)
    assert violations(check_trajectory(third, controller_joints=JOINTS, received_ns=arrival)) == [
        (
            'point_in_past',
            None,
            'the first point was due 0.033333 s before the message arrived: the JTC skips the points already due '
            'and jumps onto the trajectory where it stands now (stamp zero for "now", or a start whose first point is '
            'still ahead)',
        )
    ]
    ends_on_arrival = message([point(0.5), point(1.0)], stamp_ns=arrival - NS_PER_S)
    assert [
        kind
        for kind, *_ in violations(check_trajectory(ends_on_arrival, controller_joints=JOINTS, received_ns=arrival))
    ] == ['point_in_past']
    ended = message([point(0.5), point(1.0)], stamp_ns=arrival - 2 * NS_PER_S)
    assert violations(check_trajectory(ended, controller_joints=JOINTS, received_ns=arrival))[1:] == [
        ('ends_in_past', None, 'the whole trajectory ends before it arrived: rejected')
    ]


def test_a_view_of_a_message_keeps_velocities_accelerations_and_the_stamps_nanoseconds():
    view = trajectory_view(
        message([point(0.06, velocities=(0.1,) * 7, accelerations=(0.2,) * 7)], stamp_ns=3 * NS_PER_S + 250_000_000)
    )
    assert view.stamp_ns == 3_250_000_000 and view.joint_names == JOINTS
    [only] = view.points
    assert (only.time_from_start_ns, only.velocities, only.accelerations) == (60_000_000, (0.1,) * 7, (0.2,) * 7)


def test_a_command_whose_times_do_not_match_its_rows_is_no_trajectory():
    with pytest.raises(ValueError, match='zip'):
        arm_trajectories(np.zeros((3, 14)), np.array([0.06, 0.12]), joint_layout('aloha'))


def test_a_qos_given_as_an_unknown_number_is_reported_by_that_number():
    assert violations(check_command_qos(durability=99, reliability=99)) == [
        ('qos_durability', None, 'durability 99: a late controller may replay an old command'),
        ('qos_reliability', None, 'reliability 99: a command may be lost'),
    ]
    assert violations(check_command_qos(durability='transient_local', reliability='best_effort')) == [
        ('qos_durability', None, 'durability transient_local: a late controller may replay an old command'),
        ('qos_reliability', None, 'reliability best_effort: a command may be lost'),
    ]
