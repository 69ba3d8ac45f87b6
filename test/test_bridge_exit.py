"""An exiting bridge's last stop reaches the driver before the bridge may end (``SafeMotion.halt`` drains its
driver): the fault bench saw a failing bridge's hold lost with its process, and the arms ran out their window. Also
the motion layer's margins: the acceleration it plans to, and when it looks for a gap in the measured state."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import numpy as np
import pytest
from graph_helpers import private_node, wait_until
from rclpy.duration import Duration
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from robofollow_ros.errors import MotionPausedError
from robofollow_ros.realcell.drivers import JtcDriver, StreamedDriver
from robofollow_ros.realcell.safe_motion import (
    EXIT_DRAIN_MARGIN,
    PAUSE_LOOK_AFTER,
    STATE_WATCH_SECONDS,
    TRAVEL_LOOK_SECONDS,
    MotionSettings,
    SafeMotion,
)
from robofollow_ros.robot.profiles import load_profile
from robofollow_ros.ros import qos
from robofollow_ros.safety.command_filter import MeasuredState
from robofollow_ros.safety.controlled_stop import commanded_at
from robofollow_ros.safety.profile_limits import COMMAND_ACCELERATION_FRACTION

pytestmark = pytest.mark.ros
NOMINAL_DOMAIN = 59
WAIST_SPEED = 1.0
"""rad/s: the chunk below turns the left waist this fast, so that the stop has speed to take off."""


@pytest.fixture
def ros() -> Iterator[Node]:
    with private_node(NOMINAL_DOMAIN, 'bridge_exit_test', spin=True) as (node, _executor):
        yield node


@contextlib.contextmanager
def following_motion(node: Node, profile_name: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[SafeMotion]:
    """The bridge's motion layer over ``profile_name``, its arms measured exactly where they are commanded; closed
    after."""
    profile = load_profile(profile_name)
    motion = SafeMotion(node, profile, settings=MotionSettings())
    home = profile.home_state()

    def measured() -> MeasuredState:
        last = getattr(motion.driver, 'last', None)  # a stream's last target; a JTC: where its trajectory has them
        if last is None and motion.sent is not None:
            last, _ = commanded_at(motion.sent, time.monotonic())
        return MeasuredState(positions=(home if last is None else last).copy(), age_s=0.0)

    monkeypatch.setattr(motion, 'measured', measured)
    try:
        yield motion
    finally:
        motion.close()


def test_the_bridge_plans_to_a_fraction_of_the_profiles_acceleration(
    ros: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows at the profile's acceleration limit reached the arms at up to 1.15 times it: the bridge keeps a margin."""
    with following_motion(ros, 'aloha_ros2_control', monkeypatch) as motion:
        limit = float(motion.profile.arms['left'].acceleration[0])
        assert motion.limits.acceleration[0] == pytest.approx(COMMAND_ACCELERATION_FRACTION * limit)
        for fraction, refused in ((COMMAND_ACCELERATION_FRACTION - 0.05, False), (1.0, True)):
            start = motion.measured().positions
            chunk = np.tile(start, (4, 1))
            chunk[:, 0] += fraction * limit * motion.row_period**2  # one step from rest, then at rest
            decision = motion.send_chunk(chunk, what='test')
            kinds = [item.kind for item in decision.interventions]
            assert ('over_acceleration' in kinds) == refused, (fraction, decision.summary())
            time.sleep(4 * motion.row_period + 0.1)


def test_a_gap_in_the_measured_state_is_looked_for_just_after_it_would_pass_half_the_pause_and_the_pause(
    ros: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    with following_motion(ros, 'aloha_ros2_control', monkeypatch) as motion:
        pause = motion.settings.state_pause
        for age, look in (
            (0.0, STATE_WATCH_SECONDS),
            (pause / 2 - 0.005, 0.005 + PAUSE_LOOK_AFTER),
            (pause / 2 + 0.01, TRAVEL_LOOK_SECONDS),  # the commanded travel is looked at closely from half the pause
            (pause - 0.002, 0.002 + PAUSE_LOOK_AFTER),
            (pause, PAUSE_LOOK_AFTER),
        ):
            monkeypatch.setattr(motion, 'state_age', lambda age=age: age)
            assert motion.next_look(watching=True) == pytest.approx(look), age
            assert motion.next_look(watching=False) == STATE_WATCH_SECONDS  # a hold's rows: no gap to look for
        monkeypatch.setattr(motion, 'state_age', lambda: float('inf'))  # no state yet
        assert motion.next_look(watching=True) == pytest.approx(PAUSE_LOOK_AFTER)


def test_a_fast_arm_driven_unseen_stops_at_the_blind_travel_a_slow_one_at_the_pause(
    ros: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 0.1 s unseen the streams' arms travelled up to 22-27 mm before they came to rest (the fault bench, joint
    states silenced): past half the pause, a TCP the command moved further than ``blind_travel`` stops the arms."""
    with following_motion(ros, 'aloha_ros2_control', monkeypatch) as motion:
        pause, blind = motion.settings.state_pause, motion.settings.blind_travel
        start = motion.profile.home_state()
        assert motion.send_chunk(turning_chunk(start, motion.row_period), what='test').rows_sent == 20
        time.sleep(0.3)
        assert motion.state_gap(pause / 2) is None  # however fast: not before half the pause
        arm, travel = motion.unseen_travel(0.06)
        assert arm == 'left' and blind < travel < WAIST_SPEED * 0.06 * 1.0  # the waist's reach is under 1 m
        assert motion.unseen_travel(0.03)[1] == pytest.approx(travel / 2, rel=0.1)  # along the command, in time
        fast = motion.state_gap(0.06)
        assert fast is not None and (fast.kind, fast.joint, fast.limit) == ('state_gap', 'left_tcp', blind)
        assert fast.value > blind
        time.sleep(1.5)  # the chunk has ended: at rest, nothing travels
        assert motion.unseen_travel(0.09)[1] == 0.0 and motion.state_gap(0.09) is None
        slow = motion.measured().positions
        creeping = np.tile(slow, (20, 1))
        creeping[:, 0] += (-np.sign(slow[0]) or 1.0) * 0.05 * motion.row_period * np.arange(1, 21)  # 0.05 rad/s
        assert motion.send_chunk(creeping, what='test').rows_sent == 20
        time.sleep(0.3)
        assert motion.unseen_travel(0.09)[1] < blind

        def no_kinematics(states: np.ndarray) -> np.ndarray:
            raise AssertionError('forward kinematics for a motion whose joints cannot have taken a TCP that far')

        monkeypatch.setattr(motion.tcp, 'many', no_kinematics)
        assert motion.state_gap(0.09) is None  # the joints' reach bounds the travel: no kinematics needed
        late = motion.state_gap(pause + 0.01)
        assert late is not None and late.joint is None and late.value == pytest.approx(pause + 0.01)


def test_a_stop_at_the_blind_travel_is_brisk_and_ends_the_chunk(ros: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    with following_motion(ros, 'aloha_ros2_control', monkeypatch) as motion:
        start = motion.profile.home_state()
        assert motion.send_chunk(turning_chunk(start, motion.row_period), what='test').rows_sent == 20
        time.sleep(0.3)
        ages = iter([0.06, 0.06, 0.01])  # past half the pause, moving fast; then a fresh state
        monkeypatch.setattr(motion, 'state_age', lambda: next(ages))
        with pytest.raises(MotionPausedError, match='left_tcp'):
            motion.pause_on_state_gap()
        stop = motion.sent
        assert stop is not None and stop.command.times[-1] < 0.1  # brisk: not the gentle stop's half second
        assert motion.intervention_counts().get('state_gap') == 1


def test_the_grippers_in_the_state_are_where_the_running_command_has_them_not_where_it_ends(
    ros: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk following a state gap's stop mid-way started its grippers where that stop would end: the stream jumped
    them there (x2.5 of their speed in one control period, the fuzz)."""
    with following_motion(ros, 'aloha_ros2_control', monkeypatch) as motion:
        start = motion.profile.home_state()
        closing = np.tile(start, (10, 1))
        closing[:, 6] = np.linspace(0.95, 0.5, 10)  # the left gripper closes over 10 rows
        decision = motion.send_chunk(closing, what='test')
        assert decision.rows_sent == 10, decision.summary()
        time.sleep(4 * motion.row_period)
        grip = motion.with_commanded_grips(start)[6]
        assert 0.5 + 0.05 < grip < 0.95, grip  # on its way, not at the command's end
        time.sleep(7 * motion.row_period)
        assert motion.with_commanded_grips(start)[6] == pytest.approx(0.5)  # the end once it is over


def test_a_chunk_sent_with_a_lead_keeps_the_plan_it_replaces_for_its_lead(
    ros: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    with following_motion(ros, 'aloha_ros2_control', monkeypatch) as motion:
        assert motion.driver.lead > 0.0
        start = motion.profile.home_state()
        chunk = turning_chunk(start, motion.row_period)
        assert motion.send_chunk(chunk[:10], what='test').rows_sent == 10
        first = motion.sent
        assert first is not None and first.before is None
        time.sleep(3 * motion.row_period)
        sending = time.monotonic()
        position, _ = commanded_at(first, sending + motion.driver.lead)
        assert motion.send_chunk(np.tile(position, (5, 1)), what='test').rows_sent == 5  # the waist comes to rest
        second = motion.sent
        assert second is not None and second.sent_at >= sending + motion.driver.lead
        assert second.before is not None and second.before.sent_at == first.sent_at
        np.testing.assert_array_equal(second.before.command.positions, first.command.positions)


def turning_chunk(start: np.ndarray, row_period: float) -> np.ndarray:
    """20 rows turning the left waist at ``WAIST_SPEED`` towards the middle of its range (the home waist's side)."""
    rows = np.tile(start, (20, 1))
    rows[:, 0] += (-np.sign(start[0]) or 1.0) * WAIST_SPEED * row_period * np.arange(1, 21)
    return rows


def test_an_exiting_bridge_streams_its_whole_controlled_stop_before_halt_returns(
    ros: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    with following_motion(ros, 'piper', monkeypatch) as motion:
        driver = motion.driver
        assert isinstance(driver, StreamedDriver)
        targets: list[float] = []
        ros.create_subscription(
            JointState, '/left_piper/joint_ctrl_single', lambda m: targets.append(m.position[0]), qos.ARM_COMMANDS
        )
        start = motion.profile.home_state()
        direction = -np.sign(start[0]) or 1.0
        decision = motion.send_chunk(turning_chunk(start, motion.row_period), what='test')
        assert decision.rows_sent == 20
        time.sleep(0.6)
        halted_at = driver.last
        assert halted_at is not None and direction * (halted_at[0] - start[0]) > 0.3  # moving, mid-chunk
        stop = motion.halt(what='test exit')
        assert stop is not None and stop.command is not None
        assert driver.plan is None  # the stop went out whole before halt returned
        assert driver.last is not None
        assert driver.last[0] == pytest.approx(stop.command.positions[-1][0])
        assert direction * (driver.last[0] - halted_at[0]) > 0.0  # decelerated along the motion, not pulled back
        last = float(stop.command.positions[-1][0])
        wait_until(lambda: targets[-1] == pytest.approx(last), timeout=10, what='the last target at the reader')


def test_an_exiting_bridge_waits_for_its_stop_to_be_acknowledged_by_the_controllers(
    ros: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    with following_motion(ros, 'aloha_ros2_control', monkeypatch) as motion:
        assert isinstance(motion.driver, JtcDriver)
        for topic in motion.driver.topics():
            ros.create_subscription(JointTrajectory, topic, lambda _m: None, qos.ARM_COMMANDS)
        wait_until(motion.driver.connected, timeout=60, what='the controllers to match')
        drained: list[float] = []
        original = motion.driver.drain

        def drain(*, timeout: float) -> bool:
            drained.append(timeout)
            return original(timeout=timeout)

        monkeypatch.setattr(motion.driver, 'drain', drain)
        motion.send_chunk(turning_chunk(motion.profile.home_state(), motion.row_period), what='test')
        time.sleep(0.3)
        stop = motion.halt(what='test exit')
        assert stop is not None and stop.command is not None
        assert drained == [pytest.approx(float(stop.command.times[-1]) + EXIT_DRAIN_MARGIN)]
        assert all(p.wait_for_all_acked(Duration(nanoseconds=0)) for p in motion.driver.pubs.values())
        assert motion.halt(what='again') is None  # once


def test_an_exit_whose_driver_cannot_be_waited_for_still_returns_its_stop(
    ros: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    with following_motion(ros, 'aloha_ros2_control', monkeypatch) as motion:

        def dead_context(*, timeout: float) -> bool:
            raise RuntimeError('context is not valid')

        monkeypatch.setattr(motion.driver, 'drain', dead_context)
        stop = motion.halt(what='test exit')
        assert stop is not None and stop.command is not None  # the hold went out; the exit goes on


@pytest.mark.parametrize('profile_name', ['aloha_ros2_control', 'piper'])
def test_a_hold_in_a_chunks_last_row_period_ends_it_on_its_last_row_not_past_it(
    profile_name: str, ros: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fuzz's JTC: a hold just before a chunk's end (the episode ending on the next chunk's NaN) was a controlled
    stop from the last row's speed, and took the arm up to 0.49 rad past the row where the chunk would have stopped
    (mid-chunk a hold is still that stop: the first test above)."""
    with following_motion(ros, profile_name, monkeypatch) as motion:
        start = motion.profile.home_state()
        chunk = turning_chunk(start, motion.row_period)
        assert motion.send_chunk(chunk, what='test').rows_sent == 20
        assert motion.sent is not None
        end = motion.sent.sent_at + float(motion.sent.command.times[-1])
        time.sleep(max(0.0, end - 0.04 - time.monotonic()))
        late = motion.hold(what='test, near the end').command
        assert late is not None
        np.testing.assert_allclose(late.positions[-1], chunk[-1], atol=1e-12)
        assert float(late.times[-1]) <= 0.04 + 1e-9
