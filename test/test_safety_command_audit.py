"""``safety.command_audit``: recorded arm commands checked after the fact, each rule shown to catch its breach (the
clean path over real bags of every profile is ``test_real_end_to_end.py``), and ``robofollow audit``'s answers."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from robofollow_ros.cli import main
from robofollow_ros.robot.profiles import load_profile
from robofollow_ros.safety.command_audit import ArmCommand, AuditReport, audit_commands
from robofollow_ros.safety.limits import WorkspaceBox
from robofollow_ros.safety.profile_limits import limits_from_profile, profile_tcp
from robofollow_ros.state_layout import ARM_SLICE

PROFILE = load_profile('aloha_ros2_control')
LIMITS = limits_from_profile(PROFILE)
HOME = PROFILE.home_state()
LEFT = HOME[ARM_SLICE['left']]
ROW = PROFILE.row_period
NS = 1_000_000_000
WAIST_SPEED = float(LIMITS.velocity[0])


PERIOD = 1.0 / PROFILE.control_rate
"""The stream's control period."""


def streamed(log_s: float, waist: float) -> ArmCommand:
    """A streamed target of the left arm, its waist at ``waist``, logged at ``log_s``."""
    joints = LEFT.copy()
    joints[0] = waist
    return ArmCommand('/stream', 'left', round(log_s * NS), np.array([PERIOD]), joints=joints[None, :], streamed=True)


def turning(log_s: float, *, speed: float, rows: int = 5, start: np.ndarray = LEFT) -> ArmCommand:
    """A JTC message logged at ``log_s`` turning the left waist at ``speed`` rad/s from ``start`` for ``rows`` rows."""
    times = ROW * np.arange(1, rows + 1)
    joints = np.tile(start, (rows, 1))
    joints[:, 0] += speed * times
    return ArmCommand('/left_arm_controller/joint_trajectory', 'left', round(log_s * NS), times, joints=joints)


def audit(*commands: ArmCommand, limits=LIMITS) -> AuditReport:
    return audit_commands(commands, limits, tcp=profile_tcp(PROFILE), home=HOME)


def test_a_motion_within_the_limits_followed_by_its_continuation_is_clean() -> None:
    first = turning(0.0, speed=0.5 * WAIST_SPEED)
    # The next window, logged one row later, goes on from where the first commands the arm then.
    going_on = turning(ROW, speed=0.5 * WAIST_SPEED, start=first.joints[0])
    report = audit(first, going_on)
    assert report.clean, report.violations
    assert report.messages == {first.topic: 2} and report.points == 10


def test_a_message_that_jumps_from_where_the_last_one_left_the_arm_is_too_fast() -> None:
    first = turning(0.0, speed=0.5 * WAIST_SPEED)
    jumped = turning(ROW, speed=0.5 * WAIST_SPEED, start=first.joints[-1] + 0.3)  # 0.3 rad ahead of the reference
    report = audit(first, jumped)
    assert len(report.violations) == 1 and 'point 0:' in report.violations[0], report.violations
    within = audit(turning(0.0, speed=0.5 * WAIST_SPEED, rows=1), turning(0.0, speed=1.04 * WAIST_SPEED))
    assert within.clean, within.violations  # the log's 5 % slack
    # A first message: where point 0 starts from is unknown, its later segments are judged.
    first_only = audit(turning(0.0, speed=1.1 * WAIST_SPEED)).violations
    assert len(first_only) == 4 and 'point 1:' in first_only[0], first_only


def test_a_window_logged_after_its_first_point_was_due_joins_its_chunk_where_the_chunk_is() -> None:
    """Windows of one chunk are stamped with its start: one the recorder logged after its first point was due is
    taken up where the chunk is then (as a JTC does), which is where the window before had the arm."""
    chunk = turning(BASE_S, speed=0.9 * WAIST_SPEED, rows=10)
    first = dataclasses.replace(chunk, times=chunk.times[:4], joints=chunk.joints[:4])
    late = round(0.15 * NS)  # the rows due at 0.06 and 0.12 s have passed when the second window is logged
    second = dataclasses.replace(
        chunk, log_ns=chunk.log_ns + late, times=chunk.times[1:6] - late / NS, joints=chunk.joints[1:6]
    )
    report = audit(first, second)
    assert report.clean, report.violations
    elsewhere = dataclasses.replace(second, joints=second.joints + np.array([0.01, 0, 0, 0, 0, 0]))
    assert audit(first, elsewhere).violations == (
        f'{chunk.topic} at {second.log_ns} point 1: joins its trajectory 0.0100 away from where the last one had it',
    )
    # A window of the same chunk (its stamp): the log's time, not the sending, was late (a recorder that lags): it
    # joins where the chunk is, the rest of its segments judged from there.
    stamped = {'stamp_ns': round(BASE_S * NS)}
    same_chunk = audit(dataclasses.replace(first, **stamped), dataclasses.replace(elsewhere, **stamped))
    assert same_chunk.clean, same_chunk.violations
    other_chunk = audit(
        dataclasses.replace(first, **stamped), dataclasses.replace(elsewhere, stamp_ns=stamped['stamp_ns'] + 1)
    )
    assert len(other_chunk.violations) == 1 and 'joins its trajectory' in other_chunk.violations[0]
    ended = dataclasses.replace(second, times=second.times - 1.0)  # the controller drops it: the reference stays
    after = turning(BASE_S + 0.3, speed=0.9 * WAIST_SPEED, rows=2, start=chunk.joints[3])
    assert audit(first, ended, after).clean


def test_a_window_whose_last_point_alone_is_not_yet_past_is_taken_up_not_dropped() -> None:
    """Dropped is only a trajectory all of whose points were due before it was logged (the JTC refuses it); one whose
    last point is due as it is logged, or after, is taken up there: a join off the reference is reported."""
    first = turning(BASE_S, speed=0.5 * WAIST_SPEED, rows=4)
    log_ns = first.log_ns + round(0.3 * NS)  # the first window has ended: the reference rests on its last row
    rest = first.joints[-1]
    points = np.tile(rest, (3, 1))
    points[:2, 0] -= [0.3, 0.2]  # points already past, far from the reference: skipped
    on_time = ArmCommand(first.topic, 'left', log_ns, np.array([-0.12, -0.06, 0.0]), joints=points)
    assert audit(first, on_time).clean  # its last point, due now, is where the reference rests: no jump
    aside = dataclasses.replace(on_time, joints=points + np.array([0.01, 0, 0, 0, 0, 0]))
    just_after = dataclasses.replace(aside, times=np.array([-0.12, -0.06, 0.001]))  # joins 1/61 short of point 2
    for late, jump in ((aside, '0.0100'), (just_after, '0.0067')):
        (violation,) = audit(first, late).violations
        assert violation.endswith(f'point 2: joins its trajectory {jump} away from where the last one had it')


def test_points_outside_the_joint_limits_or_the_box_or_not_finite_are_found() -> None:
    beyond = turning(0.0, speed=0.0, rows=2)
    beyond.joints[1, 1] = LIMITS.upper[1] + 0.01
    assert any('outside the joint limits' in item for item in audit(beyond).violations)
    box = WorkspaceBox(lower=(-0.1, -0.1, 2.0), upper=(0.1, 0.1, 2.5))  # far above the home TCP
    assert any(
        'outside the workspace box' in item
        for item in audit(turning(0.0, speed=0.0), limits=dataclasses.replace(LIMITS, workspace=box)).violations
    )
    broken = turning(0.0, speed=0.0, rows=2)
    broken.joints[0, 3] = np.nan
    assert audit(broken).violations == (f'{broken.topic} at 0 point 0: not 6 finite joint positions',)


def test_a_gripper_outside_its_range_or_faster_than_its_speed_is_found() -> None:
    topic, speed = '/left_gripper_controller/joint_trajectory', float(LIMITS.velocity[6])
    times = ROW * np.arange(1, 4)

    def gripper(log_s: float, grips: list[float]) -> ArmCommand:
        return ArmCommand(topic, 'left', round(log_s * NS), times[: len(grips)], grips=np.array(grips))

    assert audit(gripper(0.0, [1.0, 1.0, 1.01])).violations[0].endswith('outside 0..1')
    slow = [1.0 - 0.5 * speed * t for t in times]
    assert audit(gripper(0.0, [1.0, 1.0, 1.0]), gripper(0.1, slow)).clean
    fast = [1.0 - 1.5 * speed * ROW]
    assert 'gripper point 0:' in audit(gripper(0.0, [1.0, 1.0, 1.0]), gripper(0.1, fast)).violations[0]


def test_a_streamed_target_is_judged_by_its_step_over_one_control_period_whatever_its_log_time() -> None:
    period, step, target = PERIOD, WAIST_SPEED * PERIOD, streamed

    # Two targets logged 0.2 ms apart (a late reader) each one step on: clean, as a servo takes them.
    assert audit(target(0.0, 0.0), target(0.0002, step), target(0.0004, 2 * step)).clean
    over = audit(target(0.0, 0.0), target(period, 1.2 * step)).violations
    assert len(over) == 1 and '(x1.2000)' in over[0], over
    # After the stream was idle, a new plan starts from nothing known.
    assert audit(target(0.0, 0.0), target(10 * period, 1.2 * step)).clean


def test_the_audit_command_says_why_it_cannot_audit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['audit', str(tmp_path / 'missing')]) == 2
    assert 'no such bag' in capsys.readouterr().err
    empty = tmp_path / 'episodes'
    empty.mkdir()
    assert main(['audit', str(empty)]) == 2
    assert 'no episode bag in it' in capsys.readouterr().err


BASE_S = 1_800_000_000.0
"""A wall-clock log time, as a bag holds (nanoseconds since 1970: ~1.8e18)."""


def test_each_arm_is_followed_on_its_own_and_every_violation_is_kept_with_its_exact_words() -> None:
    right = ArmCommand(
        '/right_arm_controller/joint_trajectory',
        'right',
        round(BASE_S * NS),
        ROW * np.arange(1, 3),
        joints=np.tile(HOME[ARM_SLICE['right']], (2, 1)),
    )
    left = turning(BASE_S, speed=0.0, rows=2)
    # The right arm 0.5 rad away from the left's reference: judged from its own, it is at rest.
    right_moved = dataclasses.replace(right, log_ns=right.log_ns + round(ROW * NS))
    assert audit(left, right, right_moved).clean
    beyond = dataclasses.replace(left, joints=left.joints.copy())
    beyond.joints[1, 5] = 3.2  # the wrist's rotation, limit 3.14158 (the TCP stays on its axis, in the box)
    report = audit(beyond, beyond)
    shown = np.round(beyond.joints[1], 4).tolist()
    assert report.violations == (f'{left.topic} at {left.log_ns} point 1: {shown} outside the joint limits',) * 2
    assert report.points == 4


def test_the_limits_themselves_pass_and_a_hair_beyond_them_does_not() -> None:
    at_limits = turning(0.0, speed=0.0, rows=2)
    at_limits.joints[0, 1] = LIMITS.upper[1]
    at_limits.joints[1, 1] = LIMITS.lower[1]
    at_limits.joints[:, 0] = 0.0
    report = audit(at_limits, limits=dataclasses.replace(LIMITS, velocity=np.full(14, 1e6), workspace=None))
    assert report.clean, report.violations
    tcp = profile_tcp(PROFILE)(HOME)[0]
    exact = WorkspaceBox(lower=tuple(tcp), upper=tuple(tcp + 0.1))  # the home TCP on the box's lower corner
    assert audit(turning(0.0, speed=0.0, rows=1), limits=dataclasses.replace(LIMITS, workspace=exact)).clean
    below = WorkspaceBox(lower=tuple(tcp + 1e-4), upper=tuple(tcp + 0.1))
    (item,) = audit(turning(0.0, speed=0.0, rows=1), limits=dataclasses.replace(LIMITS, workspace=below)).violations
    assert item.endswith(f'point 0: TCP {np.round(tcp, 4).tolist()} outside the workspace box'), item
    topic = '/left_gripper_controller/joint_trajectory'
    closed = ArmCommand(topic, 'left', 0, ROW * np.arange(1, 3), grips=np.array([0.0, 0.0]))
    assert audit(closed).clean and audit(closed).points == 2
    for broken in ([np.nan, 0.0], [0.0, -1e-3]):
        assert audit(dataclasses.replace(closed, grips=np.array(broken))).violations[0].endswith('outside 0..1')


def test_a_segment_at_the_slack_passes_and_the_words_name_its_speed_and_span() -> None:
    limit = WAIST_SPEED * 1.05 + 1e-3
    first = turning(0.0, speed=0.0, rows=1)
    assert audit(first, turning(ROW, speed=limit - 5e-4, rows=1)).clean
    (item,) = audit(first, turning(ROW, speed=limit + 5e-4, rows=1)).violations
    assert item.endswith(f'point 0: {limit + 5e-4:.4f} per s over 60.0 ms (limit {WAIST_SPEED:g})'), item


def test_a_streamed_target_exactly_one_period_of_the_limit_passes_and_a_late_one_over_it_does_not() -> None:
    period, step = PERIOD, WAIST_SPEED * PERIOD

    def target(log_s: float, waist: float) -> ArmCommand:
        return streamed(BASE_S + log_s, waist)

    assert audit(target(0.0, 0.0), target(period, step), target(2 * period, 2 * step)).clean
    (item,) = audit(target(0.0, 0.0), target(period + 0.002, 1.5 * step)).violations  # a tick 2 ms late
    assert item.endswith(f'target: {1.5 * step:.5f} in one control period of {period * 1e3:.1f} ms (x1.5000)'), item


def test_a_message_with_the_arm_and_its_gripper_counts_and_reports_both() -> None:
    """A Piper command carries both: each part is counted and each violation kept."""
    period = 1.0 / PROFILE.control_rate
    joints = LEFT.copy()[None, :]
    first = ArmCommand('/stream', 'left', 0, np.array([period]), joints=joints, grips=np.array([1.0]), streamed=True)
    joints_beyond = joints.copy()
    joints_beyond[0, 5] = 3.212345  # shown to 4 decimals: 3.2123
    second = dataclasses.replace(first, log_ns=round(period * NS), joints=joints_beyond, grips=np.array([0.0]))
    report = audit(first, second)
    assert report.points == 4
    ratio = 1.0 / (LIMITS.velocity[6] * period)
    assert [item.split(' ', 3)[-1] for item in report.violations] == [
        f'point 0: {[*np.round(joints_beyond[0, :5], 4).tolist(), 3.2123]} outside the joint limits',
        f'gripper target: 1.00000 in one control period of {period * 1e3:.1f} ms (x{ratio:.4f})',
    ], report.violations
