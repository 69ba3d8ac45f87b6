"""The grippers' operating modes asked of an xs_sdk driver before anything moves (``realcell/gripper_modes.py``),
over real DDS in a private domain: against fake hardware whose cell was not set up (``gripper_mode``), and against
a stand-in ``get_robot_info`` that answers late, answers another mode, and is then set right while the graph runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from graph_helpers import private_node
from test_fake_hardware import NOMINAL_DOMAIN, Client

from robofollow_ros.realcell.gripper_modes import NOT_ANSWERED, GripperModes
from robofollow_ros.robot.profiles import load_profile

pytestmark = pytest.mark.ros
pytest.importorskip('interbotix_xs_msgs.srv', reason='scripts/build_interfaces.sh builds interbotix_xs_msgs')

PROFILE = 'aloha_interbotix'


@pytest.fixture
def client() -> Iterator[Client]:
    with private_node(NOMINAL_DOMAIN, 'gripper_modes_test') as (node, executor):
        yield Client(node, executor)


def test_a_gripper_left_in_another_mode_is_named_with_how_to_set_it(client: Client) -> None:
    profile = load_profile(PROFILE)
    left = profile.arms['left']
    with client.hardware(PROFILE, left.joint_states, 'gripper_mode:=linear_position'):
        modes = GripperModes(client.node, profile)
        client.spin_until(lambda: len(modes.seen) == 2, what='both grippers answered')
        problem = modes.problem()
    assert problem is not None
    assert problem == (
        "the left and right grippers are in 'linear_position' mode, not 'current_based_position' (the profile's "
        "commands mean that mode): set it as ALOHA's setup does, "
        'robot_set_operating_modes("single", "gripper", "current_based_position")'
    )


def test_no_motion_until_every_gripper_answered_its_mode_and_a_mode_set_later_is_seen(client: Client) -> None:
    from interbotix_xs_msgs.srv import RobotInfo

    profile = load_profile(PROFILE)
    modes = GripperModes(client.node, profile)
    client.spin_until(lambda: True, what='one turn', timeout=1.0)
    assert modes.problem() == (
        f'{NOT_ANSWERED}: no answer from /follower_left/get_robot_info, /follower_right/get_robot_info '
        '(is the driver running?)'
    )
    answers = {'left': 'current_based_position', 'right': 'position'}
    asked: list[tuple[str, str, str]] = []

    def serve(arm: str) -> Any:
        def answer(request: Any, response: Any) -> Any:
            asked.append((arm, request.cmd_type, request.name))
            response.mode = answers[arm]
            return response

        return answer

    for arm in ('left', 'right'):
        client.node.create_service(RobotInfo, f'/follower_{arm}/get_robot_info', serve(arm))
    client.spin_until(lambda: len(modes.seen) == 2, what='both grippers answered')
    problem = modes.problem() or ''
    assert problem.startswith("the right gripper is in 'position' mode") and 'left gripper' not in problem
    assert ('left', 'single', 'gripper') in asked and ('right', 'single', 'gripper') in asked
    answers['right'] = 'current_based_position'  # the operator ran the setup
    client.spin_until(lambda: modes.problem() is None, what='the right gripper seen in its mode')
