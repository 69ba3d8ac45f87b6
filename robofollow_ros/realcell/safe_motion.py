"""``SafeMotion``: everything that moves a real cell's arms goes through here, after the safety layer.

It owns the driver writers (``realcell/drivers.py``), the measured joints (``realcell/driver_feedback.py``) and the
safety layer's state: every chunk is filtered by ``safety.command_filter.filter_chunk`` with the profile's limits (joint
clamp or refusal, velocity, workspace by forward kinematics, non-finite values, stale state) before a row is
written; every intervention is logged and counted. A dead-man (``safety.deadman.DeadMan``) watches the outstanding
policy query on its own thread and holds the arms the moment its deadline passes. ``stop`` holds both arms at once
(from the caller's thread: the stop service's callback) and refuses every further motion until ``release`` (the
next episode's start) or the operator's release (``release_stop``); ``halt`` does the same for good when the bridge
exits, before it waits for its episode thread.

A profile without a robot description has no kinematics, so its workspace box could not be checked: the bridge
refuses it however it is started (``ros2 run``, any launch file), rather than dropping the box with a warning.

Locks: ``condition`` guards the measured state and the dead-man; ``lock`` serialises writes to the driver with the
stop flag. Nobody takes ``lock`` and then ``condition``'s waits, nor holds ``condition`` while taking ``lock``.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from rclpy.node import Node

from robofollow_ros.errors import GraphError, MotionPausedError, MotionStoppedError, ProfileError
from robofollow_ros.realcell.driver_feedback import DriverFeedback, MeasuredCell
from robofollow_ros.realcell.drivers import WINDOW_SECONDS, make_driver
from robofollow_ros.robot.profiles import RobotProfile
from robofollow_ros.ros.protocol import HomeCode
from robofollow_ros.safety.command_filter import (
    Command,
    MeasuredState,
    SafetyDecision,
    filter_chunk,
    hold_command,
    path_samples_for,
)
from robofollow_ros.safety.controlled_stop import (
    STOP_SECONDS,
    SentCommand,
    brisk_decelerations,
    chunk_start,
    commanded_at,
    hold_after,
    remaining_of,
    stop_decelerations,
    stop_in_workspace,
    within_travel,
)
from robofollow_ros.safety.deadman import DeadMan
from robofollow_ros.safety.home_path import plan_home
from robofollow_ros.safety.limits import POSITION_TOLERANCE, Intervention
from robofollow_ros.safety.profile_limits import COMMAND_ACCELERATION_FRACTION, limits_from_profile, profile_tcp
from robofollow_ros.state_layout import ACTION_DIM, ARM_JOINT_COLUMNS, ARM_SLICE, ARMS, GRIP_COLUMNS

STOPPED_MESSAGE = 'stopped by /robofollow/stop: motion refused until the operator releases it (/robofollow/release)'
"""What every refusal of motion after a stop says (the evaluator recognises a stopped bridge by it)."""
EXITING_MESSAGE = 'the policy bridge is exiting: the arms hold, and no further motion is sent'


class HomeAnswer(NamedTuple):
    """The answer to a home request: ``HomeCode``, how long the move takes (``MOVING``) and one line."""

    code: HomeCode
    seconds: float
    message: str


FRESH_STATE_WAIT = 1.0
"""How long (s) the home move waits for a measured state younger than ``max_state_age`` before it refuses."""
EXIT_DRAIN_MARGIN = 0.25
"""Seconds beyond a stop's last point an exiting bridge waits for the driver to have it (``SafeMotion.halt``)."""
STATE_WATCH_SECONDS = 0.02
"""How often the measured state's age is looked at while a chunk's rows run (at the longest)."""
PAUSE_LOOK_AFTER = 0.001
"""Seconds after the latest state would pass ``state_pause`` (or half of it) that the gap is looked for."""
TRAVEL_LOOK_SECONDS = 0.005
"""How often the commanded travel since the latest state is looked at once that state is half ``state_pause`` old
(1 mm of TCP between looks at 0.2 m/s)."""


@dataclass(frozen=True)
class MotionSettings:
    """The real-time bridge's safety and pacing parameters.

    Attributes:
        max_state_age: a measured joint state older than this (s) makes the filter hold instead of moving.
        policy_deadline: the dead-man's deadline (s): a policy silent for longer gets the arms held.
        settle_timeout: after a chunk's last row is due, how long (s) to wait for the measured state to reach it.
        settle_tolerance: how close (rad; normalised for grippers) the measured state must come to the last row.
        home_speed: the home move's speed as a fraction of the profile's velocity limits.
        gripper_velocity: the grippers' velocity limit (normalised units per second); None (the default): the
            profile's, its URDF finger's speed over its travel. Policies open or close a gripper in one row; the
            bridge moves such a command towards its target at this speed (``ChunkLimits.gripper_reach``) before the
            filter checks it.
        stop_seconds: a controlled stop brings a joint at its velocity limit to rest in this many seconds (its
            deceleration: the velocity limit over this).
        command_window: how far ahead (s) a JointTrajectoryController is sent a chunk's rows, each window ending in
            a controlled stop (``realcell/drivers.py``); 0 sends each chunk whole.
        stamped_windows: each window of a chunk carries the chunk's start on the ROS clock in ``header.stamp``, so
            the controller continues one window from the next exactly (the controller's clock must agree with the
            bridge's within a few milliseconds); False stamps them zero ("when taken up").
        state_pause: while a chunk's rows run, a measured state older than this (s) brings the arms to a controlled
            stop along their commanded motion and drops the rest of the chunk (``state_gap``): the bridge does not
            drive an arm it cannot see for longer (nor, fast, over ``blind_travel``). A state no older than half this
            arriving within ``state_watchdog`` lets the episode go on from where the arms stopped.
        blind_travel: once the measured state is half ``state_pause`` old, the arms stop as soon as their commanded
            motion has taken either TCP this far (m, straight) from where it had it when that state arrived: a fast
            arm is not driven on unseen for the whole pause (at 0.1 s, the streams' arms travelled up to 22-27 mm
            before they were at rest), a slow one rides out a late message as before.
        state_watchdog: a measured state older than this (s) ends the episode (``stale_state``, a driver gone
            quiet; the arms already stopped at ``state_pause``). Longer than ``max_state_age``, which judges the state
            a chunk starts from: under load a driver's messages arrived up to 0.2 s late with the driver alive.
    """

    max_state_age: float = 0.2
    policy_deadline: float = 2.0
    settle_timeout: float = 0.5
    settle_tolerance: float = 0.02
    home_speed: float = 0.2
    gripper_velocity: float | None = None
    stop_seconds: float = STOP_SECONDS
    command_window: float = WINDOW_SECONDS
    stamped_windows: bool = True
    state_pause: float = 0.1
    blind_travel: float = 0.01
    state_watchdog: float = 0.5


def rounding(item: Intervention) -> bool:
    """Whether ``item`` only clamped a target that was within ``POSITION_TOLERANCE`` of its limit."""
    return item.kind == 'position_clamped' and abs(item.value - item.limit) <= POSITION_TOLERANCE


class SafeMotion:
    """The one writer of arm commands in real mode (see the module docstring).

    Args:
        node: the bridge node (publishers, subscriptions, clock, logger).
        profile: the robot profile.
        settings: limits of the safety layer and pacing.
    """

    def __init__(self, node: Node, profile: RobotProfile, *, settings: MotionSettings) -> None:
        self.node = node
        self.profile = profile
        self.settings = settings
        self.row_period = profile.row_period
        self.condition = threading.Condition()
        self.lock = threading.Lock()
        self.feedback = DriverFeedback(node, profile, condition=self.condition)
        if profile.robot is None:
            raise ProfileError(
                f'robot profile {profile.name!r} names no robot description: without kinematics its workspace box '
                'cannot be checked, so the bridge does not drive its arms (give the profile a robot)'
            )
        self.limits = limits_from_profile(
            profile,
            velocity_mode=profile.velocity_limits,
            max_state_age_s=settings.max_state_age,
            gripper_velocity=settings.gripper_velocity,
            acceleration_fraction=COMMAND_ACCELERATION_FRACTION,
        )
        self.tcp = profile_tcp(profile)
        self.reach = self.tcp.reach()
        self.path_samples = (
            1 if profile.driver == 'ros2_control' else path_samples_for(self.row_period, profile.control_rate)
        )
        """A position stream sends the points between the rows too: the workspace rule checks each."""
        self.deceleration = stop_decelerations(self.limits, stop_seconds=settings.stop_seconds)
        self.brisk_deceleration = brisk_decelerations(self.limits, stop_seconds=settings.stop_seconds)
        """A state gap's stop: the arms were driven unseen for ``state_pause`` already, so they stop at the
        acceleration the bridge plans commands to (the fault bench's sweep travelled 23 [26] mm at the gentle one)."""
        self.driver = make_driver(
            node,
            profile,
            stop_from=self.stop_from,
            window=settings.command_window,
            stamped=settings.stamped_windows,
            velocity=self.limits.velocity,
        )
        self.sent: SentCommand | None = None
        self.stopped = False
        self.exiting = False
        self.stopped_at_ns = -1
        self.stop_event = threading.Event()
        self.deadman = DeadMan(deadline_s=settings.policy_deadline, clock=time.monotonic)
        self.late_answer = False
        self.settle_error = math.inf
        self.interventions: Counter[str] = Counter()
        self.counts_lock = threading.Lock()
        self.closed = False
        self.watcher = threading.Thread(target=self.watch, name='dead-man', daemon=True)
        self.watcher.start()

    # --- measured state ---------------------------------------------------------------------------------------

    def measured(self) -> MeasuredState:
        """The latest measured state and its age (non-finite when a driver was never heard: nothing can move), with
        the grippers at their last command once one was sent.

        A gripper closed on an object measures its width (about 0.6 open on a 4 cm block), not its command: a hold
        at the measured opening would let go of the object, and a streamed chunk interpolated from it would open
        the gripper at every chunk's start. Arm joints follow their command closely, so theirs stay measured.
        """
        cell: MeasuredCell | None = self.feedback.latest()
        if cell is None:
            return MeasuredState(positions=np.full(ACTION_DIM, np.nan), age_s=math.inf)
        return MeasuredState(positions=self.with_commanded_grips(cell.state), age_s=cell.age_s)

    def fresh_state(self, *, within: float) -> MeasuredState:
        """The measured state once it is at most ``max_state_age`` old, waiting up to ``within`` seconds for one (a
        driver's message a few hundred milliseconds late under load); the latest state, however old, after that."""
        deadline = time.monotonic() + within
        with self.condition:
            while True:
                state = self.measured()
                remaining = deadline - time.monotonic()
                if state.age_s <= self.settings.max_state_age or remaining <= 0 or self.closed:
                    return state
                self.condition.wait(min(remaining, 0.05))

    def with_commanded_grips(self, state: np.ndarray) -> np.ndarray:
        """A measured 14-D ``state`` with the grippers where the last command has them now (as the simulated cell's
        state holds them: measured joints, commanded grips), or as it is before any command. Not the command's end
        while it runs: a chunk that followed a state gap's stop mid-way started its grippers from where that stop
        would end, and the stream jumped them there (x2.5 of their speed in one control period, the fuzz)."""
        sent = self.sent
        if sent is None:
            return state
        positions = np.array(state, dtype=np.float64)
        positions[GRIP_COLUMNS] = commanded_at(sent, time.monotonic())[0][GRIP_COLUMNS]
        return positions

    # --- commands ---------------------------------------------------------------------------------------------

    def record(self, decision: SafetyDecision, what: str) -> None:
        """Count and log the decision's interventions (one line), leaving out the clamps of targets that were within
        ``POSITION_TOLERANCE`` of their limit (rounding: a policy holding a joint measured a hair beyond its end stop
        would otherwise log a clamp per joint and row)."""
        material = [item for item in decision.interventions if not rounding(item)]
        if not material and decision.command is not None and not decision.held:
            return
        self.count(item.kind for item in material)
        self.node.get_logger().warning(
            f'safety: {what}: {dataclasses.replace(decision, interventions=tuple(material)).summary()}'
        )

    def write(
        self,
        decision: SafetyDecision,
        state: MeasuredState,
        *,
        moving: bool,
        start: np.ndarray | None = None,
        brisk: bool = False,
    ) -> Command | None:
        """Send the decision's command, unless it moves the arms while stopped (``MotionStoppedError``); a hold goes
        out as a controlled stop (``controlled``; ``brisk``: at ``brisk_deceleration``). ``start``: where the rows
        start from (default: the measured state). Returns what was written."""
        with self.lock:
            if moving and (self.stopped or self.exiting):
                raise MotionStoppedError(self.refusal())
            return self._send(decision, state, start=start, brisk=brisk)

    def _send(
        self, decision: SafetyDecision, state: MeasuredState, *, start: np.ndarray | None = None, brisk: bool = False
    ) -> Command | None:
        """Write the decision's command (a hold as a controlled stop) and return what was written; the caller holds
        ``lock``."""
        command, start = self.controlled(decision, state, start=start, brisk=brisk)
        if command is not None:
            begins = self.driver.send(command, start=start)
            start = np.asarray(start, dtype=np.float64)
            self.sent = SentCommand(start=start, command=command, sent_at=begins).after(self.sent)
        return command

    def controlled(
        self, decision: SafetyDecision, state: MeasuredState, *, start: np.ndarray | None = None, brisk: bool = False
    ) -> tuple[Command | None, np.ndarray]:
        """The command to write for ``decision`` and the 14-D state it starts from (``start``, default the measured
        state). A hold (or a refusal for want of a usable measured state) while a trajectory sent earlier is still
        running becomes a controlled stop from where that trajectory commands the arms to be now, at the velocity it
        commands (``safety.controlled_stop``): never a jump back to a measured position up to ``max_state_age`` old.
        An arm whose last trajectory has ended holds at its last point while it follows it, else where it is
        measured (``hold_after``). ``brisk``: the stop decelerates at ``brisk_deceleration``, ending as soon as the
        driver's control period allows."""
        sent = self.sent
        holding = decision.command is None or decision.held
        now = time.monotonic()
        ended = sent is None or now >= sent.sent_at + float(sent.command.times[-1])
        if holding and decision.command is not None and sent is not None and ended:
            hold = hold_after(
                sent, state, self.limits, now=now, row_period_s=self.row_period, settling_s=self.settings.settle_timeout
            )
            return hold, hold.positions[0]
        if not holding or sent is None or ended:
            origin = state.positions if start is None or holding else start
            # An arm measured a little past a limit (it overshot) streams from the limit, never beyond it.
            return decision.command, np.clip(origin, self.limits.lower, self.limits.upper)
        position, velocity = commanded_at(sent, now)
        stop = self.stop_from(position, velocity, brisk=brisk)
        rest = remaining_of(sent, now)
        if rest is not None and rest.times[-1] <= stop.times[-1] and within_travel(position, rest, stop):
            # The trajectory comes to rest on its last point sooner, and no further, than a stop along it would (a
            # chunk's last row is filtered to come to rest within the acceleration limit): a stop begun just before
            # that end at the last row's speed travelled up to 0.49 rad past it on the fuzz's JTC.
            return rest, position
        return stop, position

    def stop_from(self, position: np.ndarray, velocity: np.ndarray, *, brisk: bool = False) -> Command:
        """The controlled stop from ``position`` moving at ``velocity`` (14-D each), inside the workspace box;
        ``brisk``: at ``brisk_deceleration``, as short as one control period of the driver."""
        return stop_in_workspace(
            position,
            velocity,
            self.limits,
            deceleration=self.brisk_deceleration if brisk else self.deceleration,
            row_period_s=self.row_period,
            tcp=self.tcp,
            path_samples=self.path_samples,
            shortest=1.0 / self.profile.control_rate if brisk else None,
        )

    def send_chunk(self, chunk: np.ndarray, *, what: str) -> SafetyDecision:
        """Filter ``chunk`` (T, 14) from the measured state and write what may be sent (rows or a hold)."""
        if self.stopped or self.exiting:
            raise MotionStoppedError(self.refusal())
        state = self.measured()
        # Where the arms are commanded to be when the chunk's time begins (the driver's lead after now).
        start = chunk_start(
            self.sent,
            state,
            now=time.monotonic() + self.driver.lead,
            row_period_s=self.row_period,
            lag_s=self.settings.max_state_age,
        )
        decision = filter_chunk(
            chunk,
            state=state,
            limits=self.limits,
            row_period_s=self.row_period,
            tcp=self.tcp,
            start=start,
            path_samples=self.path_samples,
        )
        self.record(decision, what)
        decision = self.ended_in_a_stop(decision, start.position)
        self.write(decision, state, moving=not decision.held, start=start.position)
        return decision

    def ended_in_a_stop(self, decision: SafetyDecision, start: np.ndarray) -> SafetyDecision:
        """``decision`` (its rows starting from ``start``, 14-D) with a controlled stop after its rows when the chunk
        was refused from a row on."""
        if decision.command is None or decision.held or decision.rows_sent >= decision.rows_in:
            return decision
        stopping = self.ending_in_a_stop(decision.command, start)
        added = len(stopping.positions) - len(decision.command.positions)
        return dataclasses.replace(decision, command=stopping, stop_points=added)

    def ending_in_a_stop(self, command: Command, start: np.ndarray) -> Command:
        """``command`` (the rows of a chunk refused from a row on, from ``start``) followed by the controlled stop from
        its last row at the speed it arrives there: a refused chunk decelerates the arms instead of ending its last
        row at speed."""
        before = command.positions[-2] if len(command.positions) > 1 else start
        span = float(command.times[-1] - (command.times[-2] if len(command.times) > 1 else 0.0))
        velocity = (command.positions[-1] - np.asarray(before, dtype=np.float64)) / span
        stop = self.stop_from(command.positions[-1], velocity)
        return Command(
            positions=np.vstack([command.positions, stop.positions]),
            times=np.concatenate([command.times, command.times[-1] + stop.times]),
            hold=False,
        )

    def hold(
        self, *, reasons: tuple[Intervention, ...] = (), what: str = 'hold', brisk: bool = False
    ) -> SafetyDecision:
        """Both arms hold (written even when stopped): a controlled stop while a trajectory runs (``brisk``: at
        ``brisk_deceleration``), else one point at the measured position. The decision returned carries the command
        written."""
        state = self.measured()
        decision = hold_command(state, self.limits, row_period_s=self.row_period, reasons=reasons)
        self.record(decision, what)
        return dataclasses.replace(decision, command=self.write(decision, state, moving=False, brisk=brisk))

    def stop(self) -> SafetyDecision:
        """Hold both arms now and refuse every motion until ``release``."""
        state = self.measured()
        decision = hold_command(state, self.limits, row_period_s=self.row_period)
        with self.lock:
            self.stopped = True
            self.stopped_at_ns = self.node.get_clock().now().nanoseconds
            self.stop_event.set()
            sent = self._send(decision, state)
        with self.condition:
            self.condition.notify_all()
        return dataclasses.replace(decision, command=sent)

    def halt(self, *, what: str = 'bridge exit') -> SafetyDecision | None:
        """The bridge is exiting (a signal, a failure, ``close``): hold both arms now, a controlled stop while a
        trajectory runs, wake the episode's waits and refuse every later motion; return once the stop has reached
        the driver (streamed out, acknowledged), at most ``EXIT_DRAIN_MARGIN`` after the stop's end, so that the
        process may end. Once: None after the first call."""
        with self.lock:
            if self.exiting:
                return None
            self.exiting = True
            self.stop_event.set()
        with self.condition:
            self.condition.notify_all()
        decision = self.hold(what=what)
        horizon = 0.0 if decision.command is None else float(decision.command.times[-1])
        try:
            if not self.driver.drain(timeout=horizon + EXIT_DRAIN_MARGIN):
                self.node.get_logger().error(f'{what}: the stop was not acknowledged by the driver within the wait')
        except Exception as error:  # a context already shut down: the stop went out, the process ends either way
            self.node.get_logger().error(f'{what}: could not wait for the driver to have the stop: {error}')
        return decision

    def refusal(self) -> str:
        """Why motion is refused now (the bridge exiting, or the operator's stop)."""
        return EXITING_MESSAGE if self.exiting else STOPPED_MESSAGE

    def ended_by(self) -> str:
        """What ended a chunk's execution (the episode's ``policy_error``)."""
        return EXITING_MESSAGE if self.exiting else 'stopped by /robofollow/stop'

    def count(self, kinds: Iterable[str]) -> None:
        """Count interventions (from the episode's thread and the dead-man's)."""
        with self.counts_lock:
            self.interventions.update(kinds)

    def intervention_counts(self) -> dict[str, int]:
        """The interventions counted since the episode started, by kind."""
        with self.counts_lock:
            return dict(self.interventions)

    def release_stop(self) -> bool:
        """The operator releases the stop: motion is allowed again. Whether the arms were stopped."""
        with self.lock:
            was, self.stopped = self.stopped, False
            if not self.exiting:
                self.stop_event.clear()
        return was

    def release(self, *, started_ns: int) -> None:
        """The episode announced at ``started_ns`` (ROS time) starts: motion is allowed again, unless the stop came
        after that announcement (it stops this episode too)."""
        with self.counts_lock:
            self.interventions.clear()
        with self.lock:
            if self.stopped and self.stopped_at_ns >= started_ns:
                return
            self.stopped = False
            if not self.exiting:
                self.stop_event.clear()

    def home(self) -> HomeAnswer:
        """A slow move from the measured state to the profile's home pose, through the safety filter: whether all
        of it was sent (``MOVING``) and how long it takes, or why not."""
        if self.stopped or self.exiting:
            return HomeAnswer(HomeCode.STOPPED, 0.0, self.refusal())
        state = self.fresh_state(within=FRESH_STATE_WAIT)
        if not np.isfinite(state.positions).all():
            return HomeAnswer(HomeCode.NOT_YET, 0.0, 'no joint state from the driver yet: nothing to move from')
        if state.age_s > self.settings.max_state_age:
            # NOT_YET, which the evaluator calls again for (a driver back after a pause moves home).
            return HomeAnswer(
                HomeCode.NOT_YET,
                0.0,
                f'no joint state from the driver yet younger than {self.settings.max_state_age:g} s (the latest is '
                f'{state.age_s:.3g} s old)',
            )
        plan = plan_home(
            state,
            self.profile.home_state(),
            limits=self.limits,
            speed_fraction=self.settings.home_speed,
            row_period_s=self.row_period,
            tcp=self.tcp,
            path_samples=self.path_samples,
        )
        decision, rows = plan.decision, len(plan.rows)
        self.record(decision, 'home')
        decision = self.ended_in_a_stop(decision, state.positions)
        try:
            self.write(decision, state, moving=not decision.held)
        except MotionStoppedError as error:
            return HomeAnswer(HomeCode.STOPPED, 0.0, str(error))
        if decision.rows_sent < rows:
            return HomeAnswer(HomeCode.REFUSED, 0.0, f'home move not sent whole: {decision.summary()}')
        how = '' if plan.name == 'straight' else f', {plan.name}: the straight path leaves the workspace'
        seconds = rows * self.row_period
        return HomeAnswer(HomeCode.MOVING, seconds, f'moving home in {seconds:.2f} s ({rows} rows{how})')

    def state_age(self) -> float:
        """How old (s) the latest measured state is (infinite before the first)."""
        cell = self.feedback.latest()
        return math.inf if cell is None else cell.age_s

    def next_look(self, *, watching: bool) -> float:
        """Seconds until the measured state is next looked at while rows run: every ``STATE_WATCH_SECONDS``, and,
        ``watching`` for a gap, just after the latest state would be half ``state_pause`` old, then every
        ``TRAVEL_LOOK_SECONDS`` and just after it would pass ``state_pause`` (a look on a fixed beat found a gap up to
        one beat late: 20 ms more of an arm driven unseen)."""
        if not watching:
            return STATE_WATCH_SECONDS
        pause = self.settings.state_pause
        age = self.state_age()
        if age < pause / 2:
            return min(STATE_WATCH_SECONDS, pause / 2 - age + PAUSE_LOOK_AFTER)
        return min(TRAVEL_LOOK_SECONDS, max(pause - age, 0.0) + PAUSE_LOOK_AFTER)

    def commanded_since(self, age: float) -> np.ndarray | None:
        """Where the sent trajectory had the arms ``age`` seconds ago and has them now (2, 14); None before any."""
        sent = self.sent
        if sent is None:
            return None
        now = time.monotonic()
        return np.array([commanded_at(sent, now - age)[0], commanded_at(sent, now)[0]])

    def unseen_travel(self, age: float) -> tuple[str, float]:
        """The arm whose TCP the commanded motion has taken furthest (straight, m) over the last ``age`` seconds, and
        how far: where the arms went since a state ``age`` old was measured, had they followed their command."""
        then_and_now = self.commanded_since(age)
        return (ARMS[0], 0.0) if then_and_now is None else self.tcp_travel(then_and_now)

    def tcp_travel(self, then_and_now: np.ndarray) -> tuple[str, float]:
        """The arm whose TCP moves furthest (straight, m) between two 14-D states (2, 14), and how far."""
        travel = np.linalg.norm(np.diff(self.tcp.many(then_and_now), axis=0)[0], axis=-1)
        furthest = int(np.argmax(travel))
        return ARMS[furthest], float(travel[furthest])

    def state_gap(self, age: float) -> Intervention | None:
        """Why the arms must stop for want of a measured state ``age`` seconds old while rows run, if they must: it is
        older than ``state_pause``, or older than half that while their commanded motion took a TCP further than
        ``blind_travel`` since (``unseen_travel``; its forward kinematics only once the joints' reach allows that
        far: looked at every 5 ms of a late state, under load it took a loaded bridge 2.6 ms a time)."""
        pause, blind = self.settings.state_pause, self.settings.blind_travel
        if age > pause:
            return Intervention('state_gap', None, None, float(age), pause)
        if age <= pause / 2:
            return None
        then_and_now = self.commanded_since(age)
        if then_and_now is None:
            return None
        turned = self.reach * np.abs(then_and_now[1] - then_and_now[0])
        if max(float(turned[ARM_SLICE[arm]].sum()) for arm in ARMS) <= blind:
            return None
        arm, travel = self.tcp_travel(then_and_now)
        return Intervention('state_gap', None, f'{arm}_tcp', travel, blind) if travel > blind else None

    def pause_on_state_gap(self) -> None:
        """While a chunk's rows run: once the measured state is too old (``state_gap``), stop the arms (a controlled
        stop along their commanded motion) and wait for a state no older than half ``state_pause`` (one the travel rule
        would not stop at either).

        Raises:
            MotionPausedError: a fresh state came back within ``state_watchdog``: the chunk ends here.
            GraphError: none came (the driver went quiet): the episode ends, the arms holding.
            MotionStoppedError: ``stop`` or ``halt`` was called meanwhile.
        """
        pause, watchdog = self.settings.state_pause, self.settings.state_watchdog
        found = self.state_age()
        gap = self.state_gap(found)
        if gap is None:
            return
        self.hold(reasons=(gap,), what=f'a state gap ({found:.3g} s old)', brisk=True)
        while (age := self.state_age()) > pause / 2:
            if age > watchdog:
                self.count(['stale_state'])
                raise GraphError(
                    f'the measured joint state went stale while a chunk ran ({age:.3g} s old, limit {watchdog:g} s; '
                    f'the arms stopped once it was {found:.3g} s old)'
                )
            if self.stop_event.wait(STATE_WATCH_SECONDS):
                raise MotionStoppedError(self.ended_by())
        raise MotionPausedError(
            f'the measured joint state paused ({found:.3g} s old, {gap.describe()}): the arms stopped, the chunk ends'
        )

    def connected(self) -> bool:
        """Whether every command topic has a reader."""
        return self.driver.connected()

    # --- execution --------------------------------------------------------------------------------------------

    def wait_executed(self, decision: SafetyDecision, *, sent_at: float) -> bool:
        """Wait until the decision's rows are due (wall time from ``sent_at``, monotonic), then until a state measured
        since then has every arm joint within ``settle_tolerance`` of the last row or ``settle_timeout`` passed;
        whether it got there (``settle_error``: the largest arm joint error seen last, rad).

        While the rows of a motion run, the measured state is watched (``pause_on_state_gap``): the arms are not
        driven on unseen for longer than ``state_pause``.

        Raises:
            MotionStoppedError: ``stop`` or ``halt`` was called meanwhile.
            MotionPausedError: the measured state paused, then came back (the arms stopped, the chunk ended early).
            GraphError: the measured state went stale while the rows ran (the arms hold).
        """
        if decision.command is None:
            return False
        due = sent_at + float(decision.command.times[-1])
        while (remaining := due - time.monotonic()) > 0.0:
            if self.stop_event.wait(min(remaining, self.next_look(watching=not decision.held))):
                raise MotionStoppedError(self.ended_by())
            if not decision.held:
                self.pause_on_state_gap()
        target = decision.command.positions[-1]
        self.settle_error = math.inf
        deadline = time.monotonic() + self.settings.settle_timeout
        with self.condition:
            while True:
                if self.stopped or self.exiting:
                    raise MotionStoppedError(self.ended_by())
                state = self.feedback.state(since=due)  # measured after the last row was due
                if state is not None:
                    # Arm joints only: a gripper closed on an object never reaches its (closed) target.
                    self.settle_error = float(np.abs(state - target)[ARM_JOINT_COLUMNS].max())
                    if self.settle_error <= self.settings.settle_tolerance:
                        return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.condition.wait(remaining)

    # --- dead-man ---------------------------------------------------------------------------------------------

    def query_sent(self) -> None:
        """A policy query starts: its dead-man countdown starts."""
        with self.condition:
            self.deadman.query_sent()
            self.late_answer = False
            self.condition.notify_all()

    def answer_arrived(self) -> None:
        """The policy answered (or failed): a late answer is remembered, to be dropped (``take_late``)."""
        with self.condition:
            self.late_answer = not self.deadman.answer_arrived()
            self.condition.notify_all()

    def take_late(self) -> bool:
        """Whether the last answer came after the dead-man's deadline (and forget it)."""
        with self.condition:
            late, self.late_answer = self.late_answer, False
            return late

    def watch(self) -> None:
        """The dead-man's thread: sleeps until the outstanding query's deadline, then holds the arms once."""
        while True:
            with self.condition:
                while not self.closed and not self.deadman.overdue():
                    wait = self.deadman.deadline_s - self.deadman.waited() if self.deadman.waiting else None
                    self.condition.wait(None if wait is None else max(wait, 0.0) + 1e-3)
                if self.closed:
                    return
                state = self.measured()
                decision = self.deadman.poll(state, self.limits, row_period_s=self.row_period)
                if decision is None:  # already held for this query: wait for the next one
                    while not self.closed and self.deadman.overdue():
                        self.condition.wait()
                    continue
            self.record(decision, 'dead-man')
            self.write(decision, state, moving=False)

    def close(self) -> None:
        """Stop the dead-man's thread and the driver's."""
        with self.condition:
            self.closed = True
            self.condition.notify_all()
        self.watcher.join(timeout=1.0)
        self.driver.close()
