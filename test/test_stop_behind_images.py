"""``/robofollow/stop`` is answered, and both arms hold, while the bridge's executor thread is busy with images.

The real-time bridge runs in its own process (private domain) with every image callback taking 2 s
(``slow_image_bridge``: a stand-in for decoding images on a loaded machine) and a policy that wants the cameras;
this process publishes the three cameras at 20 Hz each, plays the ros2_control cell (``JtcStandIn``) and calls the
stop three times. Each answer, and a hold on both arm topics, must come within ``BOUND`` seconds of the call. Served
on the bridge's one events-executor thread, as it was, the stop waited behind the image callback running and the
images queued before it (seconds: the events executor runs callbacks one at a time whatever their callback group);
served from its own node and thread (``realcell/stop_server.py``) it does not.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from graph_helpers import ROOT, graph_env, private_node, wait_until
from jtc_stand_in import JtcStandIn, Received
from sensor_msgs.msg import Image
from slow_image_bridge import IMAGE_SECONDS, LOG_VARIABLE
from std_srvs.srv import Trigger

from robofollow_ros import topics
from robofollow_ros.robot.profiles import RobotProfile, load_profile
from robofollow_ros.ros import qos
from robofollow_ros.ros.messages import image_message
from robofollow_ros.state_layout import ARMS, CAMERAS

pytestmark = pytest.mark.ros
NOMINAL_DOMAIN = 23
TEST_PROFILE = ROOT / 'test' / 'data' / 'robots' / 'aloha_refuse_test.yaml'
BOUND = 1.0
"""Seconds from the call to its answer and to the hold on both arm topics: half of one image callback."""
IMAGE_PERIOD = 0.05
STOPS = 3


def held(received: list[Received], profile: RobotProfile, *, since: float) -> dict[str, float]:
    """Per arm, how long after ``since`` its first command among ``received`` arrived."""
    arrivals: dict[str, float] = {}
    for item in received:
        for arm in ARMS:
            if item.topic == profile.arms[arm].command.topic and arm not in arrivals:
                arrivals[arm] = item.arrived - since
    return arrivals


def test_the_stop_is_answered_and_held_while_image_callbacks_keep_the_bridge_busy(tmp_path: Path) -> None:
    assert BOUND < IMAGE_SECONDS
    profile = load_profile(str(TEST_PROFILE))
    log = tmp_path / 'images.log'
    parameters = {
        'runtime': 'real',
        'robot_profile': str(TEST_PROFILE),
        'policy': 'slow_image_bridge:looking',
        'trusted_policy': 'true',
    }
    arguments = [arg for name, value in parameters.items() for arg in ('-p', f'{name}:={value}')]
    with private_node(NOMINAL_DOMAIN, 'stop_behind_images_test', spin=True) as (node, _executor):
        driver = JtcStandIn(node, profile, start=profile.home_state())
        pixels = np.zeros((48, 64, 3), dtype=np.uint8)
        image_pubs = [node.create_publisher(Image, topics.image_topic(camera), qos.SENSOR) for camera in CAMERAS]

        def publish_images() -> None:
            stamp_ns = node.get_clock().now().nanoseconds
            for camera, pub in zip(CAMERAS, image_pubs, strict=True):
                pub.publish(image_message(pixels, stamp_ns=stamp_ns, frame_id=camera))

        client = node.create_client(Trigger, topics.STOP)
        bridge = subprocess.Popen(
            [sys.executable, '-m', 'slow_image_bridge', '--ros-args', *arguments],
            env=graph_env(NOMINAL_DOMAIN, **{LOG_VARIABLE: str(log)}),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:

            def callbacks() -> int:
                assert bridge.poll() is None, bridge.communicate()[1][-4000:]
                return len(log.read_text().splitlines()) if log.exists() else 0

            def stop() -> tuple[Trigger.Response, float]:
                called = time.monotonic()
                future = client.call_async(Trigger.Request())
                wait_until(future.done, timeout=20, what='the answer of /robofollow/stop', poll=0.001)
                answer = future.result()
                assert answer is not None
                return answer, called

            wait_until(client.service_is_ready, timeout=120, what='the bridge to serve /robofollow/stop')
            # The bridge must have heard the driver before the images come: behind them, joint states queue too.
            wait_until(lambda: stop()[0].success, timeout=60, what='the bridge to hear the driver', poll=0.2)
            node.create_timer(IMAGE_PERIOD, publish_images)
            wait_until(lambda: callbacks() >= 3, timeout=60, what='three image callbacks of the bridge')
            timings: list[tuple[float, float]] = []
            calls: list[float] = []
            for _ in range(STOPS):
                first = len(driver.received)
                answer, called = stop()
                answered = time.monotonic() - called
                assert answer.success, answer
                wait_until(
                    lambda: len(held(driver.received[first:], profile, since=called)) == len(ARMS),  # noqa: B023
                    timeout=60,
                    what='a hold on both arm topics',
                    poll=0.001,
                )
                assert all(item.points == 1 for item in driver.received[first:]), 'a stop at rest is one point'
                timings.append((answered, max(held(driver.received[first:], profile, since=called).values())))
                calls.append(called)
                time.sleep(0.2)
            # Each call came while an image callback ran (their starts: the same monotonic clock, this host).
            starts = [float(line.split()[1]) for line in log.read_text().splitlines()]
            assert all(any(start <= called < start + IMAGE_SECONDS for start in starts) for called in calls), (
                calls,
                starts,
            )
        finally:
            if bridge.poll() is None:
                bridge.terminate()
            try:
                bridge.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                bridge.kill()
                bridge.communicate()
    print(
        'stop -> answer / hold on both arms: '
        + ', '.join(f'{answer * 1e3:.1f} / {hold * 1e3:.1f} ms' for answer, hold in timings)
        + f' (image callbacks {IMAGE_SECONDS:g} s each)'
    )
    assert all(answer < BOUND and hold < BOUND for answer, hold in timings), timings
