"""Object poses from a motion-capture driver reach the graph (issue 30: readers' QoS against the drivers'
publishers): vrpn_mocap publishes ``/vrpn_mocap/<tracker>/pose`` with the sensor-data QoS (best effort) by default,
which a reliable reader never matches. With ``pose_source:=mocap`` the bridge, the referee and the recorder read the
object poses best effort (``qos.object_pose_readers``); over real DDS (private domain) such a reader hears a writer
published as vrpn_mocap does, and the reliable one every other pose source uses would not."""

from __future__ import annotations

import time

import pytest
from geometry_msgs.msg import PoseStamped
from graph_helpers import private_node, wait_until
from rclpy.qos import qos_profile_sensor_data

from robofollow_ros import topics
from robofollow_ros.bags.cdr import header_stamp_ns
from robofollow_ros.graph.declaration import load_graph
from robofollow_ros.ros import qos
from robofollow_ros.ros.messages import pose_message
from robofollow_ros.ros.on_demand_readers import OnDemandReaders

pytestmark = pytest.mark.ros
NOMINAL_DOMAIN = 43
TOPIC = topics.object_pose_topic('red_sphere')


def test_with_mocap_the_pose_readers_take_best_effort_and_other_sources_keep_theirs() -> None:
    graph = load_graph('real', {'pose_source': 'mocap', 'fake_hardware': 'false', 'record': 'bag', 'out': '/tmp/x'})
    nodes = {node.name: node for node in graph.nodes}
    assert all(nodes[name].parameters['pose_source'] == 'mocap' for name in ('policy_bridge', 'referee', 'recorder'))
    readers = qos.object_pose_readers(qos.STATE, pose_source='mocap')
    assert set(readers) == {topics.object_pose_topic(name) for name in topics.all_object_names()}
    assert qos.object_pose_readers(qos.STATE, pose_source='tracker') == {}


def test_a_best_effort_mocap_writer_is_heard_by_the_mocap_readers_only() -> None:
    heard: list[tuple[str, int]] = []
    with private_node(NOMINAL_DOMAIN, 'mocap_qos_test', spin=True) as (node, _executor):
        writer = node.create_publisher(PoseStamped, TOPIC, qos_profile_sensor_data)  # vrpn_mocap's default QoS
        mocap = OnDemandReaders(
            node,
            {TOPIC: PoseStamped},
            store=lambda topic, stamp, data: heard.append(('mocap', header_stamp_ns(data))),
            profile=qos.STATE,
            profiles=qos.object_pose_readers(qos.STATE, pose_source='mocap'),
        )
        reliable = OnDemandReaders(
            node, {TOPIC: PoseStamped}, store=lambda topic, stamp, data: heard.append(('reliable', stamp))
        )
        wait_until(lambda: writer.get_subscription_count() >= 1, timeout=30, what='the mocap reader to match')
        time.sleep(0.5)  # (time for the reliable reader to match too, were it compatible)
        assert writer.get_subscription_count() == 1
        for stamp in (1_000, 2_000):
            writer.publish(pose_message((0.1, 0.2, 0.8), (1.0, 0.0, 0.0, 0.0), stamp_ns=stamp, frame_id='world'))

        def drained() -> bool:
            mocap.drain()
            reliable.drain()
            return len(heard) >= 1

        wait_until(drained, timeout=10, what='the pose')
        mocap.close()
        reliable.close()
    assert heard and {who for who, _ in heard} == {'mocap'}
