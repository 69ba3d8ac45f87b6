"""The graph's fast paths: pre-serialised per-row messages, on-demand readers and the bridge's observation cache."""

from __future__ import annotations

import threading
import time
from collections.abc import Collection

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import PoseStamped
from graph_helpers import ros_domain, wait_until
from rclpy.context import Context
from rclpy.serialization import deserialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState

from robofollow_ros.errors import GraphError
from robofollow_ros.robot.description import joint_layout
from robofollow_ros.ros import qos
from robofollow_ros.ros.cdr_template import CdrTemplate, FrameMessages
from robofollow_ros.ros.messages import joint_state_message, pose_message, to_time
from robofollow_ros.ros.observation_cache import ObservationCache
from robofollow_ros.ros.on_demand_readers import OnDemandReaders
from robofollow_ros.ros.protocol import SimStatus, StatusEvent

DOMAIN = ros_domain(57)
JOINT_NAMES = joint_layout().published_names


def test_frame_messages_decode_to_the_messages_built_field_by_field() -> None:
    frames = FrameMessages(joint_names=JOINT_NAMES, frame_id='world')
    rng = np.random.default_rng(7)
    for stamp in (0, 1_000_000_000, 3_999_999_999, 1_796_069_971_117_856_959):
        position, quat, state = rng.normal(size=3), rng.normal(size=4), rng.normal(size=len(JOINT_NAMES))
        pose = deserialize_message(frames.pose(stamp, position, quat), PoseStamped)
        assert pose == pose_message(position, quat, stamp_ns=stamp, frame_id='world')
        joints = deserialize_message(frames.joint_state(stamp, state), JointState)
        assert joints == joint_state_message(JOINT_NAMES, state, stamp_ns=stamp)
        assert deserialize_message(frames.clock(stamp), Clock) == Clock(clock=to_time(stamp))


def test_a_template_whose_builder_drops_the_values_is_refused() -> None:
    with pytest.raises(GraphError, match='float64 values'):
        CdrTemplate(lambda stamp, _: pose_message([0, 0, 0], [1, 0, 0, 0], stamp_ns=stamp, frame_id='w'), count=7)


@pytest.mark.ros
def test_on_demand_readers_hand_over_the_newest_sample_of_each_topic(monkeypatch) -> None:
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    context = Context()
    rclpy.init(context=context, domain_id=DOMAIN)
    try:
        writer_node = rclpy.create_node('sim', context=context)
        reader_node = rclpy.create_node('bridge', context=context)
        topics = ['/test/a/pose', '/test/b/pose']
        writers = {topic: writer_node.create_publisher(PoseStamped, topic, qos.STATE) for topic in topics}
        stored: list[tuple[str, int, bytes]] = []
        samples = OnDemandReaders(
            reader_node, dict.fromkeys(topics, PoseStamped), store=lambda *item: stored.append(item)
        )
        wait_until(lambda: all(w.get_subscription_count() == 1 for w in writers.values()), timeout=10, what='match')
        frames = FrameMessages(joint_names=JOINT_NAMES, frame_id='world')
        for stamp in range(1, 6):
            for index, writer in enumerate(writers.values()):
                writer.publish(frames.pose(stamp * 1000 + index, [stamp, 0, 0], [1, 0, 0, 0]))

        def newest_arrived() -> bool:
            samples.drain()
            return {topic: stamp for topic, stamp, _ in stored} == {'/test/a/pose': 5000, '/test/b/pose': 5001}

        samples.drain(['/test/a/pose'])
        assert {topic for topic, _, _ in stored} <= {'/test/a/pose'}
        wait_until(newest_arrived, timeout=10, what='the newest samples')
        assert len(stored) <= 2 * 5
        pose = deserialize_message(stored[-1][2], PoseStamped)
        assert pose.pose.position.x == 5.0
        stored.clear()
        samples.drain()
        assert stored == []
        samples.close()
    finally:
        rclpy.shutdown(context=context)


@pytest.mark.ros
def test_on_demand_readers_get_a_name_of_their_own_and_follow_the_nodes_remappings(monkeypatch) -> None:
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    context = Context()
    rclpy.init(
        context=context,
        domain_id=DOMAIN,
        args=['--ros-args', '-r', '__node:=referee', '-r', '/joint_states:=/cell/joint_states'],
    )
    try:
        node = rclpy.create_node('anything', context=context)
        readers = OnDemandReaders(node, {'/joint_states': JointState}, store=lambda *_: None)
        assert (node.get_name(), readers.node.get_name()) == ('referee', 'referee_samples')
        assert readers.readers['/joint_states'].topic_name == '/cell/joint_states'
        readers.close()
    finally:
        rclpy.shutdown(context=context)


def _status(stamp_ns: int) -> SimStatus:
    return SimStatus(event=StatusEvent.EXECUTED, episode_id='e', stamp_ns=stamp_ns, for_stamp_ns=stamp_ns - 1)


def test_a_sample_of_an_announced_observation_wakes_the_waiter() -> None:
    cache = ObservationCache()
    cache.add_status(_status(2000))
    threading.Timer(0.2, lambda: cache.add_state(2000, b'late state')).start()
    started = time.monotonic()
    cache.wait(lambda: 2000 in cache.states.items, timeout=5.0, what='the state')
    assert time.monotonic() - started < 4.0


def test_on_demand_sources_are_polled_until_the_sample_is_there() -> None:
    cache = ObservationCache()
    calls: list[Collection[str] | None] = []

    def source(topics: Collection[str] | None) -> None:
        calls.append(topics)
        if len(calls) == 5:
            cache.add_state(7000, b'state')

    cache.sources.append(source)

    def complete() -> bool:
        cache.refresh({'/joint_states'})
        return 7000 in cache.states.items

    cache.wait(complete, timeout=5.0, what='the state', poll=0.001)
    assert calls == [{'/joint_states'}] * 5
    with pytest.raises(GraphError, match=r'timed out after 0\.05 s waiting for nothing'):
        cache.wait(lambda: False, timeout=0.05, what='nothing', poll=0.01)


@pytest.mark.ros
def test_a_sim_or_controller_that_joins_late_receives_no_old_arm_command_or_ticket(monkeypatch) -> None:
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from trajectory_msgs.msg import JointTrajectory

    from robofollow_ros import topics as graph_topics
    from robofollow_ros.nodes.policy_bridge import ticket_publisher, trajectory_publishers
    from robofollow_ros.nodes.sim import subscribe_tickets, subscribe_trajectories
    from robofollow_ros.ros.protocol import ChunkTicket
    from robofollow_ros.ros.trajectory_cdr import decode_trajectory, encode_trajectory

    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    context = Context()
    rclpy.init(context=context, domain_id=ros_domain(58))
    executor = SingleThreadedExecutor(context=context)
    try:
        bridge = rclpy.create_node('policy_bridge', context=context)
        publishers = trajectory_publishers(bridge)
        tickets = ticket_publisher(bridge)

        def ticket(stamp_ns: int) -> object:
            return ChunkTicket('e', for_stamp_ns=stamp_ns, rows=1, digests={'left': 0, 'right': 0}).to_message()

        def command(position: float) -> bytes:
            return encode_trajectory(['joint'], np.full((1, 1), position), row_seconds=0.02)

        for publisher in publishers.values():
            publisher.publish(command(1))  # the old command, sent before anyone listens
        tickets.publish(ticket(1))
        late = rclpy.create_node('late_sim', context=context)
        executor.add_node(late)
        received: list[tuple[str, int]] = []
        subscribe_trajectories(
            late, lambda arm, data: received.append((arm, int(decode_trajectory(data).positions[0, 0])))
        )
        ticketed: list[int] = []
        subscribe_tickets(late, lambda message: ticketed.append(message.for_stamp_ns))
        latched: list[object] = []
        controller = QoSProfile(
            depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        for arm in publishers:
            topic = graph_topics.arm_trajectory_topic(arm)
            late.create_subscription(JointTrajectory, topic, latched.append, controller)
        wait_until(
            lambda: all(p.get_subscription_count() >= 1 for p in [*publishers.values(), tickets]),
            timeout=10,
            what='the match',
        )
        for _ in range(10):
            executor.spin_once(timeout_sec=0.1)
        assert received == [] and latched == [] and ticketed == []
        for publisher in publishers.values():
            publisher.publish(command(2))  # a live command still arrives
        tickets.publish(ticket(2))

        def live_arrived() -> bool:
            executor.spin_once(timeout_sec=0.05)
            return len(received) == len(publishers) and len(ticketed) == 1

        wait_until(live_arrived, timeout=10, what='the live commands')
        assert sorted(received) == sorted((arm, 2) for arm in publishers) and latched == [] and ticketed == [2]
    finally:
        executor.shutdown()
        rclpy.shutdown(context=context)


@pytest.mark.ros
def test_commands_wait_for_every_listed_reader_and_the_sim_for_every_listed_writer(monkeypatch) -> None:
    # A reader with incompatible QoS is listed by the graph but never matched: it stands for a sim whose reader is
    # known but not matched yet, beside another reader (a recorder's) that is.
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from trajectory_msgs.msg import JointTrajectory

    from robofollow_ros import topics as graph_topics
    from robofollow_ros.nodes.policy_bridge import ticket_publisher, trajectory_publishers
    from robofollow_ros.nodes.sim import subscribe_tickets, subscribe_trajectories
    from robofollow_ros.ros.matching import every_reader_matched, every_writer_matched

    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    context = Context()
    rclpy.init(context=context, domain_id=ros_domain(22))
    try:
        bridge = rclpy.create_node('policy_bridge', context=context)
        writers = [*trajectory_publishers(bridge).values(), ticket_publisher(bridge)]
        assert not every_reader_matched(bridge, writers, at_least=1)
        sim = rclpy.create_node('sim', context=context)
        readers = [*subscribe_trajectories(sim, lambda arm, data: None), subscribe_tickets(sim, lambda m: None)]
        wait_until(lambda: every_reader_matched(bridge, writers, at_least=1), timeout=10, what='the sim matched')
        wait_until(lambda: every_writer_matched(sim, readers), timeout=10, what='the bridge matched')

        stranger = rclpy.create_node('stranger', context=context)
        latched = QoSProfile(
            depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        left = graph_topics.arm_trajectory_topic('left')
        stranger.create_subscription(JointTrajectory, left, lambda m: None, latched)
        wait_until(lambda: bridge.count_subscribers(left) == 2, timeout=10, what='the graph to list the new reader')
        time.sleep(0.5)
        assert all(w.get_subscription_count() >= 1 for w in writers)  # what the bridge used to wait for
        assert not every_reader_matched(bridge, writers, at_least=1)

        silent = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
        stranger.create_publisher(JointTrajectory, left, silent)
        wait_until(lambda: sim.count_publishers(left) == 2, timeout=10, what='the graph to list the new writer')
        time.sleep(0.5)
        assert not every_writer_matched(sim, readers)
    finally:
        rclpy.shutdown(context=context)
