"""``referee`` node: scores each episode from the pose and joint topics and publishes the result record.

Samples are kept by header stamp; joint states are read with the joint names of the ``robot`` parameter. On
``/robofollow/episode_end`` the trajectory from the episode's reset stamp to its end stamp is built with the same
``TrajectoryBuilder`` as the bag reader, scored with the same code as the in-process suite (``score_record``), and
published on ``/robofollow/result`` as a ``robofollow_interfaces/msg/Result`` (typed scores and stages, and the
record as ``record_json``).

The node reacts to arrivals: an episode is scored by the callback of whichever of its messages (spec, RESET
status, end) arrives last, once the TCP poses, the joint states and (from the sim) the layout's object poses up to its
end are in (they are published before the sim status that the bridge's end follows, so they normally are; a reader
that discovered a writer late gets them then); a timer only bounds the wait for frames that never come
(``end_timeout``), and the warning then names the topics short of the end with their matched writers.
"""

from __future__ import annotations

import time
from collections import defaultdict

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState

from robofollow_ros import topics
from robofollow_ros.bags.cdr import decode_joint_state, decode_poses, default_typestore, warm_decoders
from robofollow_ros.benchmark.types import ARMS
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.records import Trial, score_record
from robofollow_ros.referee.builder import TrajectoryBuilder, empty_trajectory
from robofollow_ros.robot.description import joint_layout
from robofollow_ros.robot.specs import DEFAULT_ROBOT
from robofollow_ros.ros import qos
from robofollow_ros.ros.on_demand_readers import OnDemandReaders
from robofollow_ros.ros.protocol import (
    EpisodeEnd,
    EpisodeEndMessage,
    EpisodeSpecMessage,
    ResultMessage,
    SimStatus,
    SimStatusMessage,
    StatusEvent,
    result_message,
)
from robofollow_ros.ros.runtime import MIN_TIMEOUT, Timeout, param, read_episode, read_report, remember, run_node

STALE_END_SECONDS = 60.0
TIMER_SLACK_SECONDS = 0.05
"""An end counts as ``end_timeout`` old this much early when the timeout's timer fires (timer granularity)."""


class RefereeNode(Node):
    """Live scoring.

    Messages of one episode may arrive in any order across topics (the spec, the sim's reset status, the poses,
    the bridge's end), so everything is kept by episode id or stamp until the episode can be scored.
    """

    def __init__(self) -> None:
        super().__init__('referee')
        self.end_timeout = float(
            param(
                self,
                'end_timeout',
                5.0,
                description='seconds to wait for the poses up to an episode end',
                minimum=MIN_TIMEOUT,
            )
        )
        self.joint_layout = joint_layout(
            str(param(self, 'robot', DEFAULT_ROBOT, description='robot whose joint names /joint_states carries'))
        )
        self.joint_states = str(
            param(
                self,
                'joint_states',
                topics.JOINT_STATES,
                description='joint states with the URDF names (real cell: /robofollow/joint_states from ee_pose)',
            )
        )
        self.specs: dict[str, EpisodeSpec] = {}
        self.resets: dict[str, int] = {}
        self.ends: dict[str, tuple[EpisodeEnd, float]] = {}
        self.poses: list[tuple[str, int, bytes]] = []
        self.joints: list[tuple[int, bytes]] = []
        self.typestore = default_typestore()
        warm_decoders()
        self.result_pub = self.create_publisher(ResultMessage, topics.RESULT, qos.EVENTS)
        self.create_subscription(EpisodeSpecMessage, topics.EPISODE, self.on_episode, qos.LATCHED_READER)
        self.create_subscription(SimStatusMessage, topics.SIM_STATUS, self.on_status, qos.EVENTS)
        self.create_subscription(EpisodeEndMessage, topics.EPISODE_END, self.on_end, qos.EVENTS)
        self.pose_source = str(
            param(self, 'pose_source', 'sim', description='where object poses come from (mocap: best-effort readers)')
        )
        self.latest_ns: dict[str, int] = {}
        per_row = {self.joint_states: JointState, **dict.fromkeys(topics.pose_topics(), PoseStamped)}
        self.samples = OnDemandReaders(
            self,
            per_row,
            store=self.on_sample,
            profile=qos.STATE,
            profiles=qos.object_pose_readers(qos.STATE, pose_source=self.pose_source),
        )
        self.end_timer = Timeout(self, self.end_timeout, self.on_end_timeout)

    def on_episode(self, message: EpisodeSpecMessage) -> None:
        spec = read_episode(self, message)
        if spec is None:
            return
        remember(self.specs, spec.episode_id, spec)
        self.try_score()

    def on_status(self, message: SimStatusMessage) -> None:
        status = read_report(self, SimStatus.from_message, message, topic=topics.SIM_STATUS)
        if status is None:
            return
        if status.event is StatusEvent.RESET:
            remember(self.resets, status.episode_id, status.stamp_ns)
        if self.ends:
            self.try_score()
        else:
            self.samples.drain()

    def on_end(self, message: EpisodeEndMessage) -> None:
        end = read_report(self, EpisodeEnd.from_message, message, topic=topics.EPISODE_END)
        if end is None:
            return
        self.ends[end.episode_id] = (end, time.monotonic())
        self.try_score()
        if self.ends and not self.end_timer.running():
            self.end_timer.start()

    def on_sample(self, topic: str, stamp_ns: int, data: bytes) -> None:
        self.latest_ns[topic] = max(stamp_ns, self.latest_ns.get(topic, stamp_ns))
        if topic == self.joint_states:
            self.joints.append((stamp_ns, data))
        else:
            self.poses.append((topic, stamp_ns, data))

    def on_end_timeout(self) -> None:
        """The oldest waiting end is ``end_timeout`` old: score what is in (the countdown restarts while ends wait)."""
        self.try_score(slack=TIMER_SLACK_SECONDS)
        if self.ends:
            self.end_timer.start()

    def try_score(self, *, slack: float = 0.0) -> None:
        """Score every ended episode whose spec and reset are known once its frames up to its end are here
        (``lacking``), or ``end_timeout`` after its end arrived with what is here."""
        self.samples.drain()
        for episode_id, (end, seen) in list(self.ends.items()):
            if episode_id not in self.specs or episode_id not in self.resets:
                if time.monotonic() - seen > STALE_END_SECONDS:
                    self.get_logger().warning(f'end of unknown episode {episode_id}: dropped')
                    del self.ends[episode_id]
                continue
            lacking = self.lacking(self.specs[episode_id], end.end_stamp_ns)
            if lacking and time.monotonic() + slack - seen < self.end_timeout:
                continue
            del self.ends[episode_id]
            if lacking:
                self.get_logger().warning(
                    f'{episode_id}: scored without every frame up to its end ({self.end_timeout:g} s); short of it: '
                    + ', '.join(f'{topic} ({self.samples.writers(topic)} writers matched)' for topic in lacking)
                )
            self.score(self.specs.pop(episode_id), self.resets.pop(episode_id), end)

    def lacking(self, spec: EpisodeSpec, end_ns: int) -> list[str]:
        """The topics whose frames have not reached ``end_ns`` yet (a reader matched late gets the frames it missed,
        ``qos.STATE``; with the sim as pose source that includes the layout's objects, which it poses every row)."""
        _, layout = spec.resolve()
        due = topics.frame_topics(
            layout.object_names, joint_states=self.joint_states, objects_every_frame=self.pose_source == 'sim'
        )
        return sorted(topic for topic in due if self.latest_ns.get(topic, -1) < end_ns)

    def score(self, spec: EpisodeSpec, start_ns: int, end: EpisodeEnd) -> None:
        end_ns = max(end.end_stamp_ns, start_ns)
        task, layout = spec.resolve()
        wanted = {topics.ee_pose_topic(arm) for arm in ARMS} | {
            topics.object_pose_topic(name) for name in layout.object_names
        }
        builder = TrajectoryBuilder(layouts=(self.joint_layout,))
        by_topic: dict[str, list[bytes]] = defaultdict(list)
        for topic, stamp, data in self.poses:
            if topic in wanted and start_ns <= stamp <= end_ns:
                by_topic[topic].append(data)
        for topic, messages in by_topic.items():
            series = decode_poses(self.typestore, messages, topic=topic)
            builder.add_poses(topic, series.stamp_ns, series.position, series.quat)
        for stamp, data in self.joints:
            if start_ns <= stamp <= end_ns:
                sample = decode_joint_state(self.typestore, data, topic=self.joint_states)
                builder.add_joint_state(sample.stamp_ns, sample.names, sample.position)
        self.poses = [sample for sample in self.poses if sample[1] > end_ns]
        self.joints = [sample for sample in self.joints if sample[0] > end_ns]
        trial = Trial(task=task, round=spec.round, seed=spec.seed)
        try:
            trajectory = builder.build(origin_ns=start_ns, frames_are_rows=True).trajectory
        except RoboFollowError as error:
            self.get_logger().error(f'{spec.task_id}: {error}')
            trajectory = empty_trajectory()
        record = score_record(trial, trajectory, layout=layout, variant=spec.variant)
        record.update(end.bookkeeping())
        record['episode_id'] = spec.episode_id
        record['end_stamp_ns'] = end_ns
        try:
            message = result_message(record)
        except RoboFollowError as error:
            self.get_logger().error(f'{spec.task_id}: result not sent: {error}')
            return
        self.result_pub.publish(message)
        self.get_logger().info(
            f'{spec.task_id} r{spec.round}: IS {record["intent_score"]:.2f} ES {record["exec_score"]:.2f} '
            f'complete {record["completion_ok"]}'
        )

    def close(self) -> None:
        self.samples.close()


def main(args: list[str] | None = None) -> int:
    """Run the referee node until shutdown."""
    return run_node(RefereeNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
