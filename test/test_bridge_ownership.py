"""Who may move the arms, and when (issue 29, concurrency): a home move and an episode never overlap in the real-time
bridge (``CellBridge.busy``: the home service runs on the executor's thread, the episode on the bridge's own), and
instructions waiting for the episode thread are bounded, the oldest dropped first."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator

import pytest
from graph_helpers import private_node

from robofollow_ros.nodes.policy_bridge import MAX_PENDING_INSTRUCTIONS, put_newest
from robofollow_ros.realcell.bridge import CellBridge
from robofollow_ros.realcell.safe_motion import HomeAnswer
from robofollow_ros.ros.protocol import HomeCode, MoveHome

pytestmark = pytest.mark.ros
NOMINAL_DOMAIN = 45


@pytest.fixture
def bridge() -> Iterator[CellBridge]:
    with private_node(NOMINAL_DOMAIN, 'ownership_test') as (node, _executor):
        cell = CellBridge.from_name(node, 'aloha_ros2_control')
        try:
            yield cell
        finally:
            cell.close()


def home_answer(bridge: CellBridge) -> MoveHome.Response:
    return bridge.on_home(MoveHome.Request(), MoveHome.Response())


def test_home_is_refused_while_an_episode_holds_the_arms_and_an_episode_waits_for_a_home_move(
    bridge: CellBridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    moves: list[str] = []

    def slow_home() -> HomeAnswer:
        moves.append('home starts')
        time.sleep(0.3)
        moves.append('home ends')
        return HomeAnswer(HomeCode.MOVING, 0.3, 'home')

    monkeypatch.setattr(bridge.motion, 'home', slow_home)
    with bridge.busy:  # an episode runs
        answer = home_answer(bridge)
    assert (answer.code, answer.message) == (HomeCode.BUSY, 'an episode is running: home refused') and moves == []
    homing = threading.Thread(target=home_answer, args=(bridge,))
    homing.start()
    while not moves:
        time.sleep(0.01)
    with bridge.busy:  # what an episode does first: it waits for the home move to end
        moves.append('episode starts')
    homing.join()
    assert moves == ['home starts', 'home ends', 'episode starts']
    assert home_answer(bridge).code == HomeCode.MOVING


def test_pending_instructions_are_bounded_and_the_newest_kept() -> None:
    requests: queue.Queue[str | None] = queue.Queue(maxsize=MAX_PENDING_INSTRUCTIONS)
    dropped = []
    for n in range(MAX_PENDING_INSTRUCTIONS + 3):
        dropped += put_newest(requests, f'instruction {n}')
    assert dropped == ['instruction 0', 'instruction 1', 'instruction 2']
    assert put_newest(requests, None) == ['instruction 3']  # the stop always gets in
    kept = [requests.get_nowait() for _ in range(MAX_PENDING_INSTRUCTIONS)]
    assert kept[-1] is None and kept[0] == 'instruction 4'


def test_the_bridge_node_answers_home_from_the_executor_while_its_episode_thread_is_free(bridge: CellBridge) -> None:
    # No joint state from any driver here: home is refused for that reason, not for an episode.
    answer = home_answer(bridge)
    assert answer.code == HomeCode.NOT_YET and 'episode' not in answer.message, answer.message
