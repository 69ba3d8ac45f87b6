"""QoS of the graph's control topics over real DDS (private domain, localhost discovery)."""

from __future__ import annotations

import time

import pytest
import rclpy
from graph_helpers import wait_until
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import String

from robofollow_ros import topics
from robofollow_ros.ros import qos

pytestmark = pytest.mark.ros
DOMAIN = 37


@pytest.fixture
def context(monkeypatch):
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    context = Context()
    rclpy.init(context=context, domain_id=DOMAIN)
    yield context
    rclpy.shutdown(context=context)


def test_an_episode_spec_survives_messages_of_another_writer_queued_before_the_callback(context) -> None:
    """The bridge lost the evaluator's spec this way under load: garbage from a second writer replaced it unseen."""
    reader = rclpy.create_node('reader', context=context)
    evaluator = rclpy.create_node('evaluator', context=context)
    intruder = rclpy.create_node('intruder', context=context)
    received: list[str] = []
    reader.create_subscription(String, topics.EPISODE, lambda m: received.append(m.data), qos.LATCHED_READER)
    spec_pub = evaluator.create_publisher(String, topics.EPISODE, qos.LATCHED)
    garbage_pub = intruder.create_publisher(String, topics.EPISODE, qos.LATCHED)
    wait_until(
        lambda: spec_pub.get_subscription_count() and garbage_pub.get_subscription_count(),
        timeout=20,
        what='both writers to match the reader',
    )
    spec_pub.publish(String(data='spec'))
    for text in ('{not json', '[1, 2]', '{}'):
        garbage_pub.publish(String(data=text))
    time.sleep(1.0)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(reader)
    wait_until(lambda: executor.spin_once(timeout_sec=0.05) or len(received) >= 4, timeout=10, what='4 messages')
    assert sorted(received) == sorted(['spec', '{not json', '[1, 2]', '{}'])
    executor.shutdown()
    for node in (reader, evaluator, intruder):
        node.destroy_node()
