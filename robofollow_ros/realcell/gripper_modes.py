"""``GripperModes``: whether each gripper's motor is in the operating mode its profile's commands assume, asked of
the driver before the bridge moves anything.

xs_sdk takes a gripper command in the units of the motor's operating mode and checks nothing: a motor angle sent
to a gripper in ``linear_position`` mode (ALOHA's follower configuration starts it so) is read as something else.
ALOHA switches the followers' grippers to ``current_based_position`` before sending angles; this asks each arm's
``get_robot_info`` (interbotix_xs_msgs/srv/RobotInfo, ``single`` / the gripper joint) and refuses every motion
until each gripper was seen in the mode its profile names (``GripperProfile.operating_mode``). Setting the mode is
left to the operator: the motor goes limp for a moment while its mode changes, which only the operator can allow.

The requests go out from a timer on the node's executor, again every ``ASK_AGAIN_SECONDS`` while an arm has not
answered or answered another mode (the operator may set it while the graph runs); the answers arrive on the
executor too, so nothing here waits.
"""

from __future__ import annotations

import threading
from typing import Any

from rclpy.node import Node

from robofollow_ros.errors import ProfileError
from robofollow_ros.robot.profiles import OperatingMode, RobotProfile
from robofollow_ros.state_layout import ARMS, Arm

ASK_AGAIN_SECONDS = 1.0
"""How often an unanswered gripper's mode is asked again (a driver started after the bridge)."""
NOT_ANSWERED = 'the driver has not told the gripper modes yet'
"""The start of the refusal while an arm's ``get_robot_info`` has not answered (the evaluator asks home again)."""


def robot_info_type() -> Any:
    """interbotix_xs_msgs/srv/RobotInfo.

    Raises:
        ProfileError: the interface package is not installed.
    """
    try:
        from interbotix_xs_msgs.srv import RobotInfo
    except ImportError:
        raise ProfileError(
            "checking the grippers' operating modes needs interbotix_xs_msgs with its RobotInfo service (run "
            "scripts/build_interfaces.sh, or source Interbotix's workspace)"
        ) from None
    return RobotInfo


class GripperModes:
    """Asks, and remembers, the grippers' operating modes of ``profile``'s driver.

    Args:
        node: the node whose clients, timer and executor ask.
        profile: the robot profile; arms whose gripper names no operating mode are not asked.
    """

    def __init__(self, node: Node, profile: RobotProfile) -> None:
        self.wanted: dict[Arm, OperatingMode] = {
            arm: mode for arm in ARMS if (mode := profile.arms[arm].gripper.operating_mode) is not None
        }
        self.joints = {arm: profile.arms[arm].gripper.command.joint for arm in self.wanted}
        self.seen: dict[Arm, str] = {}
        self.pending: dict[Arm, Any] = {}
        self.lock = threading.Lock()
        self.clients: dict[Arm, Any] = {}
        if self.wanted:
            robot_info = robot_info_type()
            self.request_type = robot_info.Request
            self.clients = {arm: node.create_client(robot_info, mode.service) for arm, mode in self.wanted.items()}
            self.timer = node.create_timer(ASK_AGAIN_SECONDS, self.ask)
            self.ask()

    def ask(self) -> None:
        """Send a request to every arm that has not answered and has none outstanding."""
        with self.lock:
            waiting = [
                arm for arm, mode in self.wanted.items() if self.seen.get(arm) != mode.mode and arm not in self.pending
            ]
        for arm in waiting:
            client = self.clients[arm]
            if not client.service_is_ready():
                continue
            future = client.call_async(self.request_type(cmd_type='single', name=self.joints[arm]))
            with self.lock:
                self.pending[arm] = future
            future.add_done_callback(lambda done, arm=arm: self._answered(arm, done))

    def _answered(self, arm: Arm, future: Any) -> None:
        answer = future.result() if future.done() and not future.cancelled() else None
        with self.lock:
            self.pending.pop(arm, None)
            if answer is not None:
                self.seen[arm] = str(answer.mode)

    def all_told(self) -> bool:
        """Whether every gripper whose mode the profile names has told its mode (right or wrong)."""
        with self.lock:
            return all(arm in self.seen for arm in self.wanted)

    def problem(self) -> str | None:
        """None when every gripper was seen in its mode; else why the arms must not move (one line)."""
        with self.lock:
            seen = dict(self.seen)
        wrong = [arm for arm, mode in self.wanted.items() if arm in seen and seen[arm] != mode.mode]
        silent = [self.wanted[arm].service for arm in self.wanted if arm not in seen]
        if not wrong and silent:
            return f'{NOT_ANSWERED}: no answer from {", ".join(silent)} (is the driver running?)'
        if wrong:
            by_mode: dict[tuple[str, str], list[Arm]] = {}
            for arm in wrong:
                by_mode.setdefault((seen[arm], self.wanted[arm].mode), []).append(arm)
            parts = [
                f'the {" and ".join(arms)} gripper{"s are" if len(arms) > 1 else " is"} in {found!r} mode, not '
                f"{wanted!r} (the profile's commands mean that mode): set it as ALOHA's setup does, "
                f'robot_set_operating_modes("single", "{self.joints[arms[0]]}", "{wanted}")'
                for (found, wanted), arms in by_mode.items()
            ]
            return '; '.join(parts + [f'no answer yet from {service}' for service in silent])
        return None
