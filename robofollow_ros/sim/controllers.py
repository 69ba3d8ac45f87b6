"""What a robot driver does with its commands between two control ticks, for the fake hardware (no ROS, no MuJoCo).

Two kinds of driver, both in the policy's units (the 14-D layout's radians and normalised grippers; the ROS side
converts from the driver's units through the robot profile):

* ``TrajectoryFollower``: a ros2_control JointTrajectoryController (ros2_controllers, JTC). A goal names a start
  time (zero: the moment it is received) and points with their ``time_from_start``; on receipt it replaces whatever
  ran before, and the setpoint moves linearly from the *measured* position at receipt (the controller's "state
  before the trajectory") to the first point, then from point to point, and holds the last one. An empty
  trajectory, times that do not increase, or a timed trajectory that ends in the past are refused and change
  nothing, as the JTC refuses them (an empty one no longer stops the arm: ros2_controllers#902).
* ``StreamedTarget``: a streamed position command (Interbotix xs_sdk ``JointGroupCommand``, AgileX piper_ros
  ``joint_ctrl_single``): each command is a new target the joints move to at no more than their speed limit.

``Setpoints`` owns the 14 columns: each controller drives its columns while it has a command; the other columns
keep their last setpoint (a motor holding its position).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros.errors import DriverCommandError
from robofollow_ros.state_layout import STATE_DIM, Numbers
from robofollow_ros.units import NS_PER_S


@dataclass(frozen=True)
class TrajectoryGoal:
    """A JointTrajectory in policy units, its joints already mapped to the controller's columns.

    Attributes:
        start_ns: ``header.stamp`` in ROS time (ns); 0 = start when received.
        times_ns: each point's ``time_from_start`` (ns), shape (N,).
        positions: each point's positions in the controller's column order, shape (N, k).
    """

    start_ns: int
    times_ns: np.ndarray
    positions: np.ndarray


class TrajectoryFollower:
    """One JointTrajectoryController over ``columns`` of the 14-D state."""

    def __init__(self, columns: Sequence[int]) -> None:
        self.columns = np.asarray(columns, dtype=np.intp)
        self._knot_s: np.ndarray | None = None
        self._knot_q: np.ndarray | None = None
        self._origin_ns = 0

    @property
    def active(self) -> bool:
        """Whether a trajectory is loaded (it keeps holding its last point once finished)."""
        return self._knot_s is not None

    def accept(self, goal: TrajectoryGoal, *, now_ns: int, measured: np.ndarray) -> None:
        """Replace the current trajectory by ``goal``, received at ``now_ns`` with the columns at ``measured``.

        Raises:
            DriverCommandError: no points, times not strictly increasing, non-finite positions, a shape that does not
                fit the columns, or a start time whose trajectory ends before ``now_ns``.
        """
        times = np.asarray(goal.times_ns, dtype=np.int64)
        positions = np.asarray(goal.positions, dtype=np.float64)
        if times.size == 0:
            raise DriverCommandError('Empty trajectory received.')
        if positions.shape != (times.size, self.columns.size):
            raise DriverCommandError(
                f'trajectory points need {self.columns.size} positions each, got shape {positions.shape}'
            )
        if not np.all(np.isfinite(positions)):
            raise DriverCommandError('trajectory positions must be finite')
        if np.any(times < 0) or np.any(np.diff(times) <= 0):
            raise DriverCommandError(f'time_from_start must increase strictly from 0, got {times.tolist()} ns')
        start_ns = goal.start_ns if goal.start_ns > 0 else now_ns
        if goal.start_ns > 0 and start_ns + int(times[-1]) < now_ns:
            raise DriverCommandError(
                f'trajectory with start time {goal.start_ns} ns ends '
                f'{(now_ns - start_ns - times[-1]) / NS_PER_S:.3f} s in the past'
            )
        point_s = (start_ns - now_ns + times) / NS_PER_S
        knot_s, knot_q = point_s, positions
        if point_s[0] > 0.0:
            # Before its first point the controller moves from the state it measured when the goal arrived.
            knot_s = np.concatenate([[0.0], point_s])
            knot_q = np.vstack([np.asarray(measured, dtype=np.float64)[None, :], positions])
        self._origin_ns, self._knot_s, self._knot_q = now_ns, knot_s, knot_q

    def sample(self, now_ns: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The setpoint (positions, velocities) of the columns at ``now_ns``; None without a trajectory."""
        if self._knot_s is None or self._knot_q is None:
            return None
        t = (now_ns - self._origin_ns) / NS_PER_S
        knots, values = self._knot_s, self._knot_q
        if t <= knots[0]:
            return values[0].copy(), np.zeros(self.columns.size)
        if t >= knots[-1]:
            return values[-1].copy(), np.zeros(self.columns.size)
        i = int(np.searchsorted(knots, t, side='right')) - 1
        span = knots[i + 1] - knots[i]
        slope = (values[i + 1] - values[i]) / span
        return values[i] + slope * (t - knots[i]), slope

    def clear(self) -> None:
        """Drop the trajectory (the columns hold where they are)."""
        self._knot_s = self._knot_q = None


class StreamedTarget:
    """A streamed position command over ``columns``: the setpoint moves to the latest target at most at ``speed``
    (per column, units per second), times a command's speed scale on the columns ``scaled`` (default all: a Piper's
    speed percent slows its joints, not its gripper, which its driver commands apart)."""

    def __init__(self, columns: Sequence[int], *, speed: Sequence[float], scaled: Sequence[bool] | None = None) -> None:
        self.columns = np.asarray(columns, dtype=np.intp)
        self.speed = np.asarray(speed, dtype=np.float64)
        if self.speed.shape != self.columns.shape or not np.all(self.speed > 0.0):
            raise ValueError('one positive speed per column')
        self.scaled = np.ones(self.columns.shape, dtype=bool) if scaled is None else np.asarray(scaled, dtype=bool)
        if self.scaled.shape != self.columns.shape:
            raise ValueError('one scaled flag per column')
        self.target: np.ndarray | None = None
        self.scale = 1.0

    @property
    def active(self) -> bool:
        """Whether a target was commanded since the last clear."""
        return self.target is not None

    def command(self, target: Numbers, *, scale: float = 1.0) -> None:
        """A new target for the columns, moved to at ``scale`` (0..1] times the speed.

        Raises:
            DriverCommandError: wrong length or non-finite values.
        """
        values = np.asarray(target, dtype=np.float64)
        if values.shape != self.columns.shape or not np.all(np.isfinite(values)):
            raise DriverCommandError(f'need {self.columns.size} finite positions, got {values.tolist()}')
        if not 0.0 < scale <= 1.0:
            raise DriverCommandError(f'speed scale must lie in (0, 1], got {scale:g}')
        self.target, self.scale = values, float(scale)

    def step(self, current: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray] | None:
        """The setpoint after ``dt`` seconds from the columns' ``current`` setpoint; None without a target."""
        if self.target is None:
            return None
        limit = self.speed * np.where(self.scaled, self.scale, 1.0) * dt
        move = np.clip(self.target - current, -limit, limit)
        return current + move, (move / dt if dt > 0.0 else np.zeros_like(move))

    def clear(self) -> None:
        """Forget the target (the columns hold where they are)."""
        self.target = None


Controller = TrajectoryFollower | StreamedTarget


class Setpoints:
    """The 14-D setpoint of the cell, advanced one control period at a time by its controllers."""

    def __init__(self, controllers: Sequence[Controller], *, initial: np.ndarray) -> None:
        self.controllers = tuple(controllers)
        self.position = np.array(initial, dtype=np.float64).reshape(STATE_DIM)
        self.velocity = np.zeros(STATE_DIM)

    def advance(self, now_ns: int, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """The setpoint (positions, velocities) for the period starting at ``now_ns``, ``dt`` seconds long."""
        self.velocity[:] = 0.0
        for controller in self.controllers:
            if isinstance(controller, TrajectoryFollower):
                sampled = controller.sample(now_ns + round(dt * NS_PER_S))
            else:
                sampled = controller.step(self.position[controller.columns], dt)
            if sampled is not None:
                self.position[controller.columns], self.velocity[controller.columns] = sampled
        return self.position.copy(), self.velocity.copy()

    def reset(self, position: np.ndarray) -> None:
        """Clear every command and hold ``position`` (14-D)."""
        for controller in self.controllers:
            controller.clear()
        self.position = np.array(position, dtype=np.float64).reshape(STATE_DIM)
        self.velocity = np.zeros(STATE_DIM)
