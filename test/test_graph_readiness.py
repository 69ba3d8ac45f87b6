"""Readiness is a message, not a wait inside a callback: the sim node over real DDS.

The sim answers a reset as soon as its cell is reset; frame 0 and the RESET status follow once the readers it knows
of have matched its writers, here never (a reader of a camera topic with incompatible QoS), so they go out when its
``match_timeout`` expires. Meanwhile the node keeps serving: a second reset is answered at once too, and only the
latest reset's frame 0 goes out (the superseded one would show a state nobody runs from).
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
import rclpy
from geometry_msgs.msg import PoseStamped
from graph_helpers import ROOT, graph_env, ros_domain, wait_until
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image

from robofollow_ros import topics
from robofollow_ros.benchmark import registry
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.ros import qos
from robofollow_ros.ros.protocol import ResetEpisode, SimStatus, SimStatusMessage, StatusEvent, spec_message

pytestmark = pytest.mark.ros

DOMAIN = 26
INCOMPATIBLE = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
"""The sim's camera writers are best effort: a reliable reader is discovered but never matched."""


def _spec(index: int) -> EpisodeSpec:
    task = registry.eval_tasks(scene=1, level=0)[index]
    return EpisodeSpec.for_trial(task, seed=1, round=1, variant='published', layout=registry.layout_of(task).name)


def test_the_sim_answers_resets_at_once_and_sends_the_latest_frame_0_when_its_readers_are_ready() -> None:
    sim = subprocess.Popen(
        [sys.executable, '-m', 'robofollow_ros.nodes.sim', '--ros-args', '-p', 'match_timeout:=2.0'],
        env=graph_env(DOMAIN),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    context = Context()
    rclpy.init(context=context, domain_id=ros_domain(DOMAIN))
    node = rclpy.create_node('reset_caller', context=context)
    events: list[tuple[str, str]] = []
    lock = threading.Lock()

    def note(kind: str, episode_id: str) -> None:
        with lock:
            events.append((kind, episode_id))

    def on_status(message: SimStatusMessage) -> None:
        status = SimStatus.from_message(message)
        if status.event is StatusEvent.RESET:
            note('frame 0', status.episode_id)

    node.create_subscription(SimStatusMessage, topics.SIM_STATUS, on_status, qos.EVENTS)
    # A reader of the TCP pose makes the sim expect every frame topic's readers to match; the camera's never does.
    tcp = node.create_subscription(PoseStamped, topics.ee_pose_topic('left'), lambda _: None, qos.STATE)
    node.create_subscription(Image, topics.image_topic('cam_high'), lambda _: None, INCOMPATIBLE)
    client = node.create_client(ResetEpisode, topics.SIM_RESET)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        wait_until(
            lambda: (
                executor.spin_once(timeout_sec=0.05) or (client.service_is_ready() and tcp.get_publisher_count() > 0)
            ),
            timeout=120,
            what='the sim reset service',
        )
        first, second = _spec(0), _spec(1)
        for spec in (first, second):
            future = client.call_async(ResetEpisode.Request(episode=spec_message(spec)))
            wait_until(lambda f=future: executor.spin_once(timeout_sec=0.05) or f.done(), timeout=60, what='an answer')
            response = future.result()
            assert response is not None and response.code == ResetEpisode.Response.OK
            note('answer', response.episode_id)
        wait_until(
            lambda: executor.spin_once(timeout_sec=0.05) or ('frame 0', second.episode_id) in events,
            timeout=30,
            what='frame 0 of the second reset',
        )
        for _ in range(10):
            executor.spin_once(timeout_sec=0.05)
        assert sim.poll() is None
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
        sim.terminate()
        _, err = sim.communicate(timeout=30)
    assert events == [
        ('answer', first.episode_id),
        ('answer', second.episode_id),
        ('frame 0', second.episode_id),
    ], err[-2000:]


def test_an_image_reader_matched_after_frame_0_went_out_still_gets_its_images() -> None:
    """On a busy machine ``match_timeout`` can pass before the bridge's camera readers match: frame 0's images then
    went to nobody, and the bridge waited 30 s for them. The sim sends them again (same stamp) when an image reader
    matches while no chunk has run since frame 0."""
    sim = subprocess.Popen(
        [sys.executable, '-m', 'robofollow_ros.nodes.sim', '--ros-args', '-p', 'match_timeout:=1.0'],
        env=graph_env(DOMAIN),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    context = Context()
    rclpy.init(context=context, domain_id=ros_domain(DOMAIN))
    node = rclpy.create_node('late_camera_reader', context=context)
    frame_0: list[int] = []
    images: list[int] = []

    def on_status(message: SimStatusMessage) -> None:
        status = SimStatus.from_message(message)
        if status.event is StatusEvent.RESET:
            frame_0.append(status.stamp_ns)

    node.create_subscription(SimStatusMessage, topics.SIM_STATUS, on_status, qos.EVENTS)
    tcp = node.create_subscription(PoseStamped, topics.ee_pose_topic('left'), lambda _: None, qos.STATE)
    node.create_subscription(Image, topics.image_topic('cam_high'), lambda _: None, INCOMPATIBLE)
    client = node.create_client(ResetEpisode, topics.SIM_RESET)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        wait_until(
            lambda: (
                executor.spin_once(timeout_sec=0.05) or (client.service_is_ready() and tcp.get_publisher_count() > 0)
            ),
            timeout=120,
            what='the sim reset service',
        )
        future = client.call_async(ResetEpisode.Request(episode=spec_message(_spec(0))))
        wait_until(lambda: executor.spin_once(timeout_sec=0.05) or bool(frame_0), timeout=60, what='frame 0')
        late = node.create_subscription(
            Image,
            topics.image_topic('cam_left_wrist'),
            lambda message: images.append(message.header.stamp.sec * 1_000_000_000 + message.header.stamp.nanosec),
            qos.SENSOR,
        )
        wait_until(lambda: executor.spin_once(timeout_sec=0.05) or bool(images), timeout=30, what='frame 0 images')
        assert future.done() and late.get_publisher_count() == 1
        assert images[0] == frame_0[0]
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
        sim.terminate()
        _, err = sim.communicate(timeout=30)
    assert 'its images go out again' in err, err[-2000:]
