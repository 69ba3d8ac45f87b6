"""The JointTrajectoryController interface check (``robofollow_ros.safety.jtc``) on hand-built messages: rclpy
messages, messages read back from CDR through the rosbags typestore (what a bag holds), and plain views; the ways
today's graph breaks the interface (an empty trajectory as the hold, a stamp that carries the answered
observation's time, TRANSIENT_LOCAL commands) are caught, and a hold from the safety filter passes."""

from __future__ import annotations

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore
from safety_support import ROW, aloha_limits, home

from robofollow_ros.safety.command_filter import hold_command
from robofollow_ros.safety.jtc import (
    PointView,
    TrajectoryView,
    check_command_qos,
    check_trajectory,
    seconds_due,
    trajectory_view,
)
from robofollow_ros.state_layout import ARMS, GENERIC_LAYOUT
from robofollow_ros.units import NS_PER_S

JOINTS = GENERIC_LAYOUT.command_joints('left')
TYPESTORE = get_typestore(Stores.LATEST)
JOINT_TRAJECTORY = 'trajectory_msgs/msg/JointTrajectory'


def rclpy_message(positions: np.ndarray, *, stamp_ns: int, times_s: list[float], names=JOINTS):
    from builtin_interfaces.msg import Duration, Time
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    message = JointTrajectory()
    message.header.stamp = Time(sec=stamp_ns // NS_PER_S, nanosec=stamp_ns % NS_PER_S)
    message.joint_names = list(names)
    for row, seconds in zip(positions, times_s, strict=True):
        ns = round(seconds * NS_PER_S)
        message.points.append(
            JointTrajectoryPoint(
                positions=[float(v) for v in row], time_from_start=Duration(sec=ns // NS_PER_S, nanosec=ns % NS_PER_S)
            )
        )
    return message


def bag_message(positions: np.ndarray, *, stamp_ns: int, times_s: list[float], names=JOINTS):
    """The message as a bag reader gets it: built with the typestore, serialised to CDR and read back."""
    types = TYPESTORE.types
    time, duration = types['builtin_interfaces/msg/Time'], types['builtin_interfaces/msg/Duration']
    empty = np.zeros(0)
    points = [
        types['trajectory_msgs/msg/JointTrajectoryPoint'](
            positions=np.asarray(row, dtype=np.float64),
            velocities=empty,
            accelerations=empty,
            effort=empty,
            time_from_start=duration(*divmod(round(seconds * NS_PER_S), NS_PER_S)),
        )
        for row, seconds in zip(positions, times_s, strict=True)
    ]
    message = types[JOINT_TRAJECTORY](
        header=types['std_msgs/msg/Header'](stamp=time(*divmod(stamp_ns, NS_PER_S)), frame_id=''),
        joint_names=list(names),
        points=points,
    )
    return TYPESTORE.deserialize_cdr(TYPESTORE.serialize_cdr(message, JOINT_TRAJECTORY), JOINT_TRAJECTORY)


BUILDERS = pytest.mark.parametrize('build', [rclpy_message, bag_message], ids=['rclpy', 'bag'])


def kinds(problems) -> list[str]:
    return [problem.kind for problem in problems]


@BUILDERS
def test_a_chunk_stamped_zero_with_rising_times_passes(build):
    rows = np.zeros((5, 7))
    message = build(rows, stamp_ns=0, times_s=[ROW * (i + 1) for i in range(5)])
    assert check_trajectory(message, controller_joints=JOINTS, received_ns=10 * NS_PER_S) == ()


@BUILDERS
def test_a_future_start_time_passes(build):
    message = build(np.zeros((2, 7)), stamp_ns=12 * NS_PER_S, times_s=[ROW, 2 * ROW])
    assert check_trajectory(message, controller_joints=JOINTS, received_ns=11 * NS_PER_S) == ()


@BUILDERS
def test_todays_hold_an_empty_trajectory_is_caught(build):
    """The bridge holds the arms with an empty JointTrajectory; the JTC rejects it and the arm keeps going."""
    message = build(np.zeros((0, 7)), stamp_ns=3 * NS_PER_S, times_s=[])
    assert kinds(check_trajectory(message, controller_joints=JOINTS)) == ['empty_trajectory']


@BUILDERS
def test_points_are_due_after_their_stamp_or_after_arrival_for_a_stamp_of_zero(build):
    """A window stamped with its chunk's start has its points due on the chunk's timeline whenever it arrives; one
    stamped zero is timed from its arrival (a bag's log time, a listener's source timestamp)."""
    arrival = 1_700_000_000 * NS_PER_S
    now = build(np.zeros((2, 7)), stamp_ns=0, times_s=[0.06, 0.12])
    assert seconds_due(now, after_ns=arrival) == pytest.approx([0.06, 0.12], abs=1e-9)
    window = build(np.zeros((2, 7)), stamp_ns=arrival - 250_000_000, times_s=[0.3, 0.36])
    assert seconds_due(window, after_ns=arrival) == pytest.approx([0.05, 0.11], abs=1e-9)


@BUILDERS
def test_todays_stamp_the_answered_observations_time_is_caught(build):
    """The bridge stamps each chunk with the stamp of the observation it answers; on a wall clock that time has
    passed by the policy's latency when the chunk arrives, so the JTC starts the chunk in the past (it skips to the
    row due now); a stamp far enough back (an id) makes it drop the chunk whole."""
    observation_ns = 1_700_000_000 * NS_PER_S
    times = [ROW * (i + 1) for i in range(50)]
    late = build(np.zeros((50, 7)), stamp_ns=observation_ns, times_s=times)
    assert kinds(check_trajectory(late, controller_joints=JOINTS, received_ns=observation_ns + NS_PER_S // 3)) == [
        'point_in_past'
    ]
    # A window of a chunk stamped with the chunk's start: its first point still ahead, nothing is skipped.
    window = build(np.zeros((3, 7)), stamp_ns=observation_ns, times_s=[0.36, 0.42, 0.48])
    assert check_trajectory(window, controller_joints=JOINTS, received_ns=observation_ns + NS_PER_S // 3) == ()
    as_id = build(np.zeros((50, 7)), stamp_ns=7, times_s=times)
    assert kinds(check_trajectory(as_id, controller_joints=JOINTS, received_ns=observation_ns)) == [
        'point_in_past',
        'ends_in_past',
    ]


@BUILDERS
def test_joints_must_be_the_controllers_each_once(build):
    names = (*JOINTS[:5], JOINTS[0], 'elbow_of_someone_else')
    message = build(np.zeros((1, 7)), stamp_ns=0, times_s=[ROW], names=names)
    problems = check_trajectory(message, controller_joints=JOINTS)
    assert kinds(problems) == ['duplicate_joint', 'unknown_joint', 'missing_joint']
    assert 'left_joint6' in problems[2].detail and 'left_gripper' in problems[2].detail
    partial = build(np.zeros((1, 6)), stamp_ns=0, times_s=[ROW], names=JOINTS[:6])
    assert check_trajectory(partial, controller_joints=JOINTS, allow_partial_joints=True) == ()
    assert kinds(check_trajectory(partial, controller_joints=JOINTS)) == ['missing_joint']


@BUILDERS
def test_time_from_start_must_be_positive_and_strictly_increasing(build):
    message = build(np.zeros((4, 7)), stamp_ns=0, times_s=[0.0, 0.06, 0.06, 0.05])
    problems = check_trajectory(message, controller_joints=JOINTS)
    assert [(p.kind, p.point) for p in problems] == [
        ('time_not_positive', 0),
        ('time_not_increasing', 2),
        ('time_not_increasing', 3),
    ]


@BUILDERS
def test_positions_must_be_finite_and_one_per_joint(build):
    rows = [np.zeros(7), np.array([0.0, np.nan, 0, 0, 0, 0, 0]), np.zeros(6)]
    message = build(rows, stamp_ns=0, times_s=[0.06, 0.12, 0.18])
    assert [(p.kind, p.point) for p in check_trajectory(message, controller_joints=JOINTS)] == [
        ('non_finite', 1),
        ('positions_size', 2),
    ]


def test_velocities_sizes_end_at_rest_and_stamp_fields():
    points = (
        PointView(positions=(0.0,) * 7, time_from_start_ns=60_000_000, velocities=(0.1,) * 3),
        PointView(positions=(0.0,) * 7, time_from_start_ns=120_000_000, velocities=(0.2,) * 7),
    )
    view = TrajectoryView(stamp_ns=0, joint_names=JOINTS, points=points)
    assert kinds(check_trajectory(view, controller_joints=JOINTS)) == ['velocities_size', 'nonzero_end_velocity']
    assert kinds(check_trajectory(view, controller_joints=JOINTS, allow_nonzero_end_velocity=True)) == [
        'velocities_size'
    ]
    bad = bag_message(np.zeros((1, 7)), stamp_ns=0, times_s=[ROW])
    bad.header.stamp.nanosec = 2 * NS_PER_S
    assert 'stamp_invalid' in kinds(check_trajectory(bad, controller_joints=JOINTS))


def test_the_safety_filters_hold_is_a_valid_one_point_trajectory():
    decision = hold_command(home(), aloha_limits(), row_period_s=ROW)
    layout = GENERIC_LAYOUT
    for arm in ARMS:
        positions = layout.arm_command(decision.command.positions, arm)
        message = rclpy_message(
            positions, stamp_ns=0, times_s=list(decision.command.times), names=layout.command_joints(arm)
        )
        assert check_trajectory(message, controller_joints=layout.command_joints(arm), received_ns=5 * NS_PER_S) == ()
        assert len(trajectory_view(message).points) == 1


@pytest.mark.parametrize(
    ('durability', 'reliability', 'expected'),
    [
        ('volatile', 'reliable', []),
        ('transient_local', 'reliable', ['qos_durability']),
        (2, 1, []),
        (1, 2, ['qos_durability', 'qos_reliability']),
        ('VOLATILE', 'best_effort', ['qos_reliability']),
    ],
)
def test_command_topics_must_be_volatile_and_reliable(durability, reliability, expected):
    assert kinds(check_command_qos(durability=durability, reliability=reliability)) == expected


def test_a_filtered_chunk_becomes_one_valid_trajectory_per_arm_stamped_now():
    from robofollow_ros.robot.description import joint_layout
    from robofollow_ros.safety.jtc import arm_trajectories

    layout = joint_layout('aloha')
    positions = np.tile(home().positions, (3, 1))
    positions[:, 6] = [1.0, 0.5, 0.0]
    views = arm_trajectories(positions, np.array([0.06, 0.12, 0.18]), layout)
    left = views['left']
    assert left.stamp_ns == 0 and left.joint_names == layout.command_joints('left')
    assert [point.time_from_start_ns for point in left.points] == [60_000_000, 120_000_000, 180_000_000]
    assert [point.positions[6] for point in left.points] == pytest.approx(
        [layout.gripper_scale, layout.gripper_scale / 2, 0]
    )
    for arm, view in views.items():
        assert check_trajectory(view, controller_joints=layout.command_joints(arm), received_ns=NS_PER_S) == ()
