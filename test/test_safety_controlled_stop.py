"""``controlled_stop`` and ``commanded_at``: a moving arm decelerates to rest along its motion, within its deceleration
and joint limits, instead of being sent back to a stale measured position."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safety_support import BOX, ROW, aloha_limits, tcp
from safety_support import home as measured_home

from robofollow_ros.errors import SafetyError
from robofollow_ros.safety.command_filter import Command
from robofollow_ros.safety.controlled_stop import (
    STOP_SECONDS,
    SentCommand,
    brisk_decelerations,
    commanded_at,
    controlled_stop,
    stop_decelerations,
    stop_in_workspace,
)

LIMITS = aloha_limits()


def home() -> np.ndarray:
    return np.asarray(measured_home().positions, dtype=np.float64)


DECELERATION = stop_decelerations(LIMITS)


def segment_speeds(start: np.ndarray, command: Command) -> np.ndarray:
    """(N, 14) mean velocity of each segment of ``command`` from ``start``."""
    knots = np.concatenate([[0.0], command.times])
    points = np.vstack([start[None, :], command.positions])
    return np.diff(points, axis=0) / np.diff(knots)[:, None]


def test_an_arm_at_rest_holds_where_it_is_commanded_one_row_period_ahead():
    command = controlled_stop(home(), np.zeros(14), LIMITS, deceleration=DECELERATION, row_period_s=ROW)
    assert command.hold and command.times.tolist() == [ROW]
    np.testing.assert_array_equal(command.positions[0], home())


def test_before_a_plan_sent_with_a_lead_begins_the_arms_are_where_the_plan_it_replaced_has_them() -> None:
    # A JTC chunk begins 30 ms after it is sent (PLAN_LEAD); a stop within those 30 ms started where the new chunk
    # begins, 30 ms ahead of the arm, at its first segment's speed.
    start = home()
    turning = start.copy()
    turning[0] += 1.0  # the left waist at 1 rad/s for 1 s
    first = SentCommand(start=start, command=Command(turning[None, :], np.array([1.0]), hold=False), sent_at=10.0)
    begin, _ = commanded_at(first, 10.53)
    ahead = begin.copy()
    ahead[0] += 0.12  # then at 2 rad/s for 0.06 s
    second = SentCommand(start=begin, command=Command(ahead[None, :], np.array([0.06]), hold=False), sent_at=10.53)
    chained = second.after(first)
    assert chained.before is not None and chained.before.before is None and second.before is None
    for now, expected_position, expected_speed in ((10.505, 0.505, 1.0), (10.53, 0.53, 2.0), (10.56, 0.59, 2.0)):
        position, velocity = commanded_at(chained, now)
        assert position[0] - start[0] == pytest.approx(expected_position)
        assert velocity[0] == pytest.approx(expected_speed)
    alone, speed = commanded_at(second, 10.505)  # nothing before it: at its start, at rest
    np.testing.assert_array_equal(alone, begin)
    assert speed.shape == (14,) and not speed.any()
    deeper = chained.after(chained).before  # one deep: what the plan before replaced is not kept
    assert deeper is not None and deeper.sent_at == chained.sent_at and deeper.before is None
    assert second.after(None).before is None and second.after(None).sent_at == second.sent_at


def test_a_moving_joint_decelerates_along_its_motion_to_rest():
    velocity = np.zeros(14)
    velocity[0] = 1.0  # left waist at 1 rad/s
    command = controlled_stop(home(), velocity, LIMITS, deceleration=DECELERATION, row_period_s=ROW)
    duration = 1.0 / DECELERATION[0]
    assert command.times[-1] == pytest.approx(duration) and np.all(np.diff(command.times) > 0)
    assert command.positions[-1, 0] == pytest.approx(home()[0] + 0.5 * 1.0 * duration)
    speeds = segment_speeds(home(), command)[:, 0]
    assert np.all(speeds > 0) and np.all(np.diff(speeds) < 0), 'onwards, slower each row: never back, never faster'
    np.testing.assert_array_equal(command.positions[:, 1:], np.tile(home()[1:], (len(command.times), 1)))


@pytest.mark.parametrize('over', [0.0, 2e-9, 1e-7, 1e-3])
def test_a_stop_a_hair_longer_than_whole_row_periods_keeps_its_times_apart_to_the_nanosecond(over: float) -> None:
    # A stop lasting 4 row periods and 0.12 ns ended in two points 0.12 ns apart: the same time_from_start once
    # written in nanoseconds, which a JTC refuses whole (the fuzz met it in one window of 10,000 chunks).
    velocity = np.zeros(14)
    velocity[0] = 4.0 * ROW * (1.0 + over / 4.0) * DECELERATION[0]
    command = controlled_stop(home(), velocity, LIMITS, deceleration=DECELERATION, row_period_s=ROW)
    nanoseconds = np.round(command.times * 1e9).astype(np.int64)
    assert (np.diff(nanoseconds) > 0).all(), command.times
    assert command.times[-1] == pytest.approx(4.0 * ROW * (1.0 + over / 4.0), abs=1e-12)
    assert len(command.times) == (4 if over < 1e-6 else 5)


def test_every_joint_reaches_rest_together_none_above_its_deceleration():
    velocity = np.linspace(-0.8, 0.8, 14) * LIMITS.velocity
    command = controlled_stop(home(), velocity, LIMITS, deceleration=DECELERATION, row_period_s=ROW)
    duration = float((np.abs(velocity) / DECELERATION).max())
    assert command.times[-1] == pytest.approx(duration)
    assert duration <= STOP_SECONDS + 1e-9
    used = np.abs(velocity) / duration
    assert np.all(used <= DECELERATION + 1e-9)


ACCELERATED = aloha_limits(acceleration=np.where(np.isin(np.arange(14), [6, 13]), np.inf, 42.5))
"""The cell's limits with an acceleration limit on the arm joints (the grippers have none)."""


def test_a_brisk_stop_decelerates_the_arms_at_their_acceleration_limit_and_the_grippers_gently():
    brisk = brisk_decelerations(ACCELERATED)
    gentle = stop_decelerations(ACCELERATED)
    arms = np.isfinite(ACCELERATED.acceleration)
    np.testing.assert_array_equal(brisk[arms], 42.5)
    np.testing.assert_array_equal(brisk[~arms], gentle[~arms])
    assert np.all(gentle[arms] < brisk[arms])
    np.testing.assert_array_equal(brisk_decelerations(LIMITS), stop_decelerations(LIMITS))  # no limit: as gentle
    quicker = brisk_decelerations(ACCELERATED, stop_seconds=0.25)
    np.testing.assert_allclose(quicker[~arms], np.asarray(ACCELERATED.velocity)[~arms] / 0.25)


@pytest.mark.parametrize('speed', [0.3, 0.84, 2.0, 3.0])
def test_a_brisk_stop_ends_as_soon_as_its_deceleration_allows_not_a_row_period_later(speed: float) -> None:
    velocity = np.zeros(14)
    velocity[0] = speed
    deceleration = brisk_decelerations(ACCELERATED)
    control_period = 0.01
    brisk = controlled_stop(
        home(), velocity, ACCELERATED, deceleration=deceleration, row_period_s=ROW, shortest=control_period
    )
    duration = max(speed / 42.5, control_period)
    assert brisk.hold and brisk.times[-1] == pytest.approx(duration)
    assert brisk.positions[-1, 0] == pytest.approx(home()[0] + 0.5 * speed * duration)
    assert np.all(np.diff(brisk.times) > 0) and np.all(np.diff(brisk.times)[:-1] == pytest.approx(ROW))
    usual = controlled_stop(home(), velocity, ACCELERATED, deceleration=deceleration, row_period_s=ROW)
    assert usual.times[-1] == pytest.approx(max(duration, ROW))  # without ``shortest``: at least one row period
    assert controlled_stop(
        home(), np.zeros(14), ACCELERATED, deceleration=deceleration, row_period_s=ROW, shortest=control_period
    ).times.tolist() == [ROW]  # an arm at rest holds one row period ahead, brisk or not
    with pytest.raises(SafetyError, match='positive number of seconds'):
        controlled_stop(home(), velocity, ACCELERATED, deceleration=deceleration, row_period_s=ROW, shortest=0.0)


def test_a_brisk_stop_kept_in_the_workspace_ends_as_soon_as_a_plain_one() -> None:
    velocity = np.zeros(14)
    velocity[0] = 0.84
    deceleration = brisk_decelerations(ACCELERATED)
    for limits, kinematics in ((ACCELERATED, tcp), (ACCELERATED, None), (aloha_limits(workspace=None), tcp)):
        kept = stop_in_workspace(
            home(), velocity, limits, deceleration=deceleration, row_period_s=ROW, tcp=kinematics, shortest=0.01
        )
        assert kept.times.tolist() == [pytest.approx(0.84 / 42.5)], kept.times  # not one row period


def test_the_stop_point_is_clipped_into_the_joint_limits():
    start = home().copy()
    start[0] = LIMITS.upper[0] - 0.01
    velocity = np.zeros(14)
    velocity[0] = LIMITS.velocity[0]
    command = controlled_stop(start, velocity, LIMITS, deceleration=DECELERATION, row_period_s=ROW)
    assert np.all(command.positions[:, 0] <= LIMITS.upper[0])
    assert command.positions[-1, 0] == LIMITS.upper[0]


def test_unusable_inputs_are_refused():
    with pytest.raises(SafetyError, match='velocity needs 14 finite numbers'):
        controlled_stop(home(), np.full(14, np.nan), LIMITS, deceleration=DECELERATION, row_period_s=ROW)
    with pytest.raises(SafetyError, match='every deceleration must be positive'):
        controlled_stop(home(), np.zeros(14), LIMITS, deceleration=np.zeros(14), row_period_s=ROW)
    with pytest.raises(SafetyError, match='stopping time'):
        stop_decelerations(LIMITS, stop_seconds=0.0)


def test_the_commanded_state_follows_the_sent_points_and_rests_after_the_last():
    start = home()
    target = start.copy()
    target[0] += 0.06
    sent = SentCommand(start=start, command=Command(target[None, :], np.array([ROW]), hold=False), sent_at=10.0)
    position, velocity = commanded_at(sent, 10.0 + ROW / 2)
    assert position[0] == pytest.approx(start[0] + 0.03) and velocity[0] == pytest.approx(0.06 / ROW)
    position, velocity = commanded_at(sent, 10.0 + ROW + 0.001)
    assert position[0] == pytest.approx(target[0]) and not velocity.any()
    position, velocity = commanded_at(sent, 9.0)  # before it was sent: its start
    assert position[0] == pytest.approx(start[0])


@settings(max_examples=300, deadline=None)
@given(
    speeds=st.lists(st.floats(-1.0, 1.0), min_size=14, max_size=14),
    offsets=st.lists(st.floats(-1.0, 1.0), min_size=14, max_size=14),
)
def test_any_stop_stays_in_limits_rests_in_time_and_never_speeds_up(speeds, offsets):
    span = (LIMITS.upper - LIMITS.lower) / 2
    start = (LIMITS.upper + LIMITS.lower) / 2 + np.asarray(offsets) * span
    velocity = np.asarray(speeds) * LIMITS.velocity
    command = controlled_stop(start, velocity, LIMITS, deceleration=DECELERATION, row_period_s=ROW)
    assert command.hold and np.all(np.diff(command.times) > 0) and command.times[0] > 0
    assert command.times[-1] <= max(STOP_SECONDS, ROW) + 1e-9
    assert np.all(command.positions >= LIMITS.lower - 1e-12) and np.all(command.positions <= LIMITS.upper + 1e-12)
    speeds_seen = np.abs(segment_speeds(start, command))
    assert np.all(speeds_seen <= np.abs(velocity)[None, :] + LIMITS.velocity * 1e-9 + 1e-12)
    assert np.all(np.diff(speeds_seen, axis=0) <= 1e-9), 'a stop never speeds a joint up'


def test_a_stop_towards_the_workspace_floor_brakes_harder_to_stay_in_the_box():
    # The stand-in FK puts the left TCP at z = 0.9 + 0.1 * elbow; the box's floor is z = 0.75 (elbow -1.5).
    position = home()
    position[2] = -1.45
    velocity = np.zeros(14)
    velocity[2] = -1.0
    plain = controlled_stop(position, velocity, LIMITS, deceleration=DECELERATION, row_period_s=ROW)
    assert min(tcp(row)[0][2] for row in plain.positions) < BOX.lower[2]  # the gentle stop ends below the floor
    kept = stop_in_workspace(position, velocity, LIMITS, deceleration=DECELERATION, row_period_s=ROW, tcp=tcp)
    assert all(BOX.contains(point) for row in kept.positions for point in tcp(row))
    assert kept.hold and kept.times[-1] < plain.times[-1]
    speeds = segment_speeds(position, kept)
    assert speeds[0, 2] < 0 and (np.diff(np.abs(speeds[:, 2])) <= 1e-9).all()  # on along its motion, slowing down
    assert (np.abs(np.diff(speeds[:, 2])) / ROW <= 2.0 * DECELERATION[2] * 1.01).all()  # twice as hard, no more


def test_a_stop_that_no_deceleration_keeps_in_the_box_holds_where_the_arm_is():
    position = home()
    position[2] = -1.495  # 0.5 mm above the floor, falling at 2 rad/s
    velocity = np.zeros(14)
    velocity[2] = -2.0
    kept = stop_in_workspace(position, velocity, LIMITS, deceleration=DECELERATION, row_period_s=ROW, tcp=tcp)
    assert len(kept.positions) == 1 and np.allclose(kept.positions[0], position) and kept.hold


def test_without_a_box_or_kinematics_the_stop_is_the_plain_controlled_stop():
    position, velocity = home(), np.zeros(14)
    velocity[2] = -1.0
    plain = controlled_stop(position, velocity, LIMITS, deceleration=DECELERATION, row_period_s=ROW)
    for limits, kinematics in ((LIMITS, None), (aloha_limits(workspace=None), tcp)):
        kept = stop_in_workspace(
            position, velocity, limits, deceleration=DECELERATION, row_period_s=ROW, tcp=kinematics
        )
        assert np.array_equal(kept.positions, plain.positions) and np.array_equal(kept.times, plain.times)


def test_a_stop_keeps_the_way_between_its_points_in_the_box_when_asked():
    """The waist turning at 1 rad/s from 0.015 rad before the arc's extreme (``arc_across_a_face``): every point of
    the stop lies in the box, the way to its first point does not."""
    from test_safety_filter import arc_across_a_face

    from robofollow_ros.safety.command_filter import path_points

    _, chunk, box, fk = arc_across_a_face()
    limits = aloha_limits(workspace=box)
    start = chunk[0]
    velocity = np.zeros(14)
    velocity[0] = 1.0

    def inside(command, samples: int) -> bool:
        return all(box.contains(point) for row in path_points(start, command.positions, samples) for point in fk(row))

    plain = stop_in_workspace(start, velocity, limits, deceleration=DECELERATION, row_period_s=ROW, tcp=fk)
    assert inside(plain, 1) and not inside(plain, 6)
    sampled = stop_in_workspace(
        start, velocity, limits, deceleration=DECELERATION, row_period_s=ROW, tcp=fk, path_samples=6
    )
    assert inside(sampled, 6)


def test_after_its_last_trajectory_an_arm_that_follows_holds_at_its_last_point_not_at_its_overshoot():
    """The Piper fuzz: holds at each new measurement walked an arm that overshot a stop at the box's side 8 mm
    further out; the hold at the last commanded point brings it back."""
    from robofollow_ros.safety.command_filter import MeasuredState
    from robofollow_ros.safety.controlled_stop import SentCommand, hold_after

    start = home()
    target = start.copy()
    target[0] += 0.3
    sent = SentCommand(start=start, command=Command(target[None, :], np.array([0.5]), hold=False), sent_at=10.0)
    overshot = target.copy()
    overshot[0] += 0.01
    hold = hold_after(sent, MeasuredState(overshot, 0.02), LIMITS, now=11.0, row_period_s=ROW)
    assert hold.hold and len(hold.positions) == 1 and hold.times[0] == pytest.approx(ROW)
    np.testing.assert_array_equal(hold.positions[0], target)
    blocked = target.copy()
    blocked[0] -= 0.2  # far from its command: it does not follow, so no pull towards the command
    hold = hold_after(sent, MeasuredState(blocked, 0.02), LIMITS, now=11.0, row_period_s=ROW)
    np.testing.assert_array_equal(hold.positions[0], blocked)
    with pytest.raises(SafetyError, match='14 finite'):
        hold_after(sent, MeasuredState(np.full(14, np.nan), 0.0), LIMITS, now=11.0, row_period_s=ROW)


def test_a_hold_while_the_arm_is_still_settling_after_its_trajectory_stays_at_the_last_point() -> None:
    """The fuzz under load: a hold 50 ms after a state gap's brisk stop found the arm 0.155 rad behind the stop's end
    (a servo lagging a stream that starved) and held it where it had been measured: the reference jumped back, x2.7
    of the velocity limit in one control period. Within ``settling_s`` of the end an arm behind on its own way is
    still reaching it; an arm off that way (a cell reset, a hand: test_bridge_fuzz's stand-in) holds where it is."""
    from robofollow_ros.safety.command_filter import MeasuredState
    from robofollow_ros.safety.controlled_stop import SentCommand, hold_after

    start = home()
    target = start.copy()
    target[0] += 0.3
    sent = SentCommand(start=start, command=Command(target[None, :], np.array([0.5]), hold=False), sent_at=10.0)
    lagging = target.copy()
    lagging[0] -= 0.06  # where the command had it at 10.4 s
    moved = target.copy()
    moved[1] += 0.3  # off the way
    started = start.copy()  # where the way began, 0.5 s before: an arm put back there (a reset), not one behind
    for now, measured, expected in (
        (10.52, lagging, target),  # 0.1 s behind: catching up
        (10.60, lagging, target),  # 0.18 s behind
        (10.75, lagging, lagging),  # over max_state_age_s (0.2 s) behind: it does not follow
        (10.52, moved, moved),
        (10.52, started, started),
        (11.0, lagging, lagging),  # settled: as before
    ):
        hold = hold_after(sent, MeasuredState(measured, 0.02), LIMITS, now=now, row_period_s=ROW, settling_s=0.5)
        np.testing.assert_array_equal(hold.positions[0], expected)
    at_once = hold_after(sent, MeasuredState(lagging, 0.02), LIMITS, now=10.52, row_period_s=ROW)
    np.testing.assert_array_equal(at_once.positions[0], lagging)  # without settling: where it is measured
    gripped = lagging.copy()
    gripped[6] = 0.0  # a gripper's value is its command's, not a measurement: it does not decide
    held = hold_after(sent, MeasuredState(gripped, 0.02), LIMITS, now=10.52, row_period_s=ROW, settling_s=0.5)
    np.testing.assert_array_equal(held.positions[0], target)
    with pytest.raises(SafetyError, match='14 finite'):
        hold_after(sent, MeasuredState(np.full(14, np.nan), 0.0), LIMITS, now=10.6, row_period_s=ROW, settling_s=0.5)


def test_a_chunk_after_a_stop_starts_where_the_arm_is_commanded_while_it_lags_along_its_way() -> None:
    """The fuzz under load: the chunk after a state gap's brisk stop started where a servo lagging its starved stream
    had been measured 50 ms before, and the stream went back there at once (32 times, up to x3.3 of the velocity
    limit in one control period). Measured behind on the way the trajectory took within ``lag_s``, the arm follows."""
    from robofollow_ros.safety.command_filter import MeasuredState
    from robofollow_ros.safety.controlled_stop import SentCommand, chunk_start

    start = home()
    target = start.copy()
    target[0] += 0.3
    sent = SentCommand(start=start, command=Command(target[None, :], np.array([0.5]), hold=False), sent_at=10.0)
    lagging = start.copy()
    lagging[0] += 0.3 * 0.2 / 0.5  # where the command had it at 10.2 s
    moved = lagging.copy()
    moved[1] += 0.3  # off the way
    for now, measured, lag, following in (
        (10.35, lagging, 0.2, True),  # measured at 10.33, 0.13 s behind: lagging along
        (10.35, lagging, 0.0, False),  # without the allowance: 0.08 rad off where it was commanded: at rest there
        (10.6, lagging, 0.2, False),  # 0.38 s behind: over the allowance
        (10.35, moved, 0.2, False),
    ):
        begun = chunk_start(sent, MeasuredState(measured, 0.02), now=now, lag_s=lag)
        expected, _ = commanded_at(sent, now)
        np.testing.assert_array_equal(begun.position, expected if following else measured)
        assert (float(np.abs(begun.velocity).max()) > 0.0) == following, (now, lag)


@pytest.mark.parametrize('age', [0.2 + 1e-9, 0.5, math.inf, math.nan])
def test_a_hold_after_a_state_too_old_to_tell_stays_at_the_last_commanded_point(age: float) -> None:
    """Fake hardware's joint states went quiet while a chunk ran: the bridge stopped the arms along their motion,
    then, at the watchdog, held them at the last measurement, taken before that stop: commanded back 6 cm at 2.5
    rad/s. A measurement older than ``max_state_age_s`` cannot say the arm does not follow; its last point holds."""
    from robofollow_ros.safety.command_filter import MeasuredState
    from robofollow_ros.safety.controlled_stop import SentCommand, hold_after

    start = home()
    target = start.copy()
    target[0] += 0.3
    sent = SentCommand(start=start, command=Command(target[None, :], np.array([0.5]), hold=False), sent_at=10.0)
    before_the_stop = start.copy()  # far from the command, as a measurement from before the motion is
    hold = hold_after(sent, MeasuredState(before_the_stop, age), LIMITS, now=11.0, row_period_s=ROW)
    assert hold.hold and len(hold.positions) == 1
    np.testing.assert_array_equal(hold.positions[0], target)
    fresh = hold_after(sent, MeasuredState(before_the_stop, LIMITS.max_state_age_s), LIMITS, now=11.0, row_period_s=ROW)
    np.testing.assert_array_equal(fresh.positions[0], before_the_stop)  # young enough: it does not follow


def test_the_remaining_points_of_a_trajectory_are_those_due_after_now_timed_from_now() -> None:
    from robofollow_ros.safety.controlled_stop import SentCommand, remaining_of

    start = home()
    rows = np.tile(start, (3, 1))
    rows[:, 0] += [0.1, 0.2, 0.3]
    sent = SentCommand(start=start, command=Command(rows, np.array([0.25, 0.5, 0.75]), hold=False), sent_at=10.0)
    rest = remaining_of(sent, 10.5)
    assert rest is not None and rest.hold is False
    np.testing.assert_array_equal(rest.positions, rows[2:])
    np.testing.assert_array_equal(rest.times, [0.25])
    whole = remaining_of(sent, 10.0)
    assert whole is not None
    np.testing.assert_array_equal(whole.times, [0.25, 0.5, 0.75])
    assert remaining_of(sent, 10.75) is None


def test_a_trajectorys_rest_counts_as_a_stop_only_when_it_moves_no_joint_further_than_the_stop() -> None:
    """A hold in a chunk's last moments may let the chunk end on its last row, not when its last rows speed up: an
    operator's stop must not run an accelerating tail."""
    from robofollow_ros.safety.controlled_stop import within_travel

    start = home()
    stop_rows = np.tile(start, (2, 1))
    stop_rows[:, 0] += [0.05, 0.08]
    stop = Command(stop_rows, np.array([0.06, 0.12]), hold=True)
    short = Command(start[None, :] + np.eye(14)[0] * 0.04, np.array([0.04]), hold=False)
    assert within_travel(start, short, stop)
    speeding = np.tile(start, (2, 1))
    speeding[:, 0] += [0.05, 0.2]
    assert not within_travel(start, Command(speeding, np.array([0.06, 0.12]), hold=False), stop)
    back_and_forth = np.tile(start, (2, 1))
    back_and_forth[:, 0] += [0.06, 0.0]  # ends where it began, but travels 0.12 > 0.08
    assert not within_travel(start, Command(back_and_forth, np.array([0.06, 0.12]), hold=False), stop)
    other_joint = start[None, :] + np.eye(14)[1] * 0.01  # any joint the stop keeps still moves further
    assert not within_travel(start, Command(other_joint, np.array([0.04]), hold=False), stop)
