"""``RealTimeEnvironment``: a real cell (or fake hardware) in wall-clock time, driven by the same ``run_episode``.

Time runs on. ``reset`` starts the episode the evaluator announced (``SimStatus`` RESET, stamped with its wall clock)
and takes the first observation; ``execute`` sends a chunk through ``SafeMotion`` (the safety filter, then the
driver), waits until its rows are executed (their wall time, then the measured state reaching the last row or a
short extra limit) and takes the next observation. An observation is the latest camera images, the latest measured
joint state (the profile's driver ``joint_states``, ``realcell/driver_feedback.py``) and, for privileged policies, the
latest object and TCP poses; any part older than ``max_age`` is refused: the environment waits for a fresher one
up to ``timeout``, then ends the episode with a ``GraphError`` naming what is old. Never used stale.

``WatchedPolicy`` tells ``SafeMotion``'s dead-man when each query is sent and answered; an answer after the
dead-man's deadline is dropped (the arms already hold) and the next observation is taken.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np

from robofollow_ros import topics
from robofollow_ros.benchmark.types import ARMS, Layout, Task
from robofollow_ros.cell_observation import CellObservation
from robofollow_ros.errors import GraphError, MotionPausedError, MotionStoppedError, PoseMissingError
from robofollow_ros.evaluation.limited_policy import LimitedPolicy
from robofollow_ros.evaluation.real_time import LATE_GAP_ROWS, RealTimeKeeping
from robofollow_ros.realcell.safe_motion import SafeMotion
from robofollow_ros.referee.builder import empty_trajectory
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.robot.specs import DEFAULT_ROBOT
from robofollow_ros.ros.environment import GraphEpisode
from robofollow_ros.ros.observation_cache import ObservationCache
from robofollow_ros.ros.protocol import StatusEvent
from robofollow_ros.safety.command_filter import SafetyDecision
from robofollow_ros.safety.limits import Intervention
from robofollow_ros.state_layout import CAMERAS
from robofollow_ros.units import NS_PER_S

FRESH_POLL = 0.005
"""Seconds between looks for a fresh enough observation (images and poses notify nobody in real mode)."""


def unusable_parts(
    stamps: Mapping[str, int | None],
    *,
    now_ns: int,
    max_age: float,
    latest_known: Collection[str] = (),
    since_ns: int = 0,
) -> dict[str, str]:
    """The parts of an observation that may not be used, each with why (empty: the observation may be taken).

    ``stamps`` holds each part's latest stamp (ns; None: it never arrived). A part must be at most ``max_age``
    seconds old, except those in ``latest_known`` (the objects' poses): these must only have been stamped at or after
    ``since_ns`` (the episode's start: never a pose of the layout before), however long ago. The joint state and
    the TCP poses drive the arms and the images are what a policy sees now, so they must be fresh; an object's pose
    stops updating whenever its tag is hidden (a gripper above it, another object in the way), and the tracker
    never invents one, so its latest pose is the best there is, and waiting for a fresh one would wait for ever
    when the arm that hides it holds still until the next observation.
    Every part stamped before ``since_ns`` belongs to the previous episode (a real cell's last state and poses are
    still young when the next episode starts: its first observation would show the last layout) and is unusable.
    """
    problems: dict[str, str] = {}
    for part, stamp in stamps.items():
        if part in latest_known:
            if stamp is None or stamp < since_ns:
                problems[part] = 'not seen since the episode started'
        elif stamp is None:
            problems[part] = 'never received'
        elif stamp < since_ns:
            problems[part] = 'none since the episode started'
        elif (age := (now_ns - stamp) / NS_PER_S) > max_age:
            problems[part] = f'{age:.3g} s old (limit {max_age:g} s)'
    return problems


def rows_due(decision: SafetyDecision, *, sent_at: float) -> int:
    """How many of the decision's rows were due by now (monotonic ``sent_at``: when it was sent); none of a hold."""
    if decision.command is None or decision.held:
        return 0
    due = np.searchsorted(decision.command.times, time.monotonic() - sent_at, side='right')
    return min(int(due), decision.rows_sent)


class WatchedPolicy(LimitedPolicy):
    """A ``LimitedPolicy`` whose queries the dead-man watches (``motion`` is set by the bridge in real mode)."""

    motion: SafeMotion | None = None

    def predict(self, observation: Any, *, max_rows: int | None = None) -> np.ndarray:
        """The checked chunk; the dead-man counts from the call to the answer (or failure)."""
        if self.motion is not None:
            self.motion.query_sent()
        try:
            return super().predict(observation, max_rows=max_rows)
        finally:
            if self.motion is not None:
                self.motion.answer_arrived()


class RealTimeEnvironment(GraphEpisode):
    """One episode on a real cell.

    Args:
        cache: the bridge's images and poses (latest by stamp).
        motion: the safety filter, driver and measured joints.
        clock_ns: the node's ROS clock now (ns; wall clock in real mode).
        episode_id: the episode the evaluator announced.
        privileged: attach object and TCP poses (the built-in reference policies).
        timeout: seconds to wait for the evaluator's reset, the driver's readers and a fresh observation.
        max_age: seconds an observation's parts may be old.
        log: one line per chunk the safety layer touched, and per refused observation.
    """

    def __init__(
        self,
        cache: ObservationCache,
        motion: SafeMotion,
        *,
        clock_ns: Callable[[], int],
        episode_id: str,
        privileged: bool,
        timeout: float,
        max_age: float,
        log: Callable[[str], object],
    ) -> None:
        super().__init__(cache, episode_id=episode_id, privileged=privileged, timeout=timeout)
        self.motion = motion
        self.clock_ns = clock_ns
        self.max_age = max_age
        self.log = log
        self.held: set[str | None] = set()
        self.unreached_chunks = 0
        self.started = False
        """Objects whose last known pose the latest observation carried (said once when it starts, not per chunk)."""

    def reset(self, task: Task, *, seed: int, layout: Layout, images: bool) -> CellObservation:
        """The first observation of the episode the evaluator reset the cell for; motion is allowed again."""
        self.layout, self.images = layout, images
        found: list[int] = []

        def announced() -> bool:
            match = self.cache.find_status(lambda s: s.event is StatusEvent.RESET and s.episode_id == self.episode_id)
            if match is not None:
                found.append(match[1].stamp_ns)
            return match is not None

        self.cache.wait(announced, timeout=self.timeout, what='the reset of the cell')
        self.origin_ns = found[-1]
        self.motion.release(started_ns=self.origin_ns)
        self.motion.feedback.mark_gaps(late_s=LATE_GAP_ROWS * self.motion.profile.row_period)
        self.started = True
        self.cache.wait(
            self.motion.connected,
            timeout=self.timeout,
            what=f'the driver on the arm command topics ({", ".join(self.motion.driver.topics())})',
            poll=FRESH_POLL,
        )
        self.stamp_ns = self.clock_ns()
        return self._observation()

    def execute(self, chunk: np.ndarray, *, images: bool) -> CellObservation:
        """Send ``chunk`` through the safety filter, wait until it was executed; the next observation."""
        self.images = images
        self.queries += 1
        what = f'chunk {self.queries}'
        if self.motion.take_late():
            silent = Intervention('policy_silent', None, None, float(len(chunk)), self.motion.deadman.deadline_s)
            self.motion.count([silent.kind])
            self.log(f'safety: {what}: dropped, answered after the dead-man deadline (the arms hold)')
        else:
            sent_at = time.monotonic() + self.motion.driver.lead  # when the chunk's time begins
            decision = self.motion.send_chunk(chunk, what=what)
            try:
                reached = self.motion.wait_executed(decision, sent_at=sent_at)
            except MotionPausedError as paused:
                # The arms stopped where the state paused; the next query starts from there.
                self.executed_rows += rows_due(decision, sent_at=sent_at)
                self.log(f'safety: {what}: {paused}')
            except (MotionStoppedError, GraphError):
                # Stopped, or the measured state went stale: the rows already due ran; the episode ends here.
                self.executed_rows += rows_due(decision, sent_at=sent_at)
                self.stamp_ns = self.clock_ns()
                raise
            else:
                self.executed_rows += decision.rows_sent
                if not reached and decision.command is not None:
                    self.unreached_chunks += 1
                    late, error = self.motion.settings.settle_timeout, self.motion.settle_error
                    self.log(f'{what}: {late:g} s after its last row, an arm joint was {error:.3g} rad off')
        self.stamp_ns = self.clock_ns()
        return self._observation()

    def real_time(self) -> RealTimeKeeping | None:
        """What the episode showed of keeping real time up to now (None before it started: nothing moved)."""
        if not self.started:
            return None
        gaps = self.motion.feedback.gaps_since_mark()
        return RealTimeKeeping(
            state_gap_max_s=gaps.largest_s,
            late_state_gaps=gaps.late,
            late_gap_s=self.motion.feedback.late_gap_s,
            unreached_chunks=self.unreached_chunks,
        )

    def trajectory(self) -> Trajectory:
        """Nothing: the referee node builds the trajectory from the topics."""
        return empty_trajectory()

    def _pose_topics(self) -> list[str]:
        assert self.layout is not None
        return [topics.ee_pose_topic(arm) for arm in ARMS] + [
            topics.object_pose_topic(name) for name in self.layout.object_names
        ]

    def _stamps(self, wanted: Collection[str], now_ns: int) -> dict[str, int | None]:
        """The latest stamp (ns) of each part of the observation (None when it never arrived); a driver that stamps its
        joint states zero has them aged by arrival (now minus the driver feedback's age)."""
        state = self.motion.feedback.latest()
        stamps: dict[str, int | None] = {'joint state': None}
        if state is not None:
            stamps['joint state'] = state.stamp_ns if state.stamp_ns > 0 else now_ns - round(state.age_s * NS_PER_S)
        if self.images:
            for camera in CAMERAS:
                items = self.cache.images.get(camera)
                stamps[topics.image_topic(camera)] = next(reversed(items.items)) if items and items.items else None
        for topic in wanted:
            recent = self.cache.poses.get(topic)
            stamps[topic] = next(reversed(recent.items)) if recent is not None and recent.items else None
        return stamps

    def _observation(self) -> CellObservation:
        wanted = self._pose_topics() if self.privileged else []
        objects = {topic for topic in wanted if topics.object_name_from_topic(topic) is not None}
        problems: dict[str, str] = {}
        stamps: dict[str, int | None] = {}

        def fresh() -> bool:
            self.cache.refresh(wanted)
            stamps.clear()
            now_ns = self.clock_ns()
            stamps.update(self._stamps(wanted, now_ns))
            problems.clear()
            problems.update(
                unusable_parts(
                    stamps, now_ns=now_ns, max_age=self.max_age, latest_known=objects, since_ns=self.origin_ns
                )
            )
            return not problems

        try:
            self.cache.wait(fresh, timeout=self.timeout, what='a fresh observation', poll=FRESH_POLL)
        except GraphError as error:
            unseen = sorted(
                name for part in objects if part in problems if (name := topics.object_name_from_topic(part))
            )
            if unseen and set(problems) <= objects:
                raise PoseMissingError(
                    f'no pose of {", ".join(unseen)} from the pose source since the trial started ({self.timeout:g} s '
                    'waited): the trial is void, not run without it'
                ) from None
            raise GraphError(f'{error}: {"; ".join(f"{part} {why}" for part, why in problems.items())}') from None
        now_ns = self.clock_ns()
        held = {
            topics.object_name_from_topic(topic): (now_ns - stamp) / NS_PER_S
            for topic in sorted(objects)
            if (stamp := stamps[topic]) is not None and now_ns - stamp > self.max_age * NS_PER_S
        }
        newly = {name: age for name, age in held.items() if name not in self.held}
        if newly:
            # Not an error: an occluded object keeps its last tracked pose (docs/real-cell.md, Object poses).
            self.log(
                f'after chunk {self.queries}: the last known pose of '
                + ', '.join(f'{name} ({age:.2g} s old)' for name, age in newly.items())
                + ' (said once, until it is seen again)'
            )
        self.held = set(held)
        cell = self.motion.feedback.latest()
        assert cell is not None
        with self.cache.condition:
            images = {c: next(reversed(self.cache.images[c].items.values())) for c in CAMERAS} if self.images else {}
            poses = {topic: next(reversed(self.cache.poses[topic].items.values())) for topic in wanted}
        observation = CellObservation(
            images=images,
            state=self.motion.with_commanded_grips(cell.state),
            time=max(0.0, (cell.stamp_ns - self.origin_ns) / NS_PER_S),
            robot=self.motion.profile.robot or DEFAULT_ROBOT,
        )
        if self.privileged:
            self.attach_poses(observation, [poses[topic] for topic in wanted], wanted)
        return observation
