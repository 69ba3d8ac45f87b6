"""``controlled_stop``: the trajectory that brings moving arms to rest (IEC 60204-1 stop category 2), and where the
arms were commanded to be at a moment of a trajectory already sent (``commanded_at``); ``stop_in_workspace``: the
same, kept inside the workspace box; ``chunk_start``: where a new chunk starts from.

A stop used to be one point at the measured position (up to ``max_state_age`` old), due one row period later: an arm
moving at speed was commanded back to where it had been, and to a standstill within 60 ms. A controlled stop starts
where the arm is commanded to be now, with the velocity it is commanded to have, and decelerates every joint
uniformly (all joints reach rest together, none faster than its ``deceleration``) to a standstill, sampled every row
period, the last point at rest (a stop shorter than one row period takes one row period, decelerating more gently
than it could, unless a ``shortest`` duration is given: a brisk stop's). The stop point is clipped into the joint
limits. Pure: positions, velocities and times in, a ``Command`` out.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from robofollow_ros.errors import SafetyError
from robofollow_ros.safety.command_filter import (
    ChunkStart,
    Command,
    MeasuredState,
    TcpFunction,
    check_row_period,
    hold_command,
    path_points,
)
from robofollow_ros.safety.limits import SafetyLimits
from robofollow_ros.state_layout import ARM_JOINT_COLUMNS

STOP_SECONDS = 0.5
"""Default stopping time from full speed: each joint's deceleration is its velocity limit over this (a bounded
command horizon: the longest stop runs 0.5 s)."""
REST_SPEED = 1e-6
"""Below this speed (rad/s, or gripper strokes/s) a joint counts as at rest."""
FOLLOWING_WITHIN = 0.05
"""rad (normalised units for grippers): an arm measured within this of where it was commanded to be at the
measurement's time follows its command."""
SAME_ROW = 1e-6
"""Row periods: a stop this little longer than whole row periods ends on the last of them (60 ns on a 60 ms row)."""
LAG_STEP = 0.005
"""Seconds between the moments ``lagging_along`` compares a measurement with."""
HARDER_STOPS = (1.0, 2.0, 4.0)
"""The decelerations ``stop_in_workspace`` tries, in multiples of the limits', to keep the TCPs in the box."""


@dataclass(frozen=True)
class SentCommand:
    """A trajectory written to the arms: from ``start`` (14,), its ``command``'s points due ``command.times`` seconds
    after ``sent_at`` (monotonic seconds). ``before``: the trajectory it replaced, which the arms still follow until
    ``sent_at`` when that lies ahead of the sending (a plan sent with a lead, ``Driver.lead``)."""

    start: np.ndarray
    command: Command
    sent_at: float
    before: SentCommand | None = None

    def after(self, previous: SentCommand | None) -> SentCommand:
        """This trajectory, sent while ``previous`` ran (kept one deep: a plan sent within the lead of another is
        taken to start from that one's start)."""
        kept = None if previous is None else dataclasses.replace(previous, before=None)
        return dataclasses.replace(self, before=kept)


def commanded_at(sent: SentCommand, now: float) -> tuple[np.ndarray, np.ndarray]:
    """The position and velocity the arms are commanded to have at ``now``: a trajectory of position-only points is
    followed piecewise linearly (a JointTrajectoryController's interpolation of position-only points), at rest after
    its last point; before ``sent.sent_at``, where the trajectory it replaced has them (a stop within a plan's lead
    started 30 ms ahead of the arm, at the plan's first segment's speed), else at its start, at rest."""
    if now < sent.sent_at:
        if sent.before is not None:
            return commanded_at(sent.before, now)
        return np.asarray(sent.start, dtype=np.float64).copy(), np.zeros(np.shape(sent.start))
    knots = np.concatenate([[0.0], np.asarray(sent.command.times, dtype=np.float64)])
    points = np.vstack([np.asarray(sent.start, dtype=np.float64)[None, :], sent.command.positions])
    elapsed = now - sent.sent_at
    if elapsed >= knots[-1]:
        return points[-1].copy(), np.zeros(points.shape[1])
    segment = int(np.searchsorted(knots, elapsed, side='right'))
    before, after = segment - 1, segment
    span = knots[after] - knots[before]
    velocity = (points[after] - points[before]) / span
    return points[before] + velocity * (elapsed - knots[before]), velocity


def remaining_of(sent: SentCommand, now: float) -> Command | None:
    """The points of ``sent`` still due after ``now``, timed from ``now`` (None once its last point was due): the rest
    of a trajectory that ends at rest on its last point."""
    elapsed = now - sent.sent_at
    times = np.asarray(sent.command.times)
    due = times > elapsed
    if not due.any():
        return None
    return Command(positions=sent.command.positions[due], times=times[due] - elapsed, hold=False)


def within_travel(start: np.ndarray, command: Command, bound: Command) -> bool:
    """Whether ``command`` moves no joint further along its way from ``start`` than ``bound`` does (the sum of each
    joint's steps, 14-D)."""

    def travel(points: np.ndarray) -> np.ndarray:
        return np.abs(np.diff(np.vstack([np.asarray(start)[None, :], points]), axis=0)).sum(axis=0)

    return bool(np.all(travel(command.positions) <= travel(bound.positions) + 1e-12))


def chunk_start(
    sent: SentCommand | None, state: MeasuredState, *, now: float, row_period_s: float = 0.0, lag_s: float = 0.0
) -> ChunkStart:
    """Where a chunk filtered at ``now`` (monotonic seconds) starts from: where the last trajectory ``sent`` commands
    the arms to be now and how fast, while the arms follow it (the measured position within ``FOLLOWING_WITHIN`` of
    where it commanded them to be when they were measured, ``state.age_s`` ago: a measurement lagging a moving arm
    is not taken for where it is; or, ``lag_s`` > 0, of where it commanded them at most ``lag_s`` before that:
    ``lagging_along``); else (nothing sent, an arm blocked or moved by hand) the measured position, at rest. A
    measured state that is not 14 finite numbers is returned as it is (the filter refuses it).

    ``lag_s``: the fuzz under load started the chunk after a state gap's brisk stop where a servo lagging its starved
    stream had been measured, 50 ms before: the stream went back there at once (x1.1-3.3 of the velocity limit in
    one control period, 32 times in 3,334 chunks at load 15).

    Within ``row_period_s`` after the trajectory's last point, the speed is its last segment's: the acceleration
    rule lets a chunk's last row come to rest over one row period after its end, so a chunk that follows within it
    starts from that speed, not from rest (a chunk ending at -1.4 rad/s followed at once by one starting at +2.6
    passed both checks, a reversal of 4 rad/s in one 20 ms tick of the stream: the fuzz's 60 rad/s^2)."""
    measured = np.asarray(state.positions, dtype=np.float64)
    at_rest = ChunkStart(position=measured, velocity=np.zeros_like(measured))
    if sent is None or not (np.isfinite(measured).all() and math.isfinite(state.age_s)):
        return at_rest
    then, _ = commanded_at(sent, now - max(state.age_s, 0.0))
    if then.shape != measured.shape:
        return at_rest
    following = float(np.abs(measured - then).max()) <= FOLLOWING_WITHIN
    if not following and not (lag_s > 0.0 and lagging_along(sent, state, now=now, within_s=lag_s)):
        return at_rest
    position, velocity = commanded_at(sent, now)
    end = sent.sent_at + float(sent.command.times[-1])
    if end <= now < end + row_period_s:
        _, velocity = commanded_at(sent, math.nextafter(end, -math.inf))
    return ChunkStart(position=position, velocity=velocity)


def hold_after(
    sent: SentCommand,
    state: MeasuredState,
    limits: SafetyLimits,
    *,
    now: float,
    row_period_s: float,
    settling_s: float = 0.0,
) -> Command:
    """The hold for arms whose last trajectory ``sent`` has ended: at its last point while the arms follow it
    (``chunk_start``), so an arm that overshot its last target is brought back to it rather than held wherever the
    overshoot took it (holding at each new measurement walks a drifting arm along, out of the box); at the measured
    position (``hold_command``) when the arms do not follow it (blocked, moved by hand). A measured state older than
    ``limits.max_state_age_s`` (or of unknown age) cannot tell: the hold is at the last point, where the arms were
    last commanded to go (a hold at a measurement taken before a stop commanded the arms back to where they had
    been: 6 cm and 2.5 rad/s on fake hardware when its joint states went quiet). Within ``settling_s`` of the
    trajectory's end, arms measured at most ``limits.max_state_age_s`` behind on their own way (``lagging_along``: a
    servo lags its reference, a stream behind its plan after late ticks catches up) are still reaching its last
    point, and the hold is there (the fuzz:
    a hold 50 ms after a state gap's brisk stop commanded an arm lagging 0.155 rad behind it back to where it had
    been measured, x2.7 of its velocity limit in one control period); arms measured off that way, or further behind
    (moved, reset: an arm put home between episodes lies on the way every episode began from), hold where they are.

    Raises:
        SafetyError: a measured state young enough to tell is not 14 finite numbers (nothing to tell following by).
    """
    too_old = not state.age_s <= limits.max_state_age_s
    settling = now < sent.sent_at + float(sent.command.times[-1]) + settling_s
    if too_old or (settling and lagging_along(sent, state, now=now, within_s=limits.max_state_age_s)):
        position = sent.command.positions[-1]
    else:
        position = chunk_start(sent, state, now=now).position
    held = hold_command(MeasuredState(position, 0.0), limits, row_period_s=row_period_s)
    if held.command is None:
        raise SafetyError('hold: the measured state is not 14 finite numbers')
    return held.command


def lagging_along(sent: SentCommand, state: MeasuredState, *, now: float, within_s: float) -> bool:
    """Whether the arm joints were measured within ``FOLLOWING_WITHIN`` of where ``sent`` (or the trajectory it
    replaced) commanded them at some moment of the ``within_s`` before the measurement: behind on their own way,
    sampled every ``LAG_STEP``."""
    measured = np.asarray(state.positions, dtype=np.float64)
    if measured.shape != np.shape(sent.start) or not np.isfinite(measured).all():
        return False
    taken = now - max(float(state.age_s), 0.0) if math.isfinite(state.age_s) else now
    for moment in np.linspace(taken - within_s, taken, max(2, math.ceil(within_s / LAG_STEP) + 1)):
        position, _ = commanded_at(sent, float(moment))
        if float(np.abs(measured - position)[ARM_JOINT_COLUMNS].max()) <= FOLLOWING_WITHIN:
            return True
    return False


def stop_decelerations(limits: SafetyLimits, *, stop_seconds: float = STOP_SECONDS) -> np.ndarray:
    """Each value's deceleration (14,): its velocity limit over ``stop_seconds``, at most its acceleration limit."""
    if not (math.isfinite(stop_seconds) and stop_seconds > 0.0):
        raise SafetyError(f'stopping time must be a positive number of seconds, got {stop_seconds}')
    return np.minimum(np.asarray(limits.velocity, dtype=np.float64) / stop_seconds, limits.acceleration)


def brisk_decelerations(limits: SafetyLimits, *, stop_seconds: float = STOP_SECONDS) -> np.ndarray:
    """Each value's deceleration (14,) for a brisk stop: its acceleration limit where it has one, else (the grippers)
    its velocity limit over ``stop_seconds``. Still a controlled stop: along the commanded motion, at most what a
    command may ask of the arm."""
    gentle = stop_decelerations(limits, stop_seconds=stop_seconds)
    acceleration = np.asarray(limits.acceleration, dtype=np.float64)
    return np.where(np.isfinite(acceleration), acceleration, gentle)


def controlled_stop(
    position: np.ndarray,
    velocity: np.ndarray,
    limits: SafetyLimits,
    *,
    deceleration: np.ndarray,
    row_period_s: float,
    shortest: float | None = None,
) -> Command:
    """Decelerate from ``position`` at ``velocity`` to rest (see the module docstring); a ``hold`` ``Command``.
    ``shortest``: the least duration (s) of a stop (default one row period; a driver's control period for a brisk
    stop, which should end as soon as it may).

    Raises:
        SafetyError: a position, velocity or deceleration that is not 14 finite numbers (decelerations positive).
    """
    period = check_row_period(row_period_s)
    position = np.asarray(position, dtype=np.float64)
    velocity = np.asarray(velocity, dtype=np.float64)
    deceleration = np.asarray(deceleration, dtype=np.float64)
    for label, values in (('position', position), ('velocity', velocity), ('deceleration', deceleration)):
        if values.shape != np.shape(limits.lower) or not np.isfinite(values).all():
            raise SafetyError(f'controlled stop: {label} needs {np.size(limits.lower)} finite numbers')
    if (deceleration <= 0).any():
        raise SafetyError('controlled stop: every deceleration must be positive')
    velocity = np.where(np.abs(velocity) < REST_SPEED, 0.0, velocity)
    duration = float((np.abs(velocity) / deceleration).max())
    if duration <= 0.0:
        target = np.clip(position, limits.lower, limits.upper)
        clipped_time = float((np.abs(target - position) / limits.velocity).max())
        return Command(positions=target[None, :], times=np.array([max(period, clipped_time)]), hold=True)
    least = period if shortest is None else min(check_row_period(shortest), period)
    duration = max(duration, least)  # a slow joint stops over one row period, more gently than it could
    # A stop a hair longer than whole row periods ends on the last of them: a point a nanosecond after another has
    # the same time_from_start once written in nanoseconds, which a JTC refuses whole.
    steps = max(1, math.ceil(duration / period - SAME_ROW))
    times = np.minimum(np.arange(1, steps + 1, dtype=np.float64) * period, duration)
    times[-1] = duration
    # Uniform deceleration of every joint over ``duration``: p(t) = p0 + v t - v t^2 / (2 duration).
    travelled = velocity[None, :] * (times[:, None] - times[:, None] ** 2 / (2.0 * duration))
    positions = np.clip(position[None, :] + travelled, limits.lower, limits.upper)
    return Command(positions=positions, times=times, hold=True)


def stop_in_workspace(
    position: np.ndarray,
    velocity: np.ndarray,
    limits: SafetyLimits,
    *,
    deceleration: np.ndarray,
    row_period_s: float,
    tcp: TcpFunction | None,
    path_samples: int = 1,
    shortest: float | None = None,
) -> Command:
    """A controlled stop whose every point (and ``path_samples`` points along the way to each, in joint space, the
    last the point) keeps both TCPs (``tcp``) in ``limits.workspace``: at ``deceleration``,
    else two or four times as hard (the box comes first: an arm moving towards its side at speed stops beyond it at
    the gentle deceleration), else a hold where the arms are. Without a box or a ``tcp`` function, the plain stop.
    ``shortest``: as for ``controlled_stop``.

    Raises:
        SafetyError: as ``controlled_stop``.
    """
    box = limits.workspace
    if box is None or tcp is None:
        return controlled_stop(
            position, velocity, limits, deceleration=deceleration, row_period_s=row_period_s, shortest=shortest
        )
    for harder in HARDER_STOPS:
        command = controlled_stop(
            position,
            velocity,
            limits,
            deceleration=np.asarray(deceleration) * harder,
            row_period_s=row_period_s,
            shortest=shortest,
        )
        if all(
            box.contains(point) for row in path_points(position, command.positions, path_samples) for point in tcp(row)
        ):
            return command
    held = hold_command(
        MeasuredState(positions=np.asarray(position, dtype=np.float64), age_s=0.0), limits, row_period_s=row_period_s
    )
    return held.command if held.command is not None else command
