"""The operator's prompt and its wait (``realcell.operator.CellOperator``): an Enter pressed the moment a trial is
announced starts it. The wait used to begin after the prompt and forget a ready said in between, so the run waited
for a second Enter (a CI failure of ``test_graph_real.py``, where the test's operator answers at once)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from pickup_episode import pickup_episode

from robofollow_ros.realcell.operator import CellOperator, CellSettings, LayoutGate

DOMAIN = 94
TASK = 'L0_pickup_yellow_block_2'


@pytest.fixture
def node():
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context, domain_id=DOMAIN)
    node = rclpy.create_node('evaluator', context=context)
    try:
        yield node
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def test_an_enter_pressed_as_the_prompt_shows_starts_the_trial(node, tmp_path: Path) -> None:
    from std_srvs.srv import Trigger

    condition = threading.Condition()

    def wait(predicate, *, timeout: float, what: str, notified: bool = False) -> None:
        deadline = time.monotonic() + 5.0
        with condition:
            while not predicate():
                if time.monotonic() >= deadline:
                    raise TimeoutError(f'waited 5 s for {what}')
                condition.wait(0.05)

    answers: list[bool] = []

    def say(text: str) -> None:
        if text.startswith('next trial:'):  # the operator presses Enter as soon as the prompt shows
            answers.append(cell.on_ready(Trigger.Request(), Trigger.Response()).success)

    settings = CellSettings(
        robot_profile='aloha_ros2_control', pose_source='mocap', fake_hardware=False, layout=LayoutGate(enabled=False)
    )
    cell = CellOperator(node, settings=settings, out=tmp_path, condition=condition, wait=wait, say=say)
    spec = pickup_episode(TASK).spec
    started = time.monotonic()
    picture = cell.ask_operator(spec)
    assert answers == [True] and time.monotonic() - started < 5.0
    assert picture.exists() and cell.awaiting is None and cell.ready == spec.episode_id
