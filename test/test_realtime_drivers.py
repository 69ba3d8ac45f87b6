"""The real-time bridge's driver writers (realcell/drivers.py) over real DDS: what each driver kind puts on its
topics."""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from graph_helpers import private_node, wait_until
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from robofollow_ros.errors import GraphError
from robofollow_ros.realcell.drivers import (
    PLAN_LEAD,
    WINDOW_SECONDS,
    WINDOWS_PER_HORIZON,
    JtcDriver,
    StopFrom,
    StreamedDriver,
    make_driver,
    message_class,
)
from robofollow_ros.robot.profiles import RobotProfile, load_profile
from robofollow_ros.ros import qos
from robofollow_ros.safety.command_filter import Command
from robofollow_ros.safety.controlled_stop import FOLLOWING_WITHIN, controlled_stop, stop_decelerations
from robofollow_ros.safety.jtc import check_command_qos, check_trajectory, seconds_due, trajectory_view
from robofollow_ros.safety.profile_limits import limits_from_profile
from robofollow_ros.state_layout import GRIP_INDEX
from robofollow_ros.units import NS_PER_S

pytestmark = pytest.mark.ros
NOMINAL_DOMAIN = 56


def stop_from(profile: RobotProfile) -> StopFrom:
    """The safety layer's controlled stop for ``profile`` (as ``SafeMotion`` gives its driver)."""
    limits = limits_from_profile(profile, max_state_age_s=0.2, gripper_velocity=20.0)
    deceleration = stop_decelerations(limits)
    return lambda p, v: controlled_stop(p, v, limits, deceleration=deceleration, row_period_s=profile.row_period)


def driver_for(node: Node, profile: RobotProfile, **options: Any) -> JtcDriver | StreamedDriver:
    return make_driver(node, profile, stop_from=stop_from(profile), **options)


@pytest.fixture
def ros() -> Iterator[Node]:
    with private_node(NOMINAL_DOMAIN, 'drivers_test', spin=True) as (node, _executor):
        yield node


def test_ros2_control_driver_writes_one_trajectory_per_controller_in_driver_units(ros: Node) -> None:
    profile = load_profile('aloha_ros2_control')
    driver = driver_for(ros, profile)
    assert isinstance(driver, JtcDriver)
    got: dict[str, JointTrajectory] = {}
    for topic in driver.topics():
        ros.create_subscription(JointTrajectory, topic, lambda m, t=topic: got.setdefault(t, m), qos.ARM_COMMANDS)
    wait_until(driver.connected, timeout=60, what='the readers to match')
    rows = np.tile(profile.home_state(), (2, 1))
    rows[1, 0] += 0.01
    rows[:, 6] = [0.5, 0.25]  # left gripper, normalised
    driver.send(Command(positions=rows, times=np.array([0.06, 0.12]), hold=False), start=profile.home_state())
    wait_until(lambda: len(got) == 4, timeout=30, what='four trajectories')
    for topic, info in ((t, ros.get_publishers_info_by_topic(t)) for t in driver.topics()):
        (writer,) = info
        assert (
            check_command_qos(
                durability=writer.qos_profile.durability.name, reliability=writer.qos_profile.reliability.name
            )
            == ()
        )
        assert check_trajectory(got[topic], controller_joints=driver.controller_joints()[topic]) == ()
    left = got['/left_arm_controller/joint_trajectory']
    assert list(left.joint_names) == list(profile.arms['left'].joints)
    assert left.points[1].positions[0] == pytest.approx(0.01)
    assert [(p.time_from_start.sec, p.time_from_start.nanosec) for p in left.points] == [
        (0, 60_000_000),
        (0, 120_000_000),
    ]
    gripper = got['/left_gripper_controller/joint_trajectory']
    assert list(gripper.joint_names) == ['left_left_finger']
    assert [p.positions[0] for p in gripper.points] == pytest.approx([0.018, 0.009])  # 0 .. 0.036 m


def test_a_long_chunk_goes_to_a_jtc_in_short_windows_that_each_end_at_rest(ros: Node) -> None:
    # A 3 s chunk sent whole keeps the arm moving 3 s after the bridge dies; in windows it stops within the window
    # and the controlled stop that closes it. Stamped with the chunk's start, every window puts each row at the time
    # the chunk has it, whenever the window arrives; stamped zero, each is timed from its arrival.
    profile = load_profile('aloha_ros2_control')
    topic = profile.arms['left'].command.topic
    start = profile.home_state()
    rows = np.tile(start, (50, 1))
    rows[:, 0] += 0.05 * np.arange(1, 51)  # the left waist at 0.83 rad/s
    command = Command(positions=rows, times=0.06 * np.arange(1, 51), hold=False)
    got: list[tuple[float, int, JointTrajectory]] = []
    for other in ('left_gripper', 'right_arm', 'right_gripper'):
        ros.create_subscription(
            JointTrajectory, f'/{other}_controller/joint_trajectory', lambda m: None, qos.ARM_COMMANDS
        )
    reader = ros.create_subscription(
        JointTrajectory,
        topic,
        lambda m, info: got.append((time.monotonic(), info['source_timestamp'], m)),
        qos.ARM_COMMANDS,
    )
    settings = ((0.0, True), (WINDOW_SECONDS, True), (WINDOW_SECONDS, False))
    drivers = [driver_for(ros, profile, window=window, stamped=stamped) for window, stamped in settings]
    wait_until(
        lambda: all(d.connected() for d in drivers) and reader.get_publisher_count() == len(drivers),
        timeout=60,
        what='the readers and writers to match',
    )
    for (window, stamped), driver in zip(settings, drivers, strict=True):
        got.clear()
        try:
            sent_ns = ros.get_clock().now().nanoseconds
            driver.send(command, start=start)
            time.sleep(1.0)
        finally:
            driver.close()  # the bridge dies: no window after this
        closed = time.monotonic()
        time.sleep(0.3)
        horizons = [float(seconds_due(m, after_ns=published_ns)[-1]) for _, published_ns, m in got]
        if window == 0.0:
            assert len(got) == 1 and len(got[0][2].points) == 50 and horizons == [pytest.approx(3.0, abs=0.01)]
            continue
        sends = 1 + 1.0 / (WINDOW_SECONDS / WINDOWS_PER_HORIZON)  # the first at once, then one every 50 ms for 1 s
        assert 0.6 * sends <= len(got) <= sends + 1, len(got)
        stamps = {trajectory_view(m).stamp_ns for _, _, m in got}
        if stamped:
            (stamp,) = stamps
            # The chunk's start on the ROS clock, a lead after it was sent: the first window arrives before it.
            assert sent_ns + PLAN_LEAD * NS_PER_S <= stamp <= sent_ns + PLAN_LEAD * NS_PER_S + 50_000_000
        else:
            assert stamps == {0}
        for _, published_ns, message in got:  # each window's first point still ahead when it is sent
            assert (
                check_trajectory(message, controller_joints=driver.controller_joints()[topic], received_ns=published_ns)
                == ()
            )
            waist = [p.positions[0] for p in message.points]
            steps = np.diff(waist)
            assert (steps >= -1e-9).all() and steps[-1] < steps[0]  # on along the chunk, slowing into the stop
            if stamped:
                row = round((waist[0] - start[0]) / 0.05)  # the first point is a row of the chunk, due when it has it
                assert 1 <= row <= 50 and waist[0] == pytest.approx(start[0] + 0.05 * row, abs=1e-9)
                first = message.points[0].time_from_start
                assert abs(first.sec * NS_PER_S + first.nanosec - row * 60_000_000) <= 1
        arrival, _, last = got[-1]
        ends_at = arrival + horizons[-1]
        assert ends_at - closed < WINDOW_SECONDS + 0.5 + 0.1  # the window, the stop, and the transport
        started = got[0][0]
        reached = last.points[-1].positions[0]
        assert reached < start[0] + 0.05 * (ends_at - started) / 0.06  # short of where the chunk would have gone


def test_piper_driver_streams_interpolated_rows_at_the_control_rate(ros: Node) -> None:
    profile = load_profile('piper')
    driver = driver_for(ros, profile)
    assert isinstance(driver, StreamedDriver)
    got: list[tuple[float, JointState]] = []
    ros.create_subscription(
        JointState, '/left_piper/joint_ctrl_single', lambda m: got.append((time.monotonic(), m)), qos.ARM_COMMANDS
    )
    wait_until(
        lambda: driver.pubs['/left_piper/joint_ctrl_single'].get_subscription_count() > 0, timeout=60, what='the reader'
    )
    start = profile.home_state()
    rows = np.tile(start, (10, 1))  # 0.6 s: many control periods between the first and the last row
    rows[:, 0] += np.linspace(0.02, 0.2, 10)
    rows[:, 6] = np.linspace(0.9, 0.0, 10)
    driver.send(Command(positions=rows, times=np.arange(1, 11) * 0.06, hold=False), start=start)
    waist0 = start[0]
    wait_until(lambda: got and got[-1][1].position[0] == pytest.approx(waist0 + 0.2), timeout=30, what='the last row')
    time.sleep(0.2)
    count = len(got)
    time.sleep(0.2)
    assert len(got) == count  # the stream stops once the last row went out
    first = got[0][1]
    assert list(first.name) == [*profile.arms['left'].joints, 'joint7']
    assert first.velocity[6] == 50.0  # speed_percent
    waist = [message.position[0] for _, message in got]
    assert waist[0] == pytest.approx(waist0, abs=0.02)  # the first target goes out at once, from the measured state
    assert all(b >= a for a, b in itertools.pairwise(waist))  # interpolated, never beyond the rows
    assert got[-1][1].position[6] == pytest.approx(0.0)  # closed gripper, metres
    assert any(waist0 < message.position[0] < waist0 + 0.2 for _, message in got)  # rows between the knots


def test_a_driver_message_type_that_is_not_installed_is_refused_in_one_line() -> None:
    """A driver message package may be missing (interbotix_xs_msgs has no wheel): named in one line, no traceback."""
    assert message_class('sensor_msgs/msg/JointState') is JointState
    with pytest.raises(GraphError, match='message type robofollow_absent_msgs/msg/Command is not installed'):
        message_class('robofollow_absent_msgs/msg/Command')


def test_interbotix_driver_streams_the_arm_group_and_the_gripper_motor_angle(ros: Node) -> None:
    messages = pytest.importorskip('interbotix_xs_msgs.msg', reason='built by scripts/build_interfaces.sh')
    profile = load_profile('aloha_interbotix')
    driver = driver_for(ros, profile)
    assert isinstance(driver, StreamedDriver)
    arm: list[object] = []
    gripper: list[object] = []
    ros.create_subscription(messages.JointGroupCommand, '/follower_right/commands/joint_group', arm.append, 10)
    ros.create_subscription(messages.JointSingleCommand, '/follower_right/commands/joint_single', gripper.append, 10)
    ros.create_subscription(messages.JointGroupCommand, '/follower_left/commands/joint_group', lambda _: None, 10)
    ros.create_subscription(messages.JointSingleCommand, '/follower_left/commands/joint_single', lambda _: None, 10)
    wait_until(driver.connected, timeout=60, what='the readers')
    start = profile.home_state()
    rows = np.tile(start, (3, 1))
    rows[:, 7] += [0.05, 0.1, 0.15]  # right waist
    rows[:, 13] = 0.0  # right gripper closed
    driver.send(Command(positions=rows, times=np.arange(1, 4) * 0.06, hold=False), start=start)
    wait_until(lambda: arm and arm[-1].cmd[0] == pytest.approx(0.15), timeout=30, what='the last row')
    wait_until(lambda: gripper and gripper[-1].cmd == pytest.approx(0.6197), timeout=30, what='the closed gripper')
    assert arm[-1].name == 'arm' and len(arm[-1].cmd) == 6
    assert gripper[0].name == 'gripper' and 0.6197 <= gripper[0].cmd <= 1.6214  # motor angle, rad


def test_the_stream_keeps_its_rate_while_the_bridges_callbacks_are_busy(ros: Node) -> None:
    """The bridge's callbacks run one at a time (an events executor): the stream has a thread of its own, so a
    callback that takes half a second (a camera image to decode on a loaded machine) does not stall the arm."""
    profile = load_profile('piper')
    driver = driver_for(ros, profile)
    assert isinstance(driver, StreamedDriver)
    topic = '/left_piper/joint_ctrl_single'
    with private_node(NOMINAL_DOMAIN, 'drivers_listener', spin=True) as (listener, _executor):
        arrivals: list[float] = []
        listener.create_subscription(JointState, topic, lambda _m: arrivals.append(time.monotonic()), 100)
        wait_until(lambda: driver.pubs[topic].get_subscription_count() > 0, timeout=60, what='the reader')
        busy = threading.Event()

        def block() -> None:
            timer.cancel()
            busy.set()
            time.sleep(0.6)

        timer = ros.create_timer(0.001, block)
        wait_until(busy.is_set, timeout=30, what="the bridge's executor to be busy")
        start = profile.home_state()
        rows = np.tile(start, (8, 1))
        rows[:, 0] += np.linspace(0.01, 0.08, 8)
        # A 2 s plan: the stream skips the grid slots it was late for, so a plan barely longer than the rows awaited
        # could end short of them on a loaded machine.
        driver.send(Command(positions=rows, times=np.arange(1, 9) * 0.25, hold=False), start=start)
        wait_until(lambda: len(arrivals) >= 0.4 * profile.control_rate, timeout=30, what='the streamed rows')
        driver.close()
    gaps = np.diff(arrivals[: int(0.4 * profile.control_rate)])
    assert gaps.max() < 0.25, f'the stream stalled for {gaps.max():.3f} s'


def piper_stream_at_one_radian_per_second(ros: Node, profile: RobotProfile) -> tuple[StreamedDriver, list[JointState]]:
    """A Piper stream limited to 1 rad/s on every column (normalised for the grippers: 0.06 rad per row), and the
    left arm's messages as they arrive."""
    driver = StreamedDriver(ros, profile, velocity=np.full(14, 1.0))
    topic = '/left_piper/joint_ctrl_single'
    got: list[JointState] = []
    ros.create_subscription(JointState, topic, got.append, qos.ARM_COMMANDS)
    wait_until(lambda: driver.pubs[topic].get_subscription_count() > 0, timeout=60, what='the reader')
    return driver, got


def test_a_stream_goes_on_from_its_last_target_while_the_arm_follows_it_and_keeps_the_velocity_limit(ros) -> None:
    """A position stream's servos follow its last target: a new chunk starts there, not at a measurement that lags
    it (which pulled the reference back at every chunk), unless the arm is measured far from it (blocked, moved by
    hand); and its first segment is lengthened to keep the velocity limits from there."""
    profile = load_profile('piper')
    driver, got = piper_stream_at_one_radian_per_second(ros, profile)
    home = profile.home_state()
    try:

        def stream(rows: np.ndarray, start: np.ndarray) -> list[float]:
            """Send ``rows`` from a measured ``start``; the left waist targets streamed until the last row."""
            got.clear()
            driver.send(Command(positions=rows, times=np.arange(1, len(rows) + 1) * 0.06, hold=False), start=start)
            last = float(rows[-1, 0])
            wait_until(lambda: got and got[-1].position[0] == pytest.approx(last), timeout=30, what='the last row')
            return [message.position[0] for message in got]

        first = np.tile(home, (3, 1))
        first[:, 0] = [0.05, 0.1, 0.15]
        stream(first, home)
        lagging = home.copy()
        lagging[0] = 0.13  # measured 0.02 rad behind the last target
        second = np.tile(home, (2, 1))
        second[:, 0] = [0.18, 0.21]
        waist = stream(second, lagging)
        assert waist[0] == pytest.approx(0.15, abs=1e-3)  # on from the last target, not back to 0.13
        assert all(b >= a - 1e-9 for a, b in itertools.pairwise(waist))

        blocked = home.copy()
        blocked[0] = 0.05  # 0.16 rad from the last target: the arm does not follow it
        third = np.tile(home, (1, 1))
        third[0, 0] = 0.08
        assert stream(third, blocked)[0] == pytest.approx(0.05, abs=1e-3)

        far = np.tile(home, (1, 1))
        far[0, 0] = 0.38  # 0.30 rad from the last target in one row: 5 rows' worth at 1 rad/s
        following = home.copy()
        following[0] = 0.08  # at the last target
        waist = stream(far, following)
        period = 1.0 / profile.control_rate
        assert max(np.diff(waist)) <= 1.0 * period + 1e-9
        assert len(waist) >= 0.30 / (1.0 * period) * 0.8
    finally:
        driver.close()


def waist_ramp(home: np.ndarray, rows: int) -> Command:
    """The left waist from ``home`` at exactly the 1 rad/s limit, over ``rows`` rows of 60 ms."""
    positions = np.tile(home, (rows, 1))
    positions[:, 0] = home[0] + np.arange(1, rows + 1) * 0.06
    return Command(positions=positions, times=np.arange(1, rows + 1) * 0.06, hold=False)


@contextlib.contextmanager
def ramping_piper(ros: Node, rows: int) -> Iterator[tuple[StreamedDriver, Command]]:
    """A Piper stream at 1 rad/s sent ``waist_ramp``; on leaving, the streamed waist targets are checked: each within
    the limit times one control period of the one before, however the test delayed the stream."""
    profile = load_profile('piper')
    driver, got = piper_stream_at_one_radian_per_second(ros, profile)
    ramp = waist_ramp(profile.home_state(), rows)
    try:
        driver.send(ramp, start=profile.home_state())
        yield driver, ramp
        last = float(driver.plan[2][-1][0]) if driver.plan is not None else float(ramp.positions[-1, 0])
        wait_until(lambda: got and got[-1].position[0] == pytest.approx(last), timeout=30, what='the last target')
    finally:
        driver.close()
    waist = [message.position[0] for message in got]
    period = 1.0 / profile.control_rate
    assert max(np.diff(waist)) <= 1.0 * period + 1e-9, max(np.diff(waist)) / period


def test_a_late_tick_moves_no_further_than_the_velocity_limit_over_one_control_period(ros: Node) -> None:
    """A tick that comes late (the thread kept from the lock, a loaded machine) took the plan as far as its clock
    had gone: the fuzz saw stream targets up to 0.5 % over the limit per control period, and a tick 50 ms late
    asked the servos for 2.5 periods' travel in one. Each target now moves at most the limit times the period."""
    with ramping_piper(ros, 10) as (driver, _ramp):
        time.sleep(0.15)
        with driver.lock:
            time.sleep(0.05)  # the next tick comes 2.5 periods late


@contextlib.contextmanager
def stream_behind_its_plan(ros: Node) -> Iterator[tuple[StreamedDriver, np.ndarray]]:
    """``ramping_piper`` whose stream a late tick left more than ``FOLLOWING_WITHIN`` behind its plan: the driver (its
    lock held) and where the plan has the arm now."""
    with ramping_piper(ros, 20) as (driver, _ramp):
        time.sleep(0.15)
        with driver.lock:
            time.sleep(0.1)  # the stream falls 0.1 rad behind its plan
            assert driver.plan is not None and driver.last is not None
            planned = driver.target(time.monotonic() - driver.plan[0])[0]
            assert planned[0] - driver.last[0] > FOLLOWING_WITHIN  # the lag these tests are about
            yield driver, planned


def test_a_chunk_that_starts_where_the_plan_has_the_arm_goes_on_from_a_stream_left_behind_by_a_late_tick(
    ros: Node,
) -> None:
    """A late tick leaves the stream behind its plan; the bridge starts the next chunk where the plan has the arm
    now. Taken for an arm that does not follow (more than ``FOLLOWING_WITHIN`` from the last target), the chunk's
    first target jumped the lag in one period (the fuzz: x1.16 of the limit). It now goes on from the last target."""
    with stream_behind_its_plan(ros) as (driver, planned):
        onwards = np.tile(planned, (3, 1))
        onwards[:, 0] = planned[0] + np.arange(1, 4) * 0.06
        driver.send(Command(positions=onwards, times=np.arange(1, 4) * 0.06, hold=False), start=planned)


def test_a_stop_ahead_of_a_stream_behind_its_plan_goes_on_from_the_last_target(ros: Node) -> None:
    """The bridge stops the arms from where its plan has them; a stream behind that plan (late ticks) is further back
    than ``FOLLOWING_WITHIN`` from there, and from where the plan has the arm on the stream's own clock (its first
    segment lengthened): taken for an arm that does not follow, the stop jumped the lag at once (the fuzz under
    load, x2.7 in one period). On the plan's way, the stop goes on from the last target."""
    with stream_behind_its_plan(ros) as (driver, planned):
        assert driver.plan is not None
        ahead = planned.copy()
        ahead[0] += 0.1  # further along the plan's way than the stream and its plan's clock
        assert ahead[0] < driver.plan[2][-1][0] - FOLLOWING_WITHIN  # and short of its end
        stop = np.tile(ahead, (2, 1))
        stop[1, 0] += 0.02
        driver.send(Command(positions=stop, times=np.array([0.04, 0.08]), hold=True), start=ahead)
        assert driver.last is not None and driver.last[0] < planned[0]  # its first target: the last one


def test_a_hold_at_the_end_of_a_plan_the_stream_is_behind_goes_there_within_the_velocity_limit(ros: Node) -> None:
    """The bridge holds at the last commanded point once a plan's time is over; a stream behind that plan (late ticks)
    jumped there in one period (the fuzz: a gripper at x2.05 of its speed). It now goes on there at the limit."""
    with ramping_piper(ros, 5) as (driver, ramp):
        time.sleep(0.1)
        with driver.lock:
            time.sleep(0.25)  # the plan's time is over; the stream is far behind its end
            assert driver.plan is not None and driver.last is not None
            end = ramp.positions[-1]
            assert end[0] - driver.last[0] > FOLLOWING_WITHIN
            driver.send(Command(positions=end[None, :], times=np.array([0.06]), hold=True), start=end)


def test_a_hold_for_an_arm_that_does_not_follow_streams_the_grippers_on_from_their_last_targets(ros: Node) -> None:
    """The fuzz (the Piper under load): a hold for an arm measured far from its command streamed from where it was
    measured, as it should, and took the grippers along: a gripper left behind by late ticks jumped to its command's
    end, x3.4 of its speed in one control period. The grippers now go there from their last targets at their speed."""
    profile = load_profile('piper')
    driver, got = piper_stream_at_one_radian_per_second(ros, profile)
    home = profile.home_state()
    grip = GRIP_INDEX['left']
    closing = np.tile(home, (5, 1))
    closing[:, grip] = home[grip] - np.arange(1, 6) * 0.06  # the left gripper closing at its 1-per-second limit
    try:
        driver.send(Command(positions=closing, times=np.arange(1, 6) * 0.06, hold=False), start=home)
        time.sleep(0.1)
        with driver.lock:
            time.sleep(0.25)  # the plan's time is over; the stream's gripper is far behind its end
            assert driver.last is not None and driver.last[grip] - closing[-1, grip] > FOLLOWING_WITHIN
            elsewhere = closing[-1].copy()
            elsewhere[0] += 0.2  # the arm measured far from its command: it does not follow
            driver.send(Command(positions=elsewhere[None, :], times=np.array([0.06]), hold=True), start=elsewhere)
        wait_until(
            lambda: got and got[-1].position[6] == pytest.approx(got_gripper(profile, closing[-1, grip])),
            timeout=30,
            what='the gripper at its target',
        )
    finally:
        driver.close()
    grippers = np.array([profile.arms['left'].gripper.command.opening(message.position[6]) for message in got])
    waists = np.array([message.position[0] for message in got])
    period = 1.0 / profile.control_rate
    assert np.abs(np.diff(grippers)).max() <= 1.0 * period + 1e-9, np.abs(np.diff(grippers)).max() / period
    assert np.abs(np.diff(waists)).max() == pytest.approx(0.2, abs=1e-9)  # the arm: held where it is measured


def got_gripper(profile: RobotProfile, opening: float) -> float:
    """The Piper's gripper command value (metres) for an ``opening`` (0..1)."""
    return float(profile.arms['left'].gripper.command.to_driver(opening))
