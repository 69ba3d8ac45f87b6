"""The safety filter for real arms (``robofollow_ros.safety.command_filter``): out-of-limit targets are clamped or
refused per mode, too-fast rows refused or slowed, non-finite chunks and stale states hold, the workspace box cuts
the chunk, and a hold is one point at the measured position; every change is reported."""

from __future__ import annotations

import numpy as np
import pytest
from safety_support import ROW, aloha_limits, home, tcp

from robofollow_ros.errors import SafetyError
from robofollow_ros.safety.command_filter import MeasuredState, filter_chunk, hold_command
from robofollow_ros.safety.limits import SafetyLimits, WorkspaceBox


def ramp(rows: int, *, column: int = 0, step: float = 0.01, start: np.ndarray | None = None) -> np.ndarray:
    """``rows`` rows from ``start`` (home) moving ``column`` by ``step`` per row."""
    base = home().positions if start is None else start
    chunk = np.tile(base, (rows, 1))
    chunk[:, column] += step * np.arange(1, rows + 1)
    return chunk


def kinds(decision) -> list[str]:
    return [item.kind for item in decision.interventions]


def test_a_safe_chunk_goes_out_untouched_with_one_row_period_per_row():
    chunk = ramp(10)
    decision = filter_chunk(chunk, state=home(), limits=aloha_limits(), row_period_s=ROW, tcp=tcp)
    assert decision.untouched and decision.rows_sent == 10 and decision.interventions == ()
    np.testing.assert_array_equal(decision.command.positions, chunk)
    np.testing.assert_allclose(decision.command.times, ROW * np.arange(1, 11))
    assert decision.summary() == '10/10 rows sent'


def test_clamp_mode_clamps_every_out_of_limit_target_and_reports_each():
    limits = aloha_limits(limit_mode='clamp')
    start = home().positions.copy()
    start[1] = 1.22
    chunk = np.tile(start, (3, 1))
    chunk[:, 1] = [1.24, 1.26, 1.30]  # left shoulder's upper limit is 1.25664
    chunk[:, 13] = [0.6, 0.7, 1.2]  # right gripper past fully open
    decision = filter_chunk(chunk, state=MeasuredState(start, 0.01), limits=limits, row_period_s=ROW, tcp=tcp)
    assert decision.rows_sent == 3
    assert [(i.kind, i.row, i.joint, i.value) for i in decision.interventions] == [
        ('position_clamped', 1, 'left_shoulder', 1.26),
        ('position_clamped', 2, 'left_shoulder', 1.30),
        ('position_clamped', 2, 'right_left_finger', 1.2),
    ]
    assert [i.limit for i in decision.interventions] == [pytest.approx(1.25664)] * 2 + [1.0]
    expected = chunk.copy()
    expected[1:, 1], expected[2, 13] = limits.upper[1], 1.0
    np.testing.assert_array_equal(decision.command.positions, expected)


def test_refuse_mode_sends_the_rows_before_the_first_out_of_limit_row():
    limits = aloha_limits(limit_mode='refuse')
    chunk = ramp(6, column=2, step=0.05)
    chunk[4, 2] = 1.7  # elbow upper limit 1.6057
    state = home()
    decision = filter_chunk(chunk, state=state, limits=limits, row_period_s=ROW, tcp=tcp)
    assert decision.rows_sent == 4 and not decision.held
    np.testing.assert_array_equal(decision.command.positions, chunk[:4])
    refused = [i for i in decision.interventions if i.kind == 'position_refused']
    assert [(i.row, i.joint, i.value) for i in refused] == [(4, 'left_elbow', 1.7)]
    assert refused[0].limit == pytest.approx(1.6057)
    assert decision.interventions[-1].kind == 'rows_refused' and decision.interventions[-1].value == 2


def test_refusing_the_first_row_holds_at_the_measured_position():
    limits = aloha_limits(limit_mode='refuse')
    chunk = ramp(3)
    chunk[0, 9] = -2.0  # right elbow lower limit -1.76278
    state = home()
    decision = filter_chunk(chunk, state=state, limits=limits, row_period_s=ROW, tcp=tcp)
    assert decision.held and decision.rows_sent == 0
    assert decision.command.positions.shape == (1, 14) and decision.command.times.tolist() == [ROW]
    np.testing.assert_array_equal(decision.command.positions[0], state.positions)
    assert kinds(decision) == ['position_refused', 'rows_refused']


@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf])
def test_a_non_finite_value_anywhere_refuses_the_whole_chunk(bad: float):
    chunk = ramp(20)
    chunk[17, 4] = bad
    decision = filter_chunk(chunk, state=home(), limits=aloha_limits(limit_mode='clamp'), row_period_s=ROW, tcp=tcp)
    assert decision.held and decision.rows_in == 20
    assert [(i.kind, i.row, i.joint) for i in decision.interventions] == [('non_finite', 17, 'left_wrist_angle')]


@pytest.mark.parametrize('chunk', [np.zeros((3, 13)), np.zeros(14), np.zeros((0, 14)), 'hello', [[None] * 14]])
def test_a_malformed_chunk_holds(chunk: object):
    decision = filter_chunk(chunk, state=home(), limits=aloha_limits(), row_period_s=ROW, tcp=tcp)
    assert decision.held and kinds(decision) == ['malformed']


def test_a_too_fast_row_is_refused_from_that_row_on_in_refuse_mode():
    limits = aloha_limits()
    speed = limits.velocity[0]
    chunk = ramp(5, step=0.5 * speed * ROW)
    chunk[3:, 0] += 1.5 * speed * ROW  # row 3 moves the waist at twice its limit
    decision = filter_chunk(chunk, state=home(), limits=limits, row_period_s=ROW, tcp=tcp)
    assert decision.rows_sent == 3
    fast = [i for i in decision.interventions if i.kind == 'too_fast']
    assert [(i.row, i.joint) for i in fast] == [(3, 'left_waist')]
    assert fast[0].value == pytest.approx(2.0 * speed) and fast[0].limit == pytest.approx(speed)


def test_the_first_row_is_held_to_the_velocity_limit_from_the_measured_state():
    limits = aloha_limits()
    state = home()
    chunk = ramp(2, column=8, step=0.0)
    chunk[:, 8] = 0.5  # right shoulder jumps 0.5 rad in one row: 8.3 rad/s against 3.14
    decision = filter_chunk(chunk, state=state, limits=limits, row_period_s=ROW, tcp=tcp)
    assert decision.held and ('too_fast', 0, 'right_shoulder') in [
        (i.kind, i.row, i.joint) for i in decision.interventions
    ]


def test_stretch_mode_gives_a_fast_row_more_time_and_reports_it():
    limits = aloha_limits(velocity_mode='stretch', max_stretch=4.0)
    speed = limits.velocity[0]
    chunk = ramp(4, step=0.5 * speed * ROW)
    chunk[2:, 0] += 2.0 * speed * ROW  # row 2 needs 2.5 row periods
    decision = filter_chunk(chunk, state=home(), limits=limits, row_period_s=ROW, tcp=tcp)
    assert decision.rows_sent == 4
    np.testing.assert_allclose(np.diff(decision.command.times, prepend=0.0), [ROW, ROW, 2.5 * ROW, ROW])
    stretched = [i for i in decision.interventions if i.kind == 'row_stretched']
    assert [(i.row, i.joint) for i in stretched] == [(2, 'left_waist')]
    assert stretched[0].value == pytest.approx(2.5 * ROW) and stretched[0].limit == ROW


def test_stretch_mode_refuses_a_row_that_needs_more_than_max_stretch():
    limits = aloha_limits(velocity_mode='stretch', max_stretch=2.0)
    chunk = ramp(3)
    chunk[1:, 3] += 3.0 * limits.velocity[3] * ROW
    decision = filter_chunk(chunk, state=home(), limits=limits, row_period_s=ROW, tcp=tcp)
    assert decision.rows_sent == 1 and 'too_fast' in kinds(decision) and 'row_stretched' not in kinds(decision)


def test_the_chunk_is_refused_from_the_first_row_whose_tcp_leaves_the_workspace():
    low_box = WorkspaceBox(lower=(-0.6, -0.1, 0.75), upper=(0.6, 0.5, 1.0))
    chunk = ramp(30, column=9, step=0.05)  # right elbow: the stand-in TCP's z rises 5 mm per row
    decision = filter_chunk(chunk, state=home(), limits=aloha_limits(workspace=low_box), row_period_s=ROW, tcp=tcp)
    first_out = int(np.argmax(0.9 + 0.1 * chunk[:, 9] > 1.0))
    assert decision.rows_sent == first_out > 0
    outside = [i for i in decision.interventions if i.kind == 'outside_workspace']
    assert [(i.row, i.joint, i.limit) for i in outside] == [(first_out, 'right_tcp_z', 1.0)]
    assert all(tcp(row)[1][2] <= 1.0 for row in decision.command.positions)


def test_an_arm_measured_outside_the_workspace_may_move_back_but_never_further_out():
    """A real arm lags and overshoots its commands by millimetres: measured 3 mm above the box, the arm may come
    back (a home move did not start before), but no row may get further outside than the row before it."""
    box = WorkspaceBox(lower=(-0.6, -0.1, 0.75), upper=(0.6, 0.5, 1.0))
    limits = aloha_limits(workspace=box)
    start = home().positions.copy()
    start[9] = 1.03  # right elbow: the stand-in TCP's z at 1.003
    outside = MeasuredState(positions=start, age_s=0.0)
    assert tcp(start)[1][2] == pytest.approx(1.003)

    back = filter_chunk(
        ramp(10, column=9, step=-0.01, start=start), state=outside, limits=limits, row_period_s=ROW, tcp=tcp
    )
    assert back.untouched and back.rows_sent == 10

    further = filter_chunk(
        ramp(5, column=9, step=0.01, start=start), state=outside, limits=limits, row_period_s=ROW, tcp=tcp
    )
    assert further.held and [(i.kind, i.row, i.joint) for i in further.interventions][:1] == [
        ('outside_workspace', 0, 'right_tcp_z')
    ]

    down_then_up = ramp(4, column=9, step=-0.01, start=start)
    down_then_up[2:, 9] = [1.015, 1.012]  # z 1.0015 after 1.001: still inside what was measured, but further out
    decision = filter_chunk(down_then_up, state=outside, limits=limits, row_period_s=ROW, tcp=tcp)
    assert decision.rows_sent == 2
    assert [(i.kind, i.row) for i in decision.interventions] == [('outside_workspace', 2), ('rows_refused', 2)]


def test_a_broken_tcp_result_counts_as_outside():
    decision = filter_chunk(
        ramp(3), state=home(), limits=aloha_limits(), row_period_s=ROW, tcp=lambda state: (np.zeros(3),)
    )
    assert decision.held and kinds(decision) == ['outside_workspace', 'rows_refused']


@pytest.mark.parametrize('age', [0.5, float('inf'), float('nan')])
def test_a_stale_state_holds_instead_of_moving(age: float):
    limits = aloha_limits(max_state_age_s=0.2)
    decision = filter_chunk(ramp(5), state=home(age_s=age), limits=limits, row_period_s=ROW, tcp=tcp)
    assert decision.held and kinds(decision) == ['stale_state']
    np.testing.assert_array_equal(decision.command.positions, home().positions[None, :])


def test_an_unusable_measured_state_sends_nothing_not_even_an_empty_trajectory():
    state = MeasuredState(positions=np.full(14, np.nan), age_s=0.0)
    decision = filter_chunk(ramp(5), state=state, limits=aloha_limits(), row_period_s=ROW, tcp=tcp)
    assert decision.command is None and kinds(decision) == ['invalid_state']
    assert decision.summary().startswith('nothing sent')


def test_a_hold_is_clipped_into_the_limits_and_says_so():
    positions = home().positions.copy()
    positions[6] = 1.03  # a gripper reading a little past fully open
    decision = hold_command(MeasuredState(positions, 0.0), aloha_limits(), row_period_s=ROW)
    assert decision.held and decision.command.positions[0, 6] == 1.0
    assert [(i.kind, i.joint, i.value, i.limit) for i in decision.interventions] == [
        ('hold_clipped', 'left_left_finger', 1.03, 1.0)
    ]
    assert decision.command.times.tolist() == [ROW]


def test_a_hold_far_outside_the_limits_moves_back_no_faster_than_the_velocity_limit():
    limits = aloha_limits()
    positions = home().positions.copy()
    positions[8] = limits.upper[8] + 0.5  # right shoulder read 0.5 rad past its limit
    decision = hold_command(MeasuredState(positions, 0.0), limits, row_period_s=ROW)
    assert decision.command.positions[0, 8] == limits.upper[8]
    assert decision.command.times.tolist() == [pytest.approx(0.5 / limits.velocity[8])]


def test_the_decision_record_is_json_ready():
    chunk = ramp(3)
    chunk[1, 0] = np.nan
    record = filter_chunk(chunk, state=home(), limits=aloha_limits(), row_period_s=ROW, tcp=tcp).to_dict()
    assert record == {
        'outcome': 'hold',
        'rows_in': 3,
        'rows_sent': 0,
        'interventions': [{'kind': 'non_finite', 'row': 1, 'joint': 'left_waist', 'value': None, 'limit': None}],
    }


def test_unusable_limits_and_periods_are_refused_in_one_line():
    with pytest.raises(SafetyError, match='row period'):
        filter_chunk(ramp(1), state=home(), limits=aloha_limits(), row_period_s=0.0, tcp=tcp)
    with pytest.raises(SafetyError, match='tcp function'):
        filter_chunk(ramp(1), state=home(), limits=aloha_limits(), row_period_s=ROW)
    with pytest.raises(SafetyError, match='limit_mode'):
        aloha_limits(limit_mode='ignore')
    with pytest.raises(SafetyError, match='velocity limit must be positive'):
        aloha_limits(velocity=np.zeros(14))
    with pytest.raises(SafetyError, match='workspace box'):
        WorkspaceBox(lower=(0.0, 0.0, 1.0), upper=(1.0, 1.0, 0.5))
    with pytest.raises(SafetyError, match='lower must be below upper'):
        SafetyLimits(lower=np.ones(14), upper=np.ones(14), velocity=np.ones(14))


def test_an_arm_whose_measured_tcp_cannot_be_computed_may_not_go_outside_at_all():
    positions = home().positions.copy()
    positions[2] = -1.45  # the left TCP 5 mm above the box's floor (0.75 m)
    measured = MeasuredState(positions=positions, age_s=0.01)

    def tcp_failing_at_the_measurement(state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if np.array_equal(state, positions):
            raise ValueError('no kinematics for this state')
        return tcp(state)

    def tcp_nan_at_the_measurement(state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        left, right = tcp(state)
        return (np.full(3, np.nan), right) if np.array_equal(state, positions) else (left, right)

    inside = ramp(3, column=2, step=0.01, start=positions)
    below = ramp(3, column=2, step=-0.1, start=positions)  # 5 mm under the floor at the first row
    for kinematics in (tcp_failing_at_the_measurement, tcp_nan_at_the_measurement):
        assert filter_chunk(inside, state=measured, limits=aloha_limits(), row_period_s=ROW, tcp=kinematics).untouched
        decision = filter_chunk(below, state=measured, limits=aloha_limits(), row_period_s=ROW, tcp=kinematics)
        assert decision.held and 'outside_workspace' in kinds(decision), decision.summary()


def arc_across_a_face() -> tuple[np.ndarray, np.ndarray, WorkspaceBox, object]:
    """A waist turn of the ViperX's left arm from -0.03 to +0.03 rad about home, in rows at -0.015, +0.015, +0.03,
    and a box whose +y face lies 2 um beyond every row's TCP: the TCP's arc between the rows at -0.015 and +0.015
    (its extreme at 0) bulges 20 um past them, where a position stream sends a point between those rows."""
    from robofollow_ros.robot.profiles import load_profile
    from robofollow_ros.safety.profile_limits import profile_tcp

    profile = load_profile('aloha_interbotix')
    fk = profile_tcp(profile)
    centre = profile.home_state()
    centre[7] += 0.05  # the right arm's TCP, turned away from the arc's extreme, stays under the face
    states = [centre.copy() for _ in range(4)]
    for state, turn in zip(states, (-0.03, -0.015, 0.015, 0.03), strict=True):
        state[0] += turn
    face = max(float(fk(state)[0][1]) for state in states) + 2e-6
    box = WorkspaceBox(lower=(-0.7, -0.7, 0.5), upper=(0.7, face, 1.5))
    return states[0], np.array(states[1:]), box, fk


def test_path_samples_hold_the_way_between_rows_to_the_workspace_not_only_the_rows():
    from robofollow_ros.safety.command_filter import path_points

    start, chunk, box, fk = arc_across_a_face()
    limits = aloha_limits(workspace=box)
    state = MeasuredState(start, 0.01)
    rows_only = filter_chunk(chunk, state=state, limits=limits, row_period_s=ROW, tcp=fk)
    assert rows_only.untouched
    midway = path_points(start, chunk, 2)[2]
    assert float(fk(midway)[0][1]) > box.upper[1] + 1.5e-5
    sampled = filter_chunk(chunk, state=state, limits=limits, row_period_s=ROW, tcp=fk, path_samples=2)
    assert sampled.rows_sent == 1
    assert [(item.kind, item.row, item.joint) for item in sampled.interventions] == [
        ('outside_workspace', 1, 'left_tcp_y'),
        ('rows_refused', 1, None),
    ]


def test_path_points_split_each_segment_evenly_and_end_on_each_row():
    from robofollow_ros.safety.command_filter import path_points

    start, chunk = np.zeros(14), np.array([np.full(14, 3.0), np.full(14, 6.0)])
    points = path_points(start, chunk, 3)
    np.testing.assert_allclose(points[:, 0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    np.testing.assert_array_equal(path_points(start, chunk, 1), chunk)


def test_a_stream_sends_one_point_per_control_period_of_a_row():
    from robofollow_ros.safety.command_filter import path_samples_for

    assert path_samples_for(0.06, 50.0) == 3
    assert path_samples_for(0.06, 100.0) == 6
    assert path_samples_for(0.06, 10.0) == 1
    with pytest.raises(SafetyError, match='path samples'):
        filter_chunk(ramp(2), state=home(), limits=aloha_limits(), row_period_s=ROW, tcp=tcp, path_samples=0)


def test_a_tcp_that_computes_many_states_at_once_decides_as_one_that_computes_each():
    """``ProfileTcp.many`` is the filter's fast path; a plain function (one state at a time) is the reference."""
    from robofollow_ros.robot.profiles import load_profile
    from robofollow_ros.safety.profile_limits import limits_from_profile, profile_tcp

    profile = load_profile('piper')
    limits, fast = limits_from_profile(profile), profile_tcp(profile)

    def one_at_a_time(state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return fast(state)

    rng = np.random.default_rng(7)
    outcomes = set()
    for _ in range(40):
        start = profile.home_state() + rng.uniform(-0.6, 0.6, 14)
        chunk = start + np.cumsum(rng.uniform(-0.15, 0.15, (12, 14)), axis=0)
        state = MeasuredState(start, 0.0)
        decisions = [
            filter_chunk(chunk, state=state, limits=limits, row_period_s=ROW, tcp=kinematics, path_samples=3)
            for kinematics in (fast, one_at_a_time)
        ]
        assert decisions[0].to_dict() == decisions[1].to_dict()
        outcomes.add('outside_workspace' in kinds(decisions[0]))
    assert outcomes == {True, False}


class _CountingTcp:
    """The test's TCP function, counting single-state calls and batched calls (``many``: ``batched`` answers)."""

    def __init__(self, batched) -> None:
        self.batched = batched
        self.single = self.batches = 0

    def __call__(self, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.single += 1
        return tcp(state)

    def many(self, states: np.ndarray) -> np.ndarray:
        self.batches += 1
        return self.batched(states)


def _refuse_batch(states: np.ndarray) -> np.ndarray:
    raise ValueError('no batch today')


def test_a_chunks_workspace_excesses_come_from_one_batched_call_or_else_state_by_state():
    # One FK call per state made a 50-row chunk with 3 path samples take 26 ms, and under load one Piper expert
    # episode lost 38 rows as too_fast; the batch takes 0.7 ms. A batch that fails or answers another shape falls
    # back to one call per state, with the same answer.
    from robofollow_ros.safety.command_filter import tcp_excesses

    box = aloha_limits().workspace
    assert box is not None
    states = np.asarray(home().positions) + np.linspace(0.0, 6.0, 7)[:, None] * np.ones(14)
    exact = np.stack([box.excess(np.stack(tcp(state))) for state in states])
    assert exact[0].max() == 0.0 < exact[-1].max()  # from the box's centre to far outside it
    batched = _CountingTcp(lambda many: np.stack([np.stack(tcp(state)) for state in many]))
    np.testing.assert_allclose(np.stack(tcp_excesses(states, box, batched)), exact)
    assert (batched.batches, batched.single) == (1, 0)
    for broken in (_refuse_batch, lambda many: np.zeros((len(many), 3))):
        fallback = _CountingTcp(broken)
        np.testing.assert_allclose(np.stack(tcp_excesses(states, box, fallback)), exact)
        assert (fallback.batches, fallback.single) == (1, len(states))
