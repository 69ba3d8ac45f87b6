"""``RosEnvironment``: the sim node seen through topics, driven by the same ``run_episode`` loop as ``CellEnv``.

``reset`` waits for the observation the sim published after the evaluator's reset; ``execute`` publishes a chunk
as one JointTrajectory per arm and waits for the next complete observation (handshake: ``ros/protocol.py``).
Privileged poses (objects, TCPs) are attached only when the policy is a built-in reference policy, as a
mocap-equipped real cell would provide them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from robofollow_ros import topics
from robofollow_ros.bags.cdr import decode_joint_state, decode_poses, default_typestore
from robofollow_ros.benchmark.types import ARMS, Layout, Task
from robofollow_ros.cell_observation import CellObservation
from robofollow_ros.errors import GraphError
from robofollow_ros.referee.builder import empty_trajectory
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.ros.observation_cache import ObservationCache
from robofollow_ros.ros.protocol import SimStatus, StatusEvent
from robofollow_ros.state_layout import CAMERAS, JointLayout
from robofollow_ros.units import NS_PER_S

SAMPLE_POLL = 0.0005
"""Seconds between looks for an on-demand sample that had not arrived with the sim's status (rare: the sim
publishes the frames before the status)."""


@dataclass
class QueryTiming:
    """When the observation a query answers became complete at the sim (its status arrived here)."""

    status_arrival: float = 0.0
    overheads: list[float] = field(default_factory=list)


class GraphEpisode:
    """What one episode over the graph keeps, in the simulator's handshake (``RosEnvironment``) or in real time
    (``realcell.environment.RealTimeEnvironment``): the bridge's cache, the episode, its layout once reset, the
    stamps of its start (``origin_ns``) and latest observation (``stamp_ns``), the queries made and rows executed.
    """

    def __init__(self, cache: ObservationCache, *, episode_id: str, privileged: bool, timeout: float) -> None:
        self.cache = cache
        self.episode_id = episode_id
        self.privileged = privileged
        self.timeout = timeout
        self.images = False
        self.layout: Layout | None = None
        self.origin_ns = 0
        self.stamp_ns = -1
        self.queries = 0
        self.executed_rows = 0
        self.typestore = default_typestore()

    def attach_poses(self, observation: CellObservation, messages: Sequence[bytes], topics_of: Sequence[str]) -> None:
        """Put the TCP and object poses (``messages``, serialised PoseStamped of ``topics_of``) into ``observation``
        for a privileged policy, decoded in one batch (one by one cost ten times as much)."""
        assert self.layout is not None
        series = decode_poses(self.typestore, messages, topic='the privileged poses')
        row = {topic: index for index, topic in enumerate(topics_of)}
        for arm in ARMS:
            at = row[topics.ee_pose_topic(arm)]
            observation.ee_pos[arm], observation.ee_quat[arm] = series.position[at], series.quat[at]
        for name in self.layout.object_names:
            at = row[topics.object_pose_topic(name)]
            observation.object_pos[name], observation.object_quat[name] = series.position[at], series.quat[at]


class RosEnvironment(GraphEpisode):
    """One episode over the graph.

    Args:
        cache: what the bridge's subscriptions stored.
        publish_chunk: publishes a (T, 14) chunk answering the observation stamped ``stamp_ns``.
        joints: the robot's joint layout (names of ``/joint_states``).
        episode_id: the episode the sim was reset to (from ``/robofollow/episode``).
        privileged: attach object and TCP poses.
        timeout: seconds to wait for the sim.
        writers: how many writers of a topic discovery knows (named for each missing topic when an observation
            times out: a topic without one was never matched, one with writers lost its samples).
    """

    def __init__(
        self,
        cache: ObservationCache,
        publish_chunk: Callable[[np.ndarray, int], None],
        *,
        joints: JointLayout,
        episode_id: str,
        privileged: bool,
        timeout: float,
        writers: Callable[[str], int] | None = None,
    ) -> None:
        super().__init__(cache, episode_id=episode_id, privileged=privileged, timeout=timeout)
        self.publish_chunk = publish_chunk
        self.writers = writers
        self.joints = joints
        self.timing = QueryTiming()

    def reset(self, task: Task, *, seed: int, layout: Layout, images: bool) -> CellObservation:
        """The initial observation of the episode the sim was reset to (with the camera images if ``images``)."""
        self.layout, self.images = layout, images
        status = self._status(
            lambda s: s.event is StatusEvent.RESET and s.episode_id == self.episode_id, 'the sim reset'
        )
        self.origin_ns = status.stamp_ns
        return self._observation(status.stamp_ns)

    def execute(self, chunk: np.ndarray, *, images: bool) -> CellObservation:
        """Send ``chunk`` to the arms and return the observation after its last row."""
        self.images = images
        answered = self.stamp_ns
        self.timing.overheads.append(time.perf_counter() - self.timing.status_arrival)
        self.publish_chunk(chunk, answered)
        self.queries += 1
        status = self._status(
            lambda s: (
                s.event is StatusEvent.EXECUTED and s.episode_id == self.episode_id and s.for_stamp_ns == answered
            ),
            f'the sim to execute the chunk for stamp {answered}',
        )
        self.executed_rows += status.rows
        return self._observation(status.stamp_ns)

    def trajectory(self) -> Trajectory:
        """Nothing: the referee node builds the trajectory from the topics."""
        return empty_trajectory()

    def _status(self, predicate: Callable[[SimStatus], bool], what: str) -> SimStatus:
        found: list[tuple[float, SimStatus]] = []

        def ready() -> bool:
            match = self.cache.find_status(predicate)
            if match is not None:
                found.append(match)
            return match is not None

        self.cache.wait(ready, timeout=self.timeout, what=what)
        arrival, status = found[-1]
        self.timing.status_arrival = arrival
        return status

    def _pose_topics(self) -> list[str]:
        assert self.layout is not None
        return [topics.ee_pose_topic(arm) for arm in ARMS] + [
            topics.object_pose_topic(name) for name in self.layout.object_names
        ]

    def _observation(self, stamp_ns: int) -> CellObservation:
        cache = self.cache
        wanted = self._pose_topics() if self.privileged else []
        drained = frozenset([topics.JOINT_STATES, *wanted])

        def complete() -> bool:
            cache.refresh(drained)
            if stamp_ns not in cache.states.items:
                return False
            if self.images and any(stamp_ns not in cache.images.get(c, _EMPTY).items for c in CAMERAS):
                return False
            return all(stamp_ns in cache.poses.get(topic, _EMPTY).items for topic in wanted)

        try:
            cache.wait(complete, timeout=self.timeout, what=f'the observation stamped {stamp_ns}', poll=SAMPLE_POLL)
        except GraphError as error:
            raise GraphError(f'{error} ({self._missing(stamp_ns, wanted)})') from None
        self.stamp_ns = stamp_ns
        with cache.condition:
            images = {c: cache.images[c].items[stamp_ns] for c in CAMERAS} if self.images else {}
            joints = cache.states.items[stamp_ns]
            poses = {topic: cache.poses[topic].items[stamp_ns] for topic in wanted}
        sample = decode_joint_state(self.typestore, joints, topic=topics.JOINT_STATES)
        observation = CellObservation(
            images=images,
            state=self.joints.state_from_joint_state(sample.names, sample.position),
            time=(stamp_ns - self.origin_ns) / NS_PER_S,
            robot=self.joints.robot,
        )
        if self.privileged:
            self.attach_poses(observation, [poses[topic] for topic in wanted], wanted)
        return observation

    def _missing(self, stamp_ns: int, wanted: list[str]) -> str:
        cache = self.cache
        missing = [] if stamp_ns in cache.states.items else [topics.JOINT_STATES]
        if self.images:
            missing += [topics.image_topic(c) for c in CAMERAS if stamp_ns not in cache.images.get(c, _EMPTY).items]
        missing += [topic for topic in wanted if stamp_ns not in cache.poses.get(topic, _EMPTY).items]
        if not missing:
            return 'nothing missing'
        if self.writers is not None:
            missing = [f'{topic} ({_count(self.writers(topic), "writer")} known)' for topic in missing]
        return 'missing: ' + ', '.join(missing)


def _count(number: int, noun: str) -> str:
    return f'{number} {noun}' if number == 1 else f'{number} {noun}s'


class _Empty:
    def __init__(self) -> None:
        self.items: dict[int, object] = {}


_EMPTY = _Empty()
