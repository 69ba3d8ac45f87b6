"""The shipped Fast DDS profile keeps the graph on this host: every UDP socket of a node is bound to 127.0.0.1.

A node runs in the environment the launchers give it (``graph_environment``, whatever discovery range the user set),
so what is measured is what ``robofollow launch`` starts. Images larger than the stock shared-memory segment still
arrive (the profile's 16 MiB segment), and a whole graph runs, every node of it on loopback only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from graph_helpers import (
    PROFILE,
    ROOT,
    finish,
    graph_env,
    node_pids,
    read_records,
    start_launch,
    stop_leftovers,
    udp_sockets,
    wait_until,
)

from robofollow_ros.benchmark import registry
from robofollow_ros.graph.declaration import graph_environment

pytestmark = pytest.mark.ros

NOMINAL_DOMAIN = 18
LOOPBACK = '127.0.0.1'
IMAGES = 60
"""640x480 rgb8 images (921,600 B) sent at 30 Hz: the stock 512 KiB segment delivered almost none of them."""

NODE = """
import sys, time
import numpy as np
import rclpy
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image

rclpy.init()
node = rclpy.create_node(sys.argv[1])
if sys.argv[1] == 'camera':
    publisher = node.create_publisher(Image, 'loopback_test/image', qos_profile_sensor_data)
    print('ready', flush=True)
    while publisher.get_subscription_count() < int(sys.argv[2]):
        time.sleep(0.02)
    pixels = np.zeros(640 * 480 * 3, np.uint8)
    for index in range(int(sys.argv[3])):
        pixels[:] = index
        message = Image(height=480, width=640, encoding='rgb8', step=640 * 3, data=pixels.tobytes())
        publisher.publish(message)
        time.sleep(1 / 30)
    sys.stdin.readline()
else:
    received = []
    on_image = lambda message: received.append(len(message.data))
    node.create_subscription(Image, 'loopback_test/image', on_image, qos_profile_sensor_data)
    print('ready', flush=True)
    deadline = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < deadline and len(received) < int(sys.argv[3]):
        rclpy.spin_once(node, timeout_sec=0.1)
    print(sum(size == 640 * 480 * 3 for size in received), flush=True)
"""


def _node_environment(discovery_range: str | None) -> dict[str, str]:
    """What a node of the graph runs with when the user set ``discovery_range`` (``None``: unset)."""
    environment = graph_env(NOMINAL_DOMAIN)
    environment.pop('ROS_AUTOMATIC_DISCOVERY_RANGE')
    if discovery_range is not None:
        environment['ROS_AUTOMATIC_DISCOVERY_RANGE'] = discovery_range
    return graph_environment(environment)


def _start(environment: dict[str, str], *arguments: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, '-c', NODE, *arguments],
        env=environment,
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == 'ready', process.communicate()[1]
    return process


def _assert_loopback_only(sockets: dict[int, list[tuple[str, int]]]) -> None:
    assert all(sockets.values()), f'a process with no UDP socket: {sockets}'
    elsewhere = {pid: [s for s in bound if s[0] != LOOPBACK] for pid, bound in sockets.items()}
    assert not any(elsewhere.values()), f'UDP sockets bound elsewhere than {LOOPBACK}: {elsewhere} (all: {sockets})'


@pytest.mark.parametrize('discovery_range', [None, 'LOCALHOST', 'SUBNET'])
def test_a_node_binds_udp_on_loopback_only_and_images_beyond_the_stock_segment_arrive(discovery_range) -> None:
    environment = _node_environment(discovery_range)
    assert environment['FASTDDS_DEFAULT_PROFILES_FILE'] == str(PROFILE)
    viewer = _start(environment, 'viewer', '60', str(IMAGES))
    camera = _start(environment, 'camera', '1', str(IMAGES))
    try:
        sockets = {process.pid: udp_sockets(process.pid) for process in (viewer, camera)}
        received, viewer_errors = viewer.communicate(timeout=90)
        camera_errors = camera.communicate(input='\n', timeout=30)[1]
    finally:
        for process in (viewer, camera):
            if process.poll() is None:
                process.kill()
                process.communicate()
    _assert_loopback_only(sockets)
    for errors in (viewer_errors, camera_errors):
        assert ' Error]' not in errors, errors[-3000:]  # Fast DDS logs '[XMLPARSER Error] ...'
    # Best effort: a few may be lost on a busy machine; through the stock segment almost all were.
    assert int(received) >= IMAGES // 2, f'{received.strip()} of {IMAGES} images arrived'


def test_the_shipped_profile_is_valid_against_the_schema_of_the_wheels_fast_dds() -> None:
    etree = pytest.importorskip('lxml.etree')
    schemas = sorted(Path(sys.prefix).glob('share/fastdds/fastdds_profiles.xsd'))
    if not schemas:
        pytest.skip('the Fast DDS wheel ships no XML schema here')
    schema = etree.XMLSchema(etree.parse(str(schemas[0])))
    assert schema.validate(etree.parse(str(PROFILE))), schema.error_log


PATTERN = 'L0_pickup_yellow_block'
TASKS = [task.task_id for task in registry.eval_tasks(scene=1, level=0) if PATTERN in task.task_id]


def test_every_node_of_a_running_graph_binds_udp_on_loopback_only(tmp_path) -> None:
    launcher = start_launch(
        NOMINAL_DOMAIN,
        policy='graph_policies:slow_hold',
        policy_kwargs='{"delay": 0.1}',
        task_ids=','.join(TASKS),
        out=str(tmp_path),
    )
    try:
        results = tmp_path / 'results.jsonl'
        wait_until(lambda: results.exists() and read_records(results), timeout=180, what='a first result')
        nodes = node_pids(launcher.pid)
        assert set(nodes) == {'sim', 'policy_bridge', 'referee', 'evaluator'}
        _assert_loopback_only({pid: udp_sockets(pid) for pid in nodes.values()})
        launcher.send_signal(signal.SIGTERM)
        finish(launcher, timeout=60)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
        stop_leftovers()
