"""``robofollow operator``: one Trigger call into a running graph, without the ros2 CLI (real DDS, a private domain).

A stand-in serves /robofollow/void (and refuses /robofollow/stop); the command's exit status and output follow
the service's answer (with how long after the command's start it came), and a service nobody serves is one line
and status 2.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import rclpy
from graph_helpers import ROOT, graph_env, ros_domain, spinning
from rclpy.context import Context
from std_srvs.srv import Trigger

from robofollow_ros import topics
from robofollow_ros.ros.protocol import MoveHome

pytestmark = pytest.mark.ros

DOMAIN = 52


@pytest.fixture
def services():
    context = Context()
    rclpy.init(context=context, domain_id=ros_domain(DOMAIN))
    node = rclpy.create_node('operator_stand_in', context=context)
    calls: list[str] = []

    def answer(name: str, success: bool, message: str):
        def serve(_request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
            calls.append(name)
            response.success, response.message = success, message
            return response

        return serve

    node.create_service(Trigger, topics.VOID, answer('void', True, 'trial 3 voided'))
    node.create_service(Trigger, topics.STOP, answer('stop', False, 'no robot here'))
    homes = iter([(MoveHome.Response.MOVING, 'moving home in 1.20 s'), (MoveHome.Response.BUSY, 'an episode runs')])

    def home(_request: MoveHome.Request, response: MoveHome.Response) -> MoveHome.Response:
        calls.append('home')
        response.code, response.message = next(homes)
        return response

    node.create_service(MoveHome, topics.HOME, home)
    with spinning(context, node):
        yield calls


def _operator(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, '-m', 'robofollow_ros', 'operator', *args]
    return subprocess.run(
        command, env=graph_env(DOMAIN), cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


ANSWERED = re.compile(r'answered ([0-9.]+) s after the command started \(service found after ([0-9.]+) s\)')
"""The line on stderr after the answer: how long after the command's start it came, and the service was found."""


def test_the_operator_calls_the_graphs_services(services) -> None:
    voided = _operator('void', '--timeout', '20')
    assert voided.returncode == 0, voided.stderr
    assert voided.stdout.strip() == 'trial 3 voided'
    answered = ANSWERED.fullmatch(voided.stderr.strip())
    assert answered is not None and 0.0 < float(answered.group(2)) <= float(answered.group(1)) < 20.0, voided.stderr
    refused = _operator('stop', '--timeout', '20')
    assert refused.returncode == 1 and refused.stderr.splitlines()[0] == 'no robot here'
    assert ANSWERED.fullmatch(refused.stderr.splitlines()[1]) is not None, refused.stderr
    assert services == ['void', 'stop']


def test_home_is_done_when_the_bridge_says_the_move_was_sent_and_refused_otherwise(services) -> None:
    moving = _operator('home', '--timeout', '20')
    assert moving.returncode == 0 and moving.stdout.strip() == 'moving home in 1.20 s', moving.stderr
    busy = _operator('home', '--timeout', '20')
    assert busy.returncode == 1 and busy.stderr.splitlines()[0] == 'an episode runs', busy.stderr
    assert services == ['home', 'home']


def test_a_service_nobody_serves_is_one_line() -> None:
    done = _operator('home', '--timeout', '1')
    assert done.returncode == 2
    assert done.stderr.strip() == f'no {topics.resolve(topics.HOME)} service answered within 1 s'
