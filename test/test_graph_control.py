"""The graph's control plane over real DDS (private domains, localhost discovery): QoS and the reset call."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
import rclpy
from graph_helpers import ros_domain, wait_until
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from std_msgs.msg import String

from robofollow_ros import topics
from robofollow_ros.benchmark import registry
from robofollow_ros.errors import GraphError
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.guard import DEFAULT_QUERY_TIMEOUT
from robofollow_ros.nodes import evaluator, policy_bridge
from robofollow_ros.ros import qos
from robofollow_ros.ros.protocol import ResetEpisode

pytestmark = pytest.mark.ros
DOMAIN = ros_domain(37)
RESET_DOMAIN = ros_domain(38)


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


def _first_spec() -> EpisodeSpec:
    task = registry.eval_tasks(scene=1, level=0)[0]
    return EpisodeSpec.for_trial(task, seed=1, round=1, variant='published', layout=registry.layout_of(task).name)


@contextmanager
def _evaluator_beside_a_sim(
    on_reset: Callable[[ResetEpisode.Request, ResetEpisode.Response], ResetEpisode.Response], *, threads: int
) -> Iterator[evaluator.EvaluatorNode]:
    """An evaluator node and a stand-in sim whose reset service answers with ``on_reset``, spun together."""
    rclpy.init(domain_id=RESET_DOMAIN)
    try:
        sim = rclpy.create_node('sim')
        sim.create_service(ResetEpisode, topics.SIM_RESET, on_reset, callback_group=ReentrantCallbackGroup())
        node = evaluator.EvaluatorNode()
        executor = MultiThreadedExecutor(num_threads=threads)
        executor.add_node(sim)
        executor.add_node(node)
        spinner = threading.Thread(target=executor.spin, daemon=True)
        spinner.start()
        wait_until(node.reset_client.service_is_ready, timeout=20, what='the reset service')
        yield node
        executor.shutdown(timeout_sec=5)
        spinner.join(timeout=5)
        node.destroy_node()
        sim.destroy_node()
    finally:
        rclpy.shutdown()


def test_the_evaluator_calls_reset_again_when_a_call_stays_unanswered(monkeypatch) -> None:
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    monkeypatch.setattr(evaluator, 'RESET_ATTEMPT_SECONDS', 0.5)
    spec = _first_spec()
    calls: list[float] = []

    def on_reset(request: ResetEpisode.Request, response: ResetEpisode.Response) -> ResetEpisode.Response:
        calls.append(time.monotonic())
        if len(calls) == 1:
            time.sleep(2.0)
        response.code, response.episode_id = ResetEpisode.Response.OK, request.episode.episode_id
        return response

    with _evaluator_beside_a_sim(on_reset, threads=3) as node:
        started = time.monotonic()
        node.reset(spec, deadline=started + 20)
        assert len(calls) == 2 and calls[1] - started < 2.0


def test_the_evaluator_reports_the_sims_reset_error_code_and_message(monkeypatch) -> None:
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    spec = _first_spec()
    requested: list[str] = []

    def on_reset(request: ResetEpisode.Request, response: ResetEpisode.Response) -> ResetEpisode.Response:
        requested.append(request.episode.task_id)
        response.episode_id = request.episode.episode_id
        response.code, response.message = ResetEpisode.Response.RESET_FAILED, 'the scene would not build'
        return response

    with _evaluator_beside_a_sim(on_reset, threads=2) as node:
        with pytest.raises(GraphError, match=r'could not reset to .* \(RESET_FAILED\): the scene would not build'):
            node.reset(spec, deadline=time.monotonic() + 20)
        assert requested == [spec.task_id]  # the request carries the episode; an error is not retried


def test_the_bridge_describes_its_parameters_and_takes_the_suites_query_timeout(monkeypatch) -> None:
    # `ros2 run robofollow policy_bridge` once waited 30 s for a query where `robofollow eval` waits 300 s.
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    rclpy.init(domain_id=RESET_DOMAIN)
    try:
        bridge = policy_bridge.PolicyBridge()
        try:
            assert bridge.get_parameter('timeout').value == DEFAULT_QUERY_TIMEOUT == 300.0
            names = sorted(name for name in bridge._parameters if name != 'use_sim_time')
            assert {'timeout', 'policy', 'max_queries', 'robot'} <= set(names)
            for name, descriptor in zip(names, bridge.describe_parameters(names), strict=True):
                assert descriptor.description, f'{name} has no description'
        finally:
            bridge.close()
            bridge.destroy_node()
    finally:
        rclpy.shutdown()
