"""``ros.runtime.publish_acknowledged`` over real DDS (private domain): an episode spec published on a latched writer of
depth 1 is not handed over before its reader has it. A reader process stopped with SIGSTOP cannot acknowledge: the
call waits out its timeout (and says so); resumed, the reader acknowledges and gets the spec."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from graph_helpers import ROOT, graph_env, private_node, wait_until

from robofollow_ros import topics
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.ros import qos
from robofollow_ros.ros.protocol import EpisodeSpecMessage, spec_message
from robofollow_ros.ros.runtime import publish_acknowledged

pytestmark = pytest.mark.ros
NOMINAL_DOMAIN = 58
READER = """
import sys
import rclpy
from robofollow_ros import topics
from robofollow_ros.ros import qos
from robofollow_ros.ros.protocol import EpisodeSpecMessage
rclpy.init()
node = rclpy.create_node('acknowledging_reader')
node.create_subscription(EpisodeSpecMessage, topics.EPISODE, lambda m: print(m.task_id, flush=True), qos.LATCHED_READER)
rclpy.spin(node)
"""


def _spec(task_id: str) -> EpisodeSpec:
    return EpisodeSpec(
        task_id=task_id,
        variant='published',
        layout='default',
        seed=1,
        round=1,
        arm='left',
        level='L0',
        instruction='pick',
    )


def test_a_spec_waits_for_its_readers_acknowledgement_and_a_stopped_reader_makes_it_time_out() -> None:
    reader = subprocess.Popen(
        [sys.executable, '-c', READER], env=graph_env(NOMINAL_DOMAIN), cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        with private_node(NOMINAL_DOMAIN, 'spec_writer', spin=True) as (node, _executor):
            publisher = node.create_publisher(EpisodeSpecMessage, topics.EPISODE, qos.LATCHED)
            wait_until(lambda: publisher.get_subscription_count() > 0, timeout=60, what='the reader')
            assert publish_acknowledged(publisher, spec_message(_spec('first')), timeout=30, context=node.context)
            assert reader.stdout.readline().strip() == 'first'

            os.kill(reader.pid, signal.SIGSTOP)
            started = time.monotonic()
            assert not publish_acknowledged(publisher, spec_message(_spec('second')), timeout=1.0, context=node.context)
            assert time.monotonic() - started >= 1.0

            os.kill(reader.pid, signal.SIGCONT)
            assert publish_acknowledged(publisher, spec_message(_spec('third')), timeout=30, context=node.context)
            received: list[str] = []  # 'second' may come first or not at all (the writer keeps one sample)
            for line in iter(reader.stdout.readline, ''):  # a reader that ended ends the loop
                received.append(line.strip())
                if received[-1] == 'third':
                    break
            assert received[-1:] == ['third'], received
    finally:
        os.kill(reader.pid, signal.SIGCONT)
        reader.kill()
        reader.wait()
