"""``referee`` node: scores each episode from the pose and joint topics and publishes the result record.

Samples are kept by header stamp. On ``/robofollow/episode_end`` the trajectory from the episode's reset stamp to
its end stamp is built with the same ``TrajectoryBuilder`` as the bag reader, scored with the same code as the
in-process suite (``score_record``), and published as JSON on ``/robofollow/result``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from robofollow_ros import topics
from robofollow_ros.benchmark.types import ARMS
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.suite import Trial, score_record
from robofollow_ros.graph.protocol import EpisodeEnd, SimStatus
from robofollow_ros.nodes.sim import all_object_names
from robofollow_ros.referee.builder import TrajectoryBuilder, empty_trajectory
from robofollow_ros.ros import qos
from robofollow_ros.ros.messages import from_time, pose_arrays
from robofollow_ros.ros.runtime import param, run_node


@dataclass
class _Episode:
    spec: EpisodeSpec
    start_ns: int | None = None
    end: EpisodeEnd | None = None
    end_seen: float = 0.0
    poses: list[tuple[str, int, object, object]] = field(default_factory=list)
    joints: list[tuple[int, list[str], list[float]]] = field(default_factory=list)


class RefereeNode(Node):
    """Live scoring."""

    def __init__(self) -> None:
        super().__init__('referee')
        self.end_timeout = float(param(self, 'end_timeout', 5.0))
        self.episodes: dict[str, _Episode] = {}
        self.current: _Episode | None = None
        self.scored: set[str] = set()
        self.last_end_ns = -1
        self.result_pub = self.create_publisher(String, topics.RESULT, qos.EVENTS)
        self.create_subscription(String, topics.EPISODE, self.on_episode, qos.LATCHED)
        self.create_subscription(String, topics.SIM_STATUS, self.on_status, qos.EVENTS)
        self.create_subscription(String, topics.EPISODE_END, self.on_end, qos.EVENTS)
        self.create_subscription(JointState, topics.JOINT_STATES, self.on_joint_state, qos.STATE)
        pose_topics = [topics.ee_pose_topic(arm) for arm in ARMS]
        pose_topics += [topics.object_pose_topic(name) for name in all_object_names()]
        for topic in pose_topics:
            self.create_subscription(PoseStamped, topic, lambda m, t=topic: self.on_pose(t, m), qos.STATE)
        self.create_timer(0.05, self.try_score)

    def on_episode(self, message: String) -> None:
        try:
            spec = EpisodeSpec.from_json(message.data)
            spec.resolve()
        except RoboFollowError as error:
            self.get_logger().error(f'ignored {topics.EPISODE}: {error}')
            return
        if spec.episode_id not in self.episodes:
            self.episodes = {spec.episode_id: _Episode(spec)}
            self.current = self.episodes[spec.episode_id]

    def on_status(self, message: String) -> None:
        try:
            status = SimStatus.from_json(message.data)
        except RoboFollowError as error:
            self.get_logger().error(f'ignored {topics.SIM_STATUS}: {error}')
            return
        episode = self.episodes.get(status.episode_id)
        if status.event == 'reset' and episode is not None:
            episode.start_ns = status.stamp_ns

    def on_end(self, message: String) -> None:
        try:
            end = EpisodeEnd.from_json(message.data)
        except RoboFollowError as error:
            self.get_logger().error(f'ignored {topics.EPISODE_END}: {error}')
            return
        episode = self.episodes.get(end.episode_id)
        if episode is None or end.episode_id in self.scored:
            self.get_logger().warning(f'end of unknown episode {end.episode_id}: ignored')
            return
        episode.end, episode.end_seen = end, time.monotonic()
        self.try_score()

    def on_joint_state(self, message: JointState) -> None:
        if self.current is not None:
            self.current.joints.append((from_time(message.header.stamp), list(message.name), list(message.position)))

    def on_pose(self, topic: str, message: PoseStamped) -> None:
        if self.current is not None:
            position, quat = pose_arrays(message)
            self.current.poses.append((topic, from_time(message.header.stamp), position, quat))

    def try_score(self) -> None:
        """Score the current episode once its end and every EE pose up to the end stamp are here."""
        episode = self.current
        if episode is None or episode.end is None or episode.start_ns is None:
            return
        end_ns = episode.end.end_stamp_ns
        complete = all(
            any(topic == topics.ee_pose_topic(arm) and stamp >= end_ns for topic, stamp, _, _ in episode.poses)
            for arm in ARMS
        )
        if not complete and time.monotonic() - episode.end_seen < self.end_timeout:
            return
        self.score(episode)

    def score(self, episode: _Episode) -> None:
        spec, end = episode.spec, episode.end
        assert end is not None and episode.start_ns is not None
        start_ns, end_ns = episode.start_ns, max(end.end_stamp_ns, episode.start_ns)
        task, layout = spec.resolve()
        wanted = {topics.ee_pose_topic(arm) for arm in ARMS} | {
            topics.object_pose_topic(name) for name in layout.object_names
        }
        builder = TrajectoryBuilder()
        for topic, stamp, position, quat in episode.poses:
            if topic in wanted and start_ns <= stamp <= end_ns:
                builder.add_pose(topic, stamp, position, quat)  # type: ignore[arg-type]
        for stamp, names, positions in episode.joints:
            if start_ns <= stamp <= end_ns:
                builder.add_joint_state(stamp, names, positions)
        trial = Trial(task=task, round=spec.round, seed=spec.seed)
        try:
            trajectory = builder.build(origin_ns=start_ns).trajectory
        except RoboFollowError as error:
            self.get_logger().error(f'{spec.task_id}: {error}')
            trajectory = empty_trajectory()
        record = score_record(trial, trajectory, layout=layout, variant=spec.variant)
        record.update(end.bookkeeping())
        record['episode_id'] = spec.episode_id
        self.result_pub.publish(String(data=json.dumps(record, allow_nan=False)))
        self.scored.add(spec.episode_id)
        self.current = None
        self.episodes.pop(spec.episode_id, None)
        self.get_logger().info(
            f'{spec.task_id} r{spec.round}: IS {record["intent_score"]:.2f} ES {record["exec_score"]:.2f} '
            f'complete {record["completion_ok"]}'
        )


def main(args: list[str] | None = None) -> int:
    """Run the referee node until shutdown."""
    return run_node(RefereeNode, args, threads=1)


if __name__ == '__main__':
    raise SystemExit(main())
