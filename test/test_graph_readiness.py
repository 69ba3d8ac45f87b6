"""Readiness is a message, not a wait inside a callback: the sim node over real DDS.

The sim answers a reset as soon as its cell is reset; frame 0 and the RESET status follow once the readers it knows
of have matched its writers, here never (a reader of a camera topic with incompatible QoS), so they go out when its
``match_timeout`` expires. Meanwhile the node keeps serving: a second reset is answered at once too, and only the
latest reset's frame 0 goes out (the superseded one would show a state nobody runs from).
"""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

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


@dataclass
class SimUnderTest:
    """A sim node started on its own and the test's node beside it (``sim_and_caller``); ``err`` is the sim's stderr
    once it has exited."""

    sim: subprocess.Popen[str]
    node: Any
    executor: SingleThreadedExecutor
    client: Any
    err: str = ''

    def spin_until(self, condition: Callable[[], bool], *, timeout: float, what: str) -> None:
        wait_until(lambda: self.executor.spin_once(timeout_sec=0.05) or condition(), timeout=timeout, what=what)


@contextlib.contextmanager
def sim_and_caller(
    name: str, *, match_timeout: float, on_reset: Callable[[SimStatus], None], images_again_times: int | None = None
) -> Iterator[SimUnderTest]:
    """The sim with ``match_timeout`` (and ``images_again_times`` if given), and a node that hears its RESET
    statuses (``on_reset``) and calls its reset.

    A reader of the TCP pose makes the sim expect every frame topic's readers to match; the camera's (incompatible
    QoS) never does, so frame 0 goes out when ``match_timeout`` expires.
    """
    arguments = ['--ros-args', '-p', f'match_timeout:={match_timeout}']
    if images_again_times is not None:
        arguments += ['-p', f'images_again_times:={images_again_times}']
    sim = subprocess.Popen(
        [sys.executable, '-m', 'robofollow_ros.nodes.sim', *arguments],
        env=graph_env(DOMAIN),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    context = Context()
    rclpy.init(context=context, domain_id=ros_domain(DOMAIN))
    node = rclpy.create_node(name, context=context)

    def on_status(message: SimStatusMessage) -> None:
        status = SimStatus.from_message(message)
        if status.event is StatusEvent.RESET:
            on_reset(status)

    node.create_subscription(SimStatusMessage, topics.SIM_STATUS, on_status, qos.EVENTS)
    tcp = node.create_subscription(PoseStamped, topics.ee_pose_topic('left'), lambda _: None, qos.STATE)
    node.create_subscription(Image, topics.image_topic('cam_high'), lambda _: None, INCOMPATIBLE)
    client = node.create_client(ResetEpisode, topics.SIM_RESET)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    under_test = SimUnderTest(sim, node, executor, client)
    try:
        under_test.spin_until(
            lambda: client.service_is_ready() and tcp.get_publisher_count() > 0,
            timeout=120,
            what='the sim reset service',
        )
        yield under_test
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
        sim.terminate()
        _, under_test.err = sim.communicate(timeout=30)


def test_the_sim_answers_resets_at_once_and_sends_the_latest_frame_0_when_its_readers_are_ready() -> None:
    events: list[tuple[str, str]] = []
    lock = threading.Lock()

    def note(kind: str, episode_id: str) -> None:
        with lock:
            events.append((kind, episode_id))

    first, second = _spec(0), _spec(1)
    with sim_and_caller(
        'reset_caller', match_timeout=2.0, on_reset=lambda status: note('frame 0', status.episode_id)
    ) as cell:
        for spec in (first, second):
            future = cell.client.call_async(ResetEpisode.Request(episode=spec_message(spec)))
            cell.spin_until(future.done, timeout=60, what='an answer')
            response = future.result()
            assert response is not None and response.code == ResetEpisode.Response.OK
            note('answer', response.episode_id)
        second_frame_0 = ('frame 0', second.episode_id)
        cell.spin_until(lambda: second_frame_0 in events, timeout=30, what='frame 0 of the second reset')
        for _ in range(10):
            cell.executor.spin_once(timeout_sec=0.05)
        assert cell.sim.poll() is None
    assert events == [
        ('answer', first.episode_id),
        ('answer', second.episode_id),
        ('frame 0', second.episode_id),
    ], cell.err[-2000:]


def test_an_image_reader_matched_after_frame_0_went_out_still_gets_its_images() -> None:
    """On a busy machine ``match_timeout`` can pass before the bridge's camera readers match: frame 0's images then
    went to nobody, and the bridge waited 30 s for them. The sim sends them again (same stamp) when an image reader
    matches while no chunk has run since frame 0."""
    frame_0: list[int] = []
    images: list[int] = []
    with sim_and_caller(
        'late_camera_reader', match_timeout=1.0, on_reset=lambda status: frame_0.append(status.stamp_ns)
    ) as cell:
        future = cell.client.call_async(ResetEpisode.Request(episode=spec_message(_spec(0))))
        cell.spin_until(lambda: bool(frame_0), timeout=60, what='frame 0')
        late = cell.node.create_subscription(
            Image,
            topics.image_topic('cam_left_wrist'),
            lambda message: images.append(message.header.stamp.sec * 1_000_000_000 + message.header.stamp.nanosec),
            qos.SENSOR,
        )
        cell.spin_until(lambda: bool(images), timeout=30, what='frame 0 images')
        assert future.done() and late.get_publisher_count() == 1
        assert images[0] == frame_0[0]
    assert 'its images go out again' in cell.err, cell.err[-2000:]


def test_an_observations_images_go_out_again_while_its_chunk_does_not_come() -> None:
    """Discovery matches a writer to a reader and the reader to the writer separately: the sim may send frame 0's
    best-effort images the moment its side matched, before the bridge's side has, and they are dropped. So an
    observation's images go out again every ``IMAGES_AGAIN_SECONDS`` while no chunk has run, at most
    ``images_again_times`` times (by default as long as the bridge waits), same stamp."""
    from robofollow_ros.nodes.sim import IMAGES_AGAIN_SECONDS

    times = 4

    frame_0: list[int] = []
    images: list[tuple[int, float]] = []
    with sim_and_caller(
        'waiting_camera_reader',
        match_timeout=1.0,
        on_reset=lambda status: frame_0.append(status.stamp_ns),
        images_again_times=times,
    ) as cell:
        cell.node.create_subscription(
            Image,
            topics.image_topic('cam_left_wrist'),
            lambda m: images.append((m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec, time.monotonic())),
            qos.SENSOR,
        )
        cell.client.call_async(ResetEpisode.Request(episode=spec_message(_spec(0))))
        cell.spin_until(lambda: bool(frame_0) and bool(images), timeout=60, what='frame 0 and its images')
        wait = (times + 2) * IMAGES_AGAIN_SECONDS
        end = time.monotonic() + wait
        while time.monotonic() < end:
            cell.executor.spin_once(timeout_sec=0.05)
    stamps = {stamp for stamp, _ in images}
    assert stamps == {frame_0[0]}, (stamps, frame_0)
    # (best effort: one copy may be lost on a busy machine)
    assert times <= len(images) <= 1 + times, len(images)
    gaps = [later - earlier for (_, earlier), (_, later) in itertools.pairwise(images)]
    assert all(gap > 0.8 * IMAGES_AGAIN_SECONDS for gap in gaps), gaps
