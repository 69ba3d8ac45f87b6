"""``filter_chunk``: what of a policy's chunk may be sent to real arms, with a report of every intervention.

The rules, in order (each row is a 14-D absolute target, ``row_period_s`` apart):

1. The measured state must be 14 finite numbers, else nothing can be sent (not even a hold: there is no position
   to hold at); it must be at most ``max_state_age_s`` old, else the arms hold.
2. A chunk that is not a [T, 14] array of numbers, or holds a non-finite value anywhere, is refused whole: hold.
3. Joint limits: a target outside its bounds is clamped to the bound (``clamp``) or refuses the chunk from its row
   on (``refuse``); a target within ``POSITION_TOLERANCE`` of the bound is clamped in both modes.
4. Velocity: each row's change from the row before (the first row's from the chunk's start: where the arms are
   commanded to be, ``ChunkStart``, by default the measured state) over its duration must stay within every joint's
   velocity limit. ``refuse`` refuses the chunk from the first too-fast row on;
   ``stretch`` lengthens that row's ``time_from_start`` increment until it complies (at most ``max_stretch`` row
   periods, beyond that the row is refused).
5. Acceleration: the change of each joint's speed at every row, over one row period, must stay within its
   acceleration limit: the first row's from the start's commanded speed (rest by default), and the last row's to
   rest (a chunk sent whole ends at rest on its last row; one cut short by a rule before ends in the caller's
   controlled stop). From the first row asking more, the chunk is refused.
6. Workspace: from the first row whose TCP (of either arm, by the ``tcp`` function passed in) leaves the workspace
   box, the chunk is refused. An arm measured outside the box (a real arm lags and overshoots its commands by a few
   millimetres) may move back: a row outside is accepted while no TCP coordinate gets further outside than the row
   before it (the first row: the measured state), so that a hold is not the only command left. With
   ``path_samples`` > 1 the same holds for that many points along each row's straight line in joint space from the
   row before (the first row's from the chunk's start), the last the row itself: a position-streaming driver sends
   those points between the rows (``path_samples_for``).

Refusing "from a row on" sends the rows before it (each passed every rule); when no row is left the arms hold.
A hold is a one-point trajectory at the measured position (clipped into the joint limits), due one row period from
now: a ros2_control JointTrajectoryController rejects an empty trajectory (ros2_controllers#902), so an empty one
would leave the arm moving.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from robofollow_ros.errors import RoboFollowError, SafetyError
from robofollow_ros.safety.limits import (
    POSITION_TOLERANCE,
    Intervention,
    InterventionKind,
    SafetyLimits,
    WorkspaceBox,
    joint_name,
    workspace_names,
)
from robofollow_ros.state_layout import ACTION_DIM, ARMS

WORKSPACE_TOLERANCE = 1e-9
"""m: a TCP coordinate outside the box may get this much further out from row to row (rounding)."""

TcpFunction = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
"""Forward kinematics of a 14-D state: ``tcp(state) -> (left_xyz, right_xyz)`` in the world frame (m). One that
also has ``many(states) -> (N, 2, 3)`` (``profile_limits.ProfileTcp``) is asked for many states at once."""

SPEED_TOLERANCE = 1e-9
"""Relative slack on the velocity limit (a row exactly at the limit passes despite rounding)."""


@dataclass(frozen=True)
class MeasuredState:
    """The arms' latest measured joint state in the 14-D layout and how long ago it was measured (s)."""

    positions: np.ndarray
    age_s: float


@dataclass(frozen=True)
class ChunkStart:
    """Where the arms are commanded to be (14,) when a chunk starts, and the speed they are commanded to have (14,):
    the reference a new command takes over from (``controlled_stop.chunk_start``)."""

    position: np.ndarray
    velocity: np.ndarray


@dataclass(frozen=True)
class Command:
    """What may be sent to the arms: ``positions`` (N, 14), N >= 1, each due ``times`` (N,) seconds after the
    trajectory's start (strictly increasing, positive: the JTC's ``time_from_start``); ``hold`` when it is a hold."""

    positions: np.ndarray
    times: np.ndarray
    hold: bool


@dataclass(frozen=True)
class SafetyDecision:
    """The outcome of one safety check.

    Attributes:
        command: what to send, or ``None`` when nothing can be sent (the measured state is unusable: the caller
            must not publish, and should stop the controller another way, e.g. cancel its action goal).
        interventions: every change or refusal, in the order the rules found them (empty: sent as asked).
        rows_in: how many rows the chunk had (0 for a hold that answers no chunk).
        stop_points: points of a controlled stop the caller appended to ``command`` after the chunk's rows (a chunk
            refused from a row on decelerates instead of ending its last row at speed).
    """

    command: Command | None
    interventions: tuple[Intervention, ...]
    rows_in: int
    stop_points: int = 0

    @property
    def held(self) -> bool:
        """Whether the arms are told to hold instead of moving."""
        return self.command is not None and self.command.hold

    @property
    def rows_sent(self) -> int:
        """How many of the chunk's rows go to the arms (0 for a hold or nothing)."""
        return 0 if self.command is None or self.command.hold else len(self.command.positions) - self.stop_points

    @property
    def untouched(self) -> bool:
        """Whether the chunk goes out exactly as the policy asked."""
        return not self.interventions and not self.held and self.command is not None

    def summary(self) -> str:
        """One line: what is sent and why anything changed."""
        if self.command is None:
            head = 'nothing sent'
        elif self.command.hold:
            head = 'hold'
        else:
            head = f'{self.rows_sent}/{self.rows_in} rows sent'
        if not self.interventions:
            return head
        shown = '; '.join(item.describe() for item in self.interventions[:4])
        more = f' (+{len(self.interventions) - 4} more)' if len(self.interventions) > 4 else ''
        return f'{head}: {shown}{more}'

    def to_dict(self) -> dict[str, object]:
        """JSON-ready record of the decision (for episode results)."""
        return {
            'outcome': 'none' if self.command is None else 'hold' if self.command.hold else 'send',
            'rows_in': self.rows_in,
            'rows_sent': self.rows_sent,
            'interventions': [item.to_dict() for item in self.interventions],
        }


def check_row_period(row_period_s: float) -> float:
    """``row_period_s`` as a float, or ``SafetyError`` unless it is finite and positive."""
    period = float(row_period_s)
    if not (np.isfinite(period) and period > 0.0):
        raise SafetyError(f'row period must be a positive number of seconds, got {row_period_s}')
    return period


def hold_command(
    state: MeasuredState,
    limits: SafetyLimits,
    *,
    row_period_s: float,
    reasons: tuple[Intervention, ...] = (),
    rows_in: int = 0,
) -> SafetyDecision:
    """A hold at the measured position: one point, due one row period from now (never an empty trajectory).

    The position is clipped into the joint limits (reported as ``hold_clipped``; the point is then due late enough
    for the velocity limits); when the measured state is not 14 finite numbers there is nothing to hold at and the
    decision carries no command (``invalid_state``).
    """
    period = check_row_period(row_period_s)
    positions = _state_vector(state)
    if positions is None:
        invalid = Intervention('invalid_state', None, None, float('nan'), float('nan'))
        return SafetyDecision(command=None, interventions=(*reasons, invalid), rows_in=rows_in)
    target = np.clip(positions, limits.lower, limits.upper)
    clipped = tuple(
        Intervention(
            'hold_clipped',
            None,
            joint_name(limits, int(column)),
            float(positions[column]),
            float(limits.lower[column] if positions[column] < limits.lower[column] else limits.upper[column]),
        )
        for column in np.flatnonzero(target != positions)
    )
    # A clipped hold moves the arm back inside its limits: slowly enough for the velocity limits.
    duration = max(period, float((np.abs(target - positions) / limits.velocity).max()))
    command = Command(positions=target[None, :], times=np.array([duration]), hold=True)
    return SafetyDecision(command=command, interventions=(*reasons, *clipped), rows_in=rows_in)


def path_samples_for(row_period_s: float, control_rate_hz: float) -> int:
    """How many points of each row's way a driver that streams interpolated targets at ``control_rate_hz`` sends
    (the workspace rule checks each of them): one per control period of the row, at least one."""
    return max(1, math.ceil(check_row_period(row_period_s) * float(control_rate_hz) - 1e-9))


def path_points(start: np.ndarray, points: np.ndarray, samples: int) -> np.ndarray:
    """``samples`` points evenly along each straight segment in joint space from ``start`` (14,) through ``points``
    (N, 14), each segment's last the point itself: (N * samples, 14)."""
    points = np.asarray(points, dtype=np.float64)
    before = np.vstack([np.asarray(start, dtype=np.float64)[None, :], points[:-1]])
    fractions = np.arange(1, samples + 1, dtype=np.float64) / samples
    along = before[:, None, :] + fractions[None, :, None] * (points - before)[:, None, :]
    along[:, -1] = points
    return along.reshape(-1, points.shape[1])


def filter_chunk(
    chunk: object,
    *,
    state: MeasuredState,
    limits: SafetyLimits,
    row_period_s: float,
    tcp: TcpFunction | None = None,
    start: ChunkStart | None = None,
    path_samples: int = 1,
) -> SafetyDecision:
    """What of ``chunk`` (T, 14 absolute targets, ``row_period_s`` apart) may be sent from ``state``.

    ``start`` is where the rows start from and at what speed (a measured state lags the arm it measures); by
    default the measured position, at rest. ``path_samples`` points along each row's way are held to the workspace
    (1: the rows alone). Never raises for what a policy returns; see the module docstring for the rules.

    Raises:
        SafetyError: the row period is not positive, ``limits`` has a workspace but no ``tcp`` is given,
            ``start`` is not 14 finite positions and velocities, or ``path_samples`` is not a positive integer.
    """
    period = check_row_period(row_period_s)
    if not (isinstance(path_samples, int) and path_samples >= 1):
        raise SafetyError(f'path samples must be a positive integer, got {path_samples!r}')
    if limits.workspace is not None and tcp is None:
        raise SafetyError('the safety limits have a workspace box: pass the tcp function (forward kinematics)')
    measured = _state_vector(state)
    if measured is None:
        return hold_command(state, limits, row_period_s=period)
    origin, speed = _start_vectors(start, measured)
    rows, reasons, rows_in = _parse_chunk(chunk, limits)
    if not np.isfinite(state.age_s) or state.age_s > limits.max_state_age_s:
        stale = Intervention('stale_state', None, None, float(state.age_s), limits.max_state_age_s)
        return hold_command(state, limits, row_period_s=period, reasons=(*reasons, stale), rows_in=rows_in)
    if rows is None:
        return hold_command(state, limits, row_period_s=period, reasons=reasons, rows_in=rows_in)
    found: list[Intervention] = []
    rows, cut = _apply_joint_limits(rows, limits, found)
    times, cut = _apply_velocity(rows[:cut], origin, limits, period, found)
    cut = _apply_acceleration(rows[:cut], times, origin, speed, limits, period, found, whole=cut == len(rows))
    if limits.workspace is not None and tcp is not None:
        cut = _apply_workspace(
            rows[:cut], limits.workspace, tcp, found, start=measured, origin=origin, samples=path_samples
        )
    if cut < rows_in:
        found.append(Intervention('rows_refused', cut, None, float(rows_in - cut), float('nan')))
    if cut == 0:
        return hold_command(state, limits, row_period_s=period, reasons=tuple(found), rows_in=rows_in)
    command = Command(positions=rows[:cut].copy(), times=times[:cut].copy(), hold=False)
    return SafetyDecision(command=command, interventions=tuple(found), rows_in=rows_in)


def _state_vector(state: MeasuredState) -> np.ndarray | None:
    """The measured positions as a (14,) float array, or ``None`` when they are not 14 finite numbers."""
    try:
        positions = np.asarray(state.positions, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if positions.shape != (ACTION_DIM,) or not np.isfinite(positions).all():
        return None
    return positions


def _start_vectors(start: ChunkStart | None, measured: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The start's position and velocity (14,) each: ``measured`` at rest when there is no ``start``."""
    if start is None:
        return measured, np.zeros(ACTION_DIM)
    position = np.asarray(start.position, dtype=np.float64)
    velocity = np.asarray(start.velocity, dtype=np.float64)
    for label, values in (('position', position), ('velocity', velocity)):
        if values.shape != (ACTION_DIM,) or not np.isfinite(values).all():
            raise SafetyError(f'chunk start: {label} needs {ACTION_DIM} finite numbers')
    return position, velocity


def _parse_chunk(chunk: object, limits: SafetyLimits) -> tuple[np.ndarray | None, tuple[Intervention, ...], int]:
    """The chunk as a (T, 14) float array, or ``None`` with the reasons it is refused whole; and its row count."""
    try:
        array = np.asarray(chunk)
        rows = array.astype(np.float64) if array.dtype.kind in 'fiu' else None
    except (TypeError, ValueError):
        rows = None
    if rows is None or rows.ndim != 2 or rows.shape[0] < 1 or rows.shape[1] != ACTION_DIM:
        size = float(np.size(rows)) if rows is not None else float('nan')
        rows_in = len(rows) if rows is not None and rows.ndim == 2 else 0
        return None, (Intervention('malformed', None, None, size, float(ACTION_DIM)),), rows_in
    bad = np.argwhere(~np.isfinite(rows))
    if len(bad):
        reasons = tuple(
            Intervention(
                'non_finite', int(row), joint_name(limits, int(column)), float(rows[row, column]), float('nan')
            )
            for row, column in bad
        )
        return None, reasons, len(rows)
    return rows, (), len(rows)


def _apply_joint_limits(rows: np.ndarray, limits: SafetyLimits, found: list[Intervention]) -> tuple[np.ndarray, int]:
    """Clamp (or, in ``refuse`` mode, cut at) targets outside the joint limits; returns the rows and the cut."""
    cut = len(rows)
    if limits.limit_mode == 'refuse':
        beyond = (rows < limits.lower - POSITION_TOLERANCE) | (rows > limits.upper + POSITION_TOLERANCE)
        refused_rows = np.flatnonzero(beyond.any(axis=1))
        if len(refused_rows):
            cut = int(refused_rows[0])
            for column in np.flatnonzero(beyond[cut]):
                found.append(_position_intervention('position_refused', rows, cut, int(column), limits))
    clamped = np.clip(rows[:cut], limits.lower, limits.upper)
    for row, column in np.argwhere(clamped != rows[:cut]):
        found.append(_position_intervention('position_clamped', rows, int(row), int(column), limits))
    return np.vstack([clamped, rows[cut:]]), cut


def _position_intervention(
    kind: InterventionKind, rows: np.ndarray, row: int, column: int, limits: SafetyLimits
) -> Intervention:
    value = float(rows[row, column])
    bound = limits.lower[column] if value < limits.lower[column] else limits.upper[column]
    return Intervention(kind, row, joint_name(limits, column), value, float(bound))


def _apply_velocity(
    rows: np.ndarray, measured: np.ndarray, limits: SafetyLimits, period: float, found: list[Intervention]
) -> tuple[np.ndarray, int]:
    """Each row's ``time_from_start`` (s), and the first row that is refused as too fast (``len(rows)`` if none)."""
    previous = np.vstack([measured[None, :], rows[:-1]]) if len(rows) else np.zeros((0, ACTION_DIM))
    needed = np.abs(rows - previous) / limits.velocity  # seconds each joint needs for its change
    durations = np.full(len(rows), period)
    for row in range(len(rows)):
        slowest = float(needed[row].max())
        if slowest <= period * (1.0 + SPEED_TOLERANCE):
            continue
        if limits.velocity_mode == 'stretch' and slowest <= period * limits.max_stretch:
            column = int(np.argmax(needed[row]))
            found.append(Intervention('row_stretched', row, joint_name(limits, column), slowest, period))
            durations[row] = slowest
            continue
        allowed = period * (limits.max_stretch if limits.velocity_mode == 'stretch' else 1.0)
        speeds = np.abs(rows[row] - previous[row]) / allowed
        for fast in np.flatnonzero(speeds > limits.velocity * (1.0 + SPEED_TOLERANCE)):
            found.append(
                Intervention(
                    'too_fast',
                    row,
                    joint_name(limits, int(fast)),
                    float(speeds[fast]),
                    float(limits.velocity[fast]),
                )
            )
        return np.cumsum(durations[:row]), row
    return np.cumsum(durations), len(rows)


def _apply_acceleration(
    rows: np.ndarray,
    times: np.ndarray,
    origin: np.ndarray,
    speed: np.ndarray,
    limits: SafetyLimits,
    period: float,
    found: list[Intervention],
    *,
    whole: bool,
) -> int:
    """The first row whose speed differs from the speed before it (the first row's: ``speed``) by more than the
    acceleration limits allow in one row period, or, when the rows are the ``whole`` chunk, the last row if it cannot
    come to rest at its end (rows cut short end in a controlled stop instead); ``len(rows)`` if none."""
    if not len(rows):
        return 0
    durations = np.diff(np.concatenate([[0.0], times]))
    velocities = np.diff(np.vstack([origin[None, :], rows]), axis=0) / durations[:, None]
    before = np.vstack([speed[None, :], velocities])
    after = np.vstack([velocities, np.zeros((1, ACTION_DIM))])
    if not whole:
        before, after = before[:-1], after[:-1]
    asked = np.abs(after - before) / period  # at each row's start, and the last row's end
    over = asked > limits.acceleration * (1.0 + SPEED_TOLERANCE)
    knots = np.flatnonzero(over.any(axis=1))
    if not len(knots):
        return len(rows)
    row = min(int(knots[0]), len(rows) - 1)
    for column in np.flatnonzero(over[knots[0]]):
        found.append(
            Intervention(
                'over_acceleration',
                row,
                joint_name(limits, int(column)),
                float(asked[knots[0], column]),
                float(limits.acceleration[column]),
            )
        )
    return row


def _apply_workspace(
    rows: np.ndarray,
    box: WorkspaceBox,
    tcp: TcpFunction,
    found: list[Intervention],
    *,
    start: np.ndarray,
    origin: np.ndarray,
    samples: int,
) -> int:
    """The first row whose TCP (either arm), or one of the ``samples`` points of its way from the row before (the
    first row's from ``origin``), leaves ``box`` or gets further outside than the point before it (the first: the
    measured ``start``), reported per coordinate; ``len(rows)`` if none."""
    measured = _tcp_excess(start, box, tcp)
    allowed = np.zeros((len(ARMS), 3)) if measured is None else np.where(np.isfinite(measured), measured, 0.0)
    if not len(rows):
        return 0
    points = path_points(origin, rows, samples)
    for index, excess in enumerate(tcp_excesses(points, box, tcp)):
        row = index // samples
        if excess is None:
            found.append(Intervention('outside_workspace', row, None, float('nan'), float('nan')))
            return row
        worse = excess > allowed + WORKSPACE_TOLERANCE
        if worse.any():
            _report_outside(points[index], worse, row, box, tcp, found)
            return row
        allowed = excess
    return len(rows)


def _report_outside(
    point: np.ndarray, worse: np.ndarray, row: int, box: WorkspaceBox, tcp: TcpFunction, found: list[Intervention]
) -> None:
    points = tcp(point.copy())
    for arm_index, axis in zip(*np.nonzero(worse), strict=True):
        arm = ARMS[int(arm_index)]
        value = float(np.asarray(points[int(arm_index)], dtype=np.float64).reshape(3)[axis])
        low, high = box.lower[axis], box.upper[axis]
        found.append(
            Intervention('outside_workspace', row, workspace_names(arm)[axis], value, low if value < low else high)
        )


def tcp_excesses(states: np.ndarray, box: WorkspaceBox, tcp: TcpFunction) -> list[np.ndarray | None]:
    """For each of ``states`` (N, 14): how far each arm's TCP lies outside ``box`` per axis (2, 3), or ``None`` where
    the forward kinematics fails; all at once when ``tcp`` has ``many``."""
    many = getattr(tcp, 'many', None)
    if many is not None:
        try:
            points = np.asarray(many(states), dtype=np.float64)
        except (ValueError, TypeError, RoboFollowError):
            points = None
        if points is not None and points.shape == (len(states), len(ARMS), 3):
            return list(box.excess(points))
    return [_tcp_excess(state.copy(), box, tcp) for state in states]


def _tcp_excess(positions: np.ndarray, box: WorkspaceBox, tcp: TcpFunction) -> np.ndarray | None:
    """(2, 3): how far each arm's TCP lies outside ``box`` per axis, or ``None`` when the forward kinematics fails
    (outside every box)."""
    try:
        points = tcp(positions)
        arms = [np.asarray(point, dtype=np.float64).reshape(3) for point in points]
    except (ValueError, TypeError, RoboFollowError):
        return None
    if len(arms) != len(ARMS):
        return None
    return box.excess(np.stack(arms))
