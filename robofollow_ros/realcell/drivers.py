"""The arms' drivers as the bridge's writers: one publisher set per driver kind of a robot profile.

Every driver takes a safety ``Command`` (``safety.command_filter``: rows of 14-D targets in the policy's units, each
due ``times`` seconds from now) and writes it in the driver's names and units (``robot.profiles.to_driver``) on the
profile's topics, RELIABLE + VOLATILE (``qos.ARM_COMMANDS``: a driver that joins late never executes an old command).

* ``ros2_control``: one JointTrajectory per arm controller and per gripper controller (merged when the profile puts
  the gripper on the arm's topic), every joint of the controller. A chunk goes out in windows (``window`` seconds,
  0.2 by default): the rows due within the window, then a controlled stop from the window's last row at its speed;
  a thread of the driver's own sends the next window every quarter of a window, each replacing the last on the JTC.
  While the bridge lives the arm follows the chunk; when it dies (SIGKILL, out of memory, a lost host) the arm
  finishes the window it has and decelerates to rest, at most ``window`` plus the stop later, instead of running out
  a 3 s chunk. Every window of a chunk carries the chunk's start on the ROS clock in ``header.stamp``
  (``stamped``), its points due from there: a JTC times a trajectory from its stamp, so each window continues the
  one before exactly, where a window stamped zero is timed from the controller's next update after it arrives and
  met the arm's reference up to a controller period off the bridge's clock, a velocity step at every window (up to
  1.28 times a row's speed on the fuzz). The chunk's start is ``PLAN_LEAD`` after it is sent (``lead``): the first
  window arrives before the chunk's time begins. ``stamped`` False stamps every window zero, for a controller whose
  clock does not agree with the bridge's. ``window`` 0 sends each chunk whole, as one trajectory. Holds and controlled
  stops go out whole, stamped zero (they end at rest). A hold is one point: never an empty trajectory (the JTC
  rejects it and keeps moving, ros2_controllers#902).
* ``piper`` (sensor_msgs/JointState on ``joint_ctrl_single``: six joints and the gripper in ``position``, the speed
  percent in ``velocity[6]``) and ``interbotix_xs`` (JointGroupCommand ``arm`` and JointSingleCommand ``gripper``):
  position streams, so the rows are streamed at the profile's ``control_rate`` by a thread of the driver's own,
  interpolating linearly to the first row and between rows. A new command replaces the one streaming. A chunk
  starts from the last target streamed (the servos' reference), not the measured state, while the arm is measured
  within ``FOLLOWING_WITHIN`` of it: a measurement lagging its target made every new chunk pull the reference back
  (the fuzz counted 1,086 reference steps over the velocity limit, up to 5.8 times it). Its first segment is
  lengthened when the reference is further from the first row than the velocity limits allow in one row. A chunk
  or a hold that starts where the running plan has the arm (now, or at its end) goes on from the last target too:
  a late tick leaves the stream behind its plan, and a jump to the plan would ask the servos for more than their
  limit. An arm further off (blocked, moved by hand) starts where the caller says: the measured state; the grippers
  go on from their last targets either way (the bridge knows a gripper by its command, not by a measurement). (On a ROS
  timer the stream waited behind every other callback of the bridge, which one events executor runs one at a time:
  camera images, joint states, poses.)
"""

from __future__ import annotations

import importlib
import math
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import numpy as np
from builtin_interfaces.msg import Duration
from rclpy.duration import Duration as RclpyDuration
from rclpy.node import Node
from rclpy.publisher import Publisher
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robofollow_ros.errors import GraphError
from robofollow_ros.robot.profiles import RobotProfile, to_driver
from robofollow_ros.ros import qos
from robofollow_ros.safety.command_filter import Command
from robofollow_ros.safety.controlled_stop import FOLLOWING_WITHIN
from robofollow_ros.state_layout import ARMS, GRIP_COLUMNS
from robofollow_ros.units import NS_PER_S

WINDOW_SECONDS = 0.2
"""How far ahead of now a JointTrajectory reaches along a chunk before its closing controlled stop (``JtcDriver``)."""
WINDOWS_PER_HORIZON = 4
"""How many windows are sent while one window's rows run."""
FIRST_POINT_LEAD = 0.03
"""A re-sent window's first point is due at least this long (s) after it is sent."""
PLAN_LEAD = 0.03
"""A chunk sent in stamped windows starts this long (s) after it is sent: its first window reaches the controller
before the chunk's time begins (stamped at the moment of sending, the first segment ran up to a sixth faster on the
fuzz, by the time the window took to arrive)."""
PATH_STEP = 0.005
"""Seconds of a stream's plan between the points its way is sampled at to tell an arm that follows it (at the 3.14
rad/s velocity limit, 0.016 rad apart, well inside ``FOLLOWING_WITHIN``)."""
StopFrom = Callable[[np.ndarray, np.ndarray], Command]
"""The controlled stop from a 14-D position moving at a 14-D velocity (``safety.controlled_stop``)."""
INTERBOTIX_ARM_GROUP = 'arm'
INTERBOTIX_GRIPPER = 'gripper'


class Driver(Protocol):
    """What the bridge sends commands through."""

    def send(self, command: Command, *, start: np.ndarray) -> float:
        """Write ``command``; ``start`` is the 14-D state it begins from. Returns when (monotonic seconds) its
        ``times`` count from: now, or ``lead`` later."""

    @property
    def lead(self) -> float:
        """How long after it is sent a moving command's time begins (0: at once)."""

    def connected(self) -> bool:
        """Whether every command topic has a reader (commands are not replayed to a late one)."""

    def topics(self) -> list[str]:
        """The command topics written."""

    def drain(self, *, timeout: float) -> bool:
        """Wait, at most ``timeout`` seconds, until everything written has reached the driver: a streamed command
        played out, every message acknowledged by its readers. Whether it did."""

    def close(self) -> None:
        """Stop writing (the node is closing)."""


def acknowledged(publishers: Iterable[Publisher], *, deadline: float) -> bool:
    """Whether every message of ``publishers`` (RELIABLE) was acknowledged by its readers before ``deadline``
    (monotonic seconds). A process that ends right after a publication can take the message with it: the fault
    bench saw the hold of a failing bridge never reach the arms, which ran out their window."""
    for publisher in publishers:
        left = max(deadline - time.monotonic(), 0.0)
        if not publisher.wait_for_all_acked(RclpyDuration(nanoseconds=round(left * NS_PER_S))):
            return False
    return True


def message_class(type_name: str) -> Any:
    """The Python class of a ROS message type named ``pkg/msg/Name``.

    Raises:
        GraphError: its package is not installed (the driver's interface package must be built beside the wheels).
    """
    package, _, name = type_name.rpartition('/')
    module_name = package.replace('/', '.')
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError):
        raise GraphError(
            f'message type {type_name} is not installed: build its interface package into this environment '
            '(docs/real-cell.md)'
        ) from None


def duration(seconds: float) -> Duration:
    """A ``builtin_interfaces/Duration`` of ``seconds``."""
    sec, nanosec = divmod(round(float(seconds) * NS_PER_S), NS_PER_S)
    return Duration(sec=int(sec), nanosec=int(nanosec))


def trajectory(joints: tuple[str, ...], rows: np.ndarray, times: np.ndarray, *, stamp_ns: int = 0) -> JointTrajectory:
    """A JointTrajectory through ``rows`` (N, len(joints)) due ``times`` (N,) seconds after ``stamp_ns`` (ROS time;
    0: when the controller takes it up)."""
    message = JointTrajectory(joint_names=list(joints))
    message.header.stamp.sec, message.header.stamp.nanosec = divmod(int(stamp_ns), NS_PER_S)
    message.points = [
        JointTrajectoryPoint(positions=[float(v) for v in row], time_from_start=duration(t))
        for row, t in zip(rows, times, strict=True)
    ]
    return message


class JtcDriver:
    """ros2_control JointTrajectoryControllers: a chunk in windows that each end in a controlled stop (module
    docstring); ``stop_from`` makes that stop, ``window`` 0 sends each command whole."""

    def __init__(
        self,
        node: Node,
        profile: RobotProfile,
        *,
        stop_from: StopFrom,
        window: float = WINDOW_SECONDS,
        stamped: bool = True,
    ) -> None:
        self.profile = profile
        self.stop_from = stop_from
        self.window = float(window)
        self.stamped = stamped
        self.clock = node.get_clock()
        self.joints: dict[str, list[str]] = {}
        for arm in ARMS:
            spec = profile.arms[arm]
            self.joints.setdefault(spec.command.topic, []).extend(spec.joints)
            self.joints.setdefault(spec.gripper.interface.topic, []).append(spec.gripper.command.joint)
        self.pubs: dict[str, Publisher] = {
            topic: node.create_publisher(JointTrajectory, topic, qos.ARM_COMMANDS) for topic in self.joints
        }
        self.lock = threading.Condition()
        self.plan: tuple[float, np.ndarray, np.ndarray] | None = None
        """(start, monotonic; knot times from 0, seconds; the 14-D points at them, the start state first), while
        windows of it remain to be sent."""
        self.origin_ns = 0
        """The plan's start on the ROS clock: its windows' ``header.stamp`` when ``stamped``."""
        self.closed = False
        self.streamer = threading.Thread(target=self.stream, name='driver-windows', daemon=True)
        self.streamer.start()

    def close(self) -> None:
        """Stop sending windows and end the thread."""
        with self.lock:
            self.closed, self.plan = True, None
            self.lock.notify_all()
        self.streamer.join(timeout=1.0)

    def controller_joints(self) -> dict[str, tuple[str, ...]]:
        """Each command topic's joints, in the order its trajectories list them."""
        return {topic: tuple(joints) for topic, joints in self.joints.items()}

    def topics(self) -> list[str]:
        return list(self.pubs)

    def connected(self) -> bool:
        return all(publisher.get_subscription_count() > 0 for publisher in self.pubs.values())

    def drain(self, *, timeout: float) -> bool:
        return acknowledged(self.pubs.values(), deadline=time.monotonic() + timeout)

    @property
    def lead(self) -> float:
        return PLAN_LEAD if self.stamped and self.window > 0.0 else 0.0

    def send(self, command: Command, *, start: np.ndarray) -> float:
        knots = np.concatenate([[0.0], np.asarray(command.times, dtype=np.float64)])
        points = np.vstack([np.asarray(start, dtype=np.float64)[None, :], np.asarray(command.positions, np.float64)])
        with self.lock:
            now, now_ns = time.monotonic(), self.clock.now().nanoseconds
            if command.hold or self.window <= 0.0:
                self.plan = None
                self.publish(np.asarray(command.times, dtype=np.float64), points[1:])
                self.lock.notify_all()
                return now
            self.plan = (now + self.lead, knots, points)
            self.origin_ns = now_ns + round(self.lead * NS_PER_S)
            self.send_window(elapsed=-self.lead)
            self.lock.notify_all()
            return now + self.lead

    def window_at(self, elapsed: float) -> tuple[np.ndarray, np.ndarray, bool]:
        """The plan's window ``elapsed`` seconds in: the times (from the plan's start) and 14-D rows to send, and
        whether it holds the plan's last row (no later window is needed)."""
        assert self.plan is not None
        _, knots, points = self.plan
        # A point due at once would have the controller jump from where it stands to it within a tick or two.
        ahead = np.flatnonzero(knots > (elapsed + FIRST_POINT_LEAD if elapsed > 0.0 else 1e-9))
        if ahead.size == 0:  # the plan's last point is due within the lead, or was due already
            return np.array([max(float(knots[-1]), elapsed + FIRST_POINT_LEAD)]), points[-1:], True
        inside = ahead[knots[ahead] <= elapsed + self.window + 1e-9]
        if inside.size == ahead.size:
            return knots[ahead], points[ahead], True
        last = int(inside[-1]) if inside.size else int(ahead[0])
        kept = ahead[ahead <= last]
        velocity = (points[last] - points[last - 1]) / (knots[last] - knots[last - 1])
        stop = self.stop_from(points[last], velocity)
        times = np.concatenate([knots[kept], knots[last] + np.asarray(stop.times)])
        return times, np.vstack([points[kept], stop.positions]), False

    def send_window(self, *, elapsed: float | None = None) -> None:
        """Publish the plan's window ``elapsed`` seconds in (default: now; the lock held), stamped with the plan's
        start (``stamped``) or zero, its times then counted from now; the plan is done once a window held its last
        row."""
        assert self.plan is not None
        elapsed = time.monotonic() - self.plan[0] if elapsed is None else elapsed
        times, rows, last = self.window_at(elapsed)
        if last:
            self.plan = None
        if self.stamped:
            self.publish(times, rows, stamp_ns=self.origin_ns)
        else:
            self.publish(times - elapsed, rows)

    def stream(self) -> None:
        """The window thread: a new window every ``1 / WINDOWS_PER_HORIZON`` of a window while the plan lasts (a window
        sent up to three quarters of a window late still replaces the last before its closing stop begins); idle
        between plans."""
        with self.lock:
            while not self.closed:
                if self.plan is None:
                    self.lock.wait()
                    continue
                started = self.plan[0]
                self.lock.wait(timeout=self.window / WINDOWS_PER_HORIZON)
                if self.closed or self.plan is None or self.plan[0] != started:
                    continue
                self.send_window()

    def publish(self, times: np.ndarray, rows: np.ndarray, *, stamp_ns: int = 0) -> None:
        """One trajectory per controller through ``rows`` (N, 14) due ``times`` (N,) seconds after ``stamp_ns`` (0:
        now)."""
        values: dict[str, list[np.ndarray]] = {topic: [] for topic in self.joints}
        for row in rows:
            per_arm = to_driver(self.profile, row)
            by_topic: dict[str, dict[str, float]] = {topic: {} for topic in self.joints}
            for arm in ARMS:
                spec, target = self.profile.arms[arm], per_arm[arm]
                positions = (float(v) for v in target.positions)
                by_topic[spec.command.topic].update(zip(target.joints, positions, strict=True))
                by_topic[spec.gripper.interface.topic][target.gripper_joint] = target.gripper
            for topic, joints in self.joints.items():
                values[topic].append(np.array([by_topic[topic][joint] for joint in joints]))
        messages = {
            topic: trajectory(tuple(self.joints[topic]), np.array(rows_of), times, stamp_ns=stamp_ns)
            for topic, rows_of in values.items()
        }
        for topic, message in messages.items():  # built first, then written back to back
            self.pubs[topic].publish(message)


class StreamedDriver:
    """Position-streaming drivers (piper_ros, interbotix xs_sdk): the rows go out at ``control_rate``, interpolated,
    from a thread of the driver's own (``close`` ends it)."""

    def __init__(self, node: Node, profile: RobotProfile, *, velocity: np.ndarray | None = None) -> None:
        self.profile = profile
        self.period = 1.0 / profile.control_rate
        self.velocity = None if velocity is None else np.asarray(velocity, dtype=np.float64)
        self.last: np.ndarray | None = None
        """The last 14-D target streamed."""
        self.lock = threading.Condition()
        self.pubs: dict[str, Publisher] = {}
        for arm in ARMS:
            spec = profile.arms[arm]
            for interface in (spec.command, spec.gripper.interface):
                if interface.topic not in self.pubs:
                    kind = message_class(interface.type)
                    self.pubs[interface.topic] = node.create_publisher(kind, interface.topic, qos.ARM_COMMANDS)
        self.classes = {
            arm: (
                message_class(profile.arms[arm].command.type),
                message_class(profile.arms[arm].gripper.interface.type),
            )
            for arm in ARMS
        }
        self.plan: tuple[float, np.ndarray, np.ndarray] | None = None
        """(start, monotonic; knot times from 0, seconds; the 14-D points at them, the start state first)."""
        self.streaming: tuple[float, np.ndarray, np.ndarray] | None = None
        """The plan the last target came from (a new plan's first target is where it starts, not a step)."""
        self.closed = False
        self.streamer = threading.Thread(target=self.stream, name='driver-stream', daemon=True)
        self.streamer.start()

    def topics(self) -> list[str]:
        return list(self.pubs)

    def connected(self) -> bool:
        return all(publisher.get_subscription_count() > 0 for publisher in self.pubs.values())

    def drain(self, *, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.lock:
            while self.plan is not None and not self.closed and (left := deadline - time.monotonic()) > 0.0:
                self.lock.wait(timeout=left)
            played = self.plan is None
        return acknowledged(self.pubs.values(), deadline=deadline) and played

    @property
    def lead(self) -> float:
        return 0.0

    def send(self, command: Command, *, start: np.ndarray) -> float:
        with self.lock:
            origin = self.origin(command, np.asarray(start, dtype=np.float64))
            knots = np.concatenate([[0.0], np.asarray(command.times, dtype=np.float64)])
            points = np.vstack([origin[None, :], np.asarray(command.positions, np.float64)])
            if self.velocity is not None:
                needed = float((np.abs(points[1] - points[0]) / self.velocity).max())
                knots[1:] += max(0.0, needed - knots[1])
            self.plan = (now := time.monotonic(), knots, points)
            # The first target goes out now, not one period later (a stop holds at once), and under the lock: no row
            # of the plan it replaces can follow it.
            self.tick()
            self.lock.notify_all()
            return now

    def origin(self, command: Command, start: np.ndarray) -> np.ndarray:
        """Where ``command`` streams from: the last target while the arm (``start``) is within ``FOLLOWING_WITHIN`` of
        it or of the running plan's way (``plan_path``), else ``start`` (an arm that does not follow: a hold where it
        stands, a chunk from there). A late tick leaves the stream behind its plan (each target moves at most the
        velocity limit over a period), and the bridge starts a chunk or a stop where the plan has the arm, or holds at
        the plan's end once its time is over: taken for an arm that does not follow, the first target jumped the lag
        at once (x1.16 of the limit in one period for a chunk, x2.05 for a gripper's hold; a stop during a stop the
        stream was 0.16 rad behind, x2.7: the fuzz). The grippers go on from their last targets whatever the arms
        do: an arm that did not follow made the grippers jump too (x3.4, the fuzz)."""
        last = self.last
        if last is None or not np.isfinite(start).all():
            return start
        near = last[None, :] if self.plan is None else np.vstack([last[None, :], self.plan_path()])
        following = float(np.abs(near - start).max(axis=1).min()) <= FOLLOWING_WITHIN
        origin = last.copy() if following else start.copy()
        origin[GRIP_COLUMNS] = last[GRIP_COLUMNS]
        return origin

    def plan_path(self) -> np.ndarray:
        """The running plan's way (N, 14), sampled every ``PATH_STEP`` seconds of its clock and at its knots."""
        assert self.plan is not None
        knots = self.plan[1]
        return self.plan_at(np.union1d(np.arange(0.0, float(knots[-1]), PATH_STEP), knots))

    def plan_at(self, times: np.ndarray) -> np.ndarray:
        """The running plan's 14-D points (N, 14) ``times`` (N,) seconds into it, interpolated linearly."""
        assert self.plan is not None
        _, knots, points = self.plan
        return np.stack([np.interp(times, knots, points[:, c]) for c in range(points.shape[1])], axis=1)

    def target(self, elapsed: float) -> tuple[np.ndarray, bool]:
        """The interpolated 14-D target ``elapsed`` seconds into the plan, and whether the plan is over."""
        assert self.plan is not None
        points = self.plan[2]
        if elapsed >= self.plan[1][-1]:
            return points[-1], True
        return self.plan_at(np.array([elapsed]))[0], False

    def tick(self) -> None:
        """Publish the plan's current target (the lock held); the plan ends once its last row went out.

        A tick late by a millisecond would take the plan a millisecond further than one control period of it: each
        target after a plan's first moves at most the velocity limit times the control period from the one before,
        along the way to the plan's target (a late tick leaves the stream that much behind the plan's clock, which
        it makes up where the plan goes slower than the limit), so no target asks a servo for more than its limit
        over a control period, whatever the thread's timing."""
        assert self.plan is not None
        row, done = self.target(time.monotonic() - self.plan[0])
        if self.velocity is not None and self.last is not None and self.streaming is self.plan:
            row, reached = step_towards(self.last, row, self.velocity * self.period)
            done = done and reached
        self.streaming = self.plan
        self.publish(row)
        if done:
            self.plan = None
            self.lock.notify_all()  # a drain waits for the plan's end

    def stream(self) -> None:
        """The streaming thread: a tick every control period of the plan's own clock, until it is over; idle
        between plans."""
        with self.lock:
            while not self.closed:
                if self.plan is None:
                    self.lock.wait()
                    continue
                started = self.plan[0]
                now = time.monotonic()
                due = started + (math.floor((now - started) / self.period) + 1) * self.period
                self.lock.wait(timeout=due - now)
                if self.closed or self.plan is None or self.plan[0] != started or time.monotonic() < due:
                    continue  # closed, replaced (a new plan's grid), or woken early
                self.tick()

    def close(self) -> None:
        """Stop streaming and end the thread."""
        with self.lock:
            self.closed, self.plan = True, None
            self.lock.notify_all()
        self.streamer.join(timeout=1.0)

    def publish(self, row: np.ndarray) -> None:
        self.last = np.asarray(row, dtype=np.float64).copy()
        per_arm = to_driver(self.profile, row)
        for arm in ARMS:
            spec, target = self.profile.arms[arm], per_arm[arm]
            arm_class, gripper_class = self.classes[arm]
            if self.profile.driver == 'piper':
                # joint_ctrl_single: position[0..5] joints, position[6] the gripper, velocity[6] the speed percent.
                message = arm_class(
                    name=[*target.joints, target.gripper_joint],
                    position=[*(float(v) for v in target.positions), float(target.gripper)],
                    velocity=[0.0] * len(target.joints) + [float(self.profile.speed_percent or 0.0)],
                )
                self.pubs[spec.command.topic].publish(message)
                if spec.gripper.interface.topic != spec.command.topic:
                    self.pubs[spec.gripper.interface.topic].publish(message)
            else:
                self.pubs[spec.command.topic].publish(
                    arm_class(name=INTERBOTIX_ARM_GROUP, cmd=[float(v) for v in target.positions])
                )
                self.pubs[spec.gripper.interface.topic].publish(
                    gripper_class(name=INTERBOTIX_GRIPPER, cmd=float(target.gripper))
                )


def step_towards(last: np.ndarray, target: np.ndarray, most: np.ndarray) -> tuple[np.ndarray, bool]:
    """``target``, or the point on the way there from ``last`` where some coordinate has moved ``most`` (per
    coordinate); and whether ``target`` is reached."""
    step = np.asarray(target, dtype=np.float64) - last
    with np.errstate(divide='ignore', invalid='ignore'):
        share = float(np.min(np.where(np.abs(step) > 0.0, most / np.abs(step), np.inf)))
    if share >= 1.0:
        return np.asarray(target, dtype=np.float64), True
    return last + share * step, False


def make_driver(
    node: Node,
    profile: RobotProfile,
    *,
    stop_from: StopFrom,
    window: float = WINDOW_SECONDS,
    stamped: bool = True,
    velocity: np.ndarray | None = None,
) -> JtcDriver | StreamedDriver:
    """The driver writers a profile's ``driver`` kind needs (``stop_from``, ``window`` and ``stamped``: a JTC's
    windows; ``velocity``, 14-D: the limits a position stream's first segment keeps).

    Raises:
        GraphError: the driver's message package is not installed.
    """
    if profile.driver == 'ros2_control':
        return JtcDriver(node, profile, stop_from=stop_from, window=window, stamped=stamped)
    return StreamedDriver(node, profile, velocity=velocity)
