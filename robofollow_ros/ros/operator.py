"""The evaluator's part on a real (or fake-hardware) cell: bringing the cell to a trial's start, and the operator.

Before each trial (docs/real-cell.md): the arms go home (``/robofollow/home``, the bridge's, when it is served);
then fake hardware resets the cell (``/robofollow/cell/reset``, called by the evaluator node), or the operator is
shown the task, the instruction and where each object goes (text here, a top-down picture in ``OUT/layouts``) and
says ready (``/robofollow/ready``, or Enter on the evaluator's terminal). The episode then starts from a
``SimStatus`` RESET stamped with this node's wall clock, which the bridge, referee and recorder follow as they
follow the sim's. ``/robofollow/void`` marks the current trial void (from its start until the next one starts, or
its record is written if it is the last): its record is written marked void and it is played again.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from rclpy.client import Client
from rclpy.node import Node
from std_srvs.srv import Trigger

from robofollow_ros import topics
from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.seeds import perturbed_positions
from robofollow_ros.errors import GraphError
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.layout_picture import layout_text, write_layout_picture
from robofollow_ros.evaluation.recording import LAYOUTS_DIR, episode_stem
from robofollow_ros.ros import qos
from robofollow_ros.ros.protocol import ResetEpisode, SimStatus, SimStatusMessage, StatusEvent

HOME_SECONDS = 120.0
"""How long the bridge may take to bring both arms home (slowly, through the safety filter)."""
HOME_MOVE = re.compile(r'moving home in ([0-9.]+) s')
"""The bridge's answer while the home move runs (it answers at once): how long the move takes."""
HOME_NO_STATE = 'no joint state from the driver yet'
"""The bridge's refusal before it heard the driver (the graph just started): asked again every ``HOME_RETRY`` s."""
HOME_RETRY = 0.2
RUNTIMES = ('sim', 'real')
"""The evaluator's ``runtime`` parameter: the simulated graph, or a real (or fake-hardware) cell."""

Wait = Callable[..., None]
"""``EvaluatorNode._wait``: ``wait(condition, *, timeout, what, notified)``."""


@dataclass(frozen=True)
class CellSettings:
    """The real cell the evaluator drives (its ``robot_profile``, ``pose_source``, ``fake_hardware`` parameters)."""

    robot_profile: str
    pose_source: str
    fake_hardware: bool

    def identity_fields(self) -> dict[str, str]:
        """What the run identity, run.json and every record name besides ``runtime: real``."""
        return {'robot_profile': self.robot_profile, 'pose_source': self.pose_source}


class RealCell:
    """Services, clients and state of the evaluator node on a real cell (thin: the node does the calling).

    Args:
        node: the evaluator node (its executor spins the callbacks).
        settings: the cell.
        out: the run folder (layout pictures go to ``out/layouts``).
        condition: notified when the operator says ready or a service call returns (the node's waits watch it).
        wait: the node's wait (``EvaluatorNode._wait``).
        terminal: where the operator may press Enter (the evaluator's stdin when it is a terminal), or None.
        say: prints a line for the operator.
    """

    def __init__(
        self,
        node: Node,
        *,
        settings: CellSettings,
        out: Path,
        condition: threading.Condition,
        wait: Wait,
        terminal: TextIO | None = None,
        say: Callable[[str], None] = print,
    ) -> None:
        self.node = node
        self.settings = settings
        self.out = Path(out)
        self.condition = condition
        self.wait = wait
        self.say = say
        self.awaiting: str | None = None
        """The episode the operator is placing the objects for."""
        self.ready: str | None = None
        """The episode the operator said ready for."""
        self.current: EpisodeSpec | None = None
        """The trial whose episode started last (what ``/robofollow/void`` voids)."""
        self.voided: dict[str, str] = {}
        self.home_client: Client[Trigger.Request, Trigger.Response] = node.create_client(Trigger, topics.HOME)
        self.reset_client: Client[ResetEpisode.Request, ResetEpisode.Response] = node.create_client(
            ResetEpisode, topics.CELL_RESET
        )
        self.status_pub = node.create_publisher(SimStatusMessage, topics.SIM_STATUS, qos.EVENTS)
        if not settings.fake_hardware:
            node.create_service(Trigger, topics.READY, self.on_ready)
        node.create_service(Trigger, topics.VOID, self.on_void)
        if terminal is not None:
            threading.Thread(target=self._read_terminal, args=(terminal,), daemon=True, name='operator').start()

    # --- the operator's services (executor threads) ------------------------------------------------------------

    def name(self, relative: str) -> str:
        """A topic or service name as this node resolves it (for what the operator reads)."""
        return topics.resolve(relative, self.node.get_namespace())

    def on_ready(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """``/robofollow/ready``: the objects are placed; the awaited trial starts."""
        response.success, response.message = self._say_ready()
        return response

    def on_void(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """``/robofollow/void``: the current trial is recorded void and played again."""
        with self.condition:
            current = self.current
            if current is None:
                response.success, response.message = False, 'no trial to void (none has started since the last record)'
                return response
            self.voided[current.episode_id] = 'voided by the operator'
        self.node.get_logger().warning(f'{current.task_id} round {current.round} voided: it is played again')
        response.success = True
        response.message = f'{current.task_id} round {current.round} is void and will be played again'
        return response

    def _say_ready(self) -> tuple[bool, str]:
        with self.condition:
            if self.awaiting is None:
                return False, 'no trial is waiting for the cell'
            self.ready = self.awaiting
            self.condition.notify_all()
            return True, 'the trial starts'

    def _read_terminal(self, terminal: TextIO) -> None:
        for _line in terminal:
            self._say_ready()  # Enter outside a wait counts for nothing

    # --- a trial's start (the trial thread) ---------------------------------------------------------------------

    def home(self) -> None:
        """Bring both arms home through the bridge, when it serves ``/robofollow/home``.

        Raises:
            GraphError: the bridge refused or did not answer in ``HOME_SECONDS``.
        """
        if not self.home_client.service_is_ready():
            return
        deadline = time.monotonic() + HOME_SECONDS
        while True:
            future = self.home_client.call_async(Trigger.Request())
            future.add_done_callback(lambda _: self._notify())
            try:
                what = f'the arms to reach home ({self.name(topics.HOME)})'
                self.wait(future.done, timeout=HOME_SECONDS, what=what, notified=True)
            except GraphError:
                self.home_client.remove_pending_request(future)
                raise
            response = future.result()
            if response is None or HOME_NO_STATE not in response.message or time.monotonic() > deadline:
                break
            retry_at = time.monotonic() + HOME_RETRY
            self.wait(lambda at=retry_at: time.monotonic() >= at, timeout=HOME_SECONDS, what='the driver to be heard')
        if response is None or not response.success:
            reason = response.message if response is not None else 'no answer'
            raise GraphError(f'{self.name(topics.HOME)} refused to move the arms home: {reason}')
        # Reset the cell only once the arms are home: a trial started meanwhile saw the move's last rows (the
        # commanded grips of /robofollow/joint_states opening a gripper the last trial closed: "the other arm took
        # part").
        move = HOME_MOVE.search(response.message)
        if move is not None:
            home_at = time.monotonic() + float(move.group(1))
            self.wait(lambda: time.monotonic() >= home_at, timeout=HOME_SECONDS, what='the arms to reach home')

    def ask_operator(self, spec: EpisodeSpec) -> Path:
        """Show the operator the trial and where each object goes, then wait (no time limit) until they say ready;
        returns the layout picture.

        Raises:
            GraphError: the node shut down while waiting.
        """
        layout = registry.layout_of(registry.get_task(spec.task_id, variant=spec.variant))
        positions = perturbed_positions(layout, seed=spec.seed)  # where this trial's seed puts them, as in the sim
        stem = episode_stem(spec.task_id, spec.round)
        title = f'{spec.task_id} round {spec.round}: {spec.instruction}'
        picture = write_layout_picture(layout, self.out / LAYOUTS_DIR / f'{stem}.png', positions=positions, title=title)
        with self.condition:
            self.awaiting, self.ready = spec.episode_id, None
        self.say(
            '\n'.join(
                [
                    f'next trial: {spec.task_id} round {spec.round} (level {spec.level}, {spec.arm} arm)',
                    f'instruction: {spec.instruction}',
                    f'place the objects (top-down picture: {picture}):',
                    layout_text(layout, positions=positions),
                    f'then press Enter here or call {self.name(topics.READY)} '
                    f'(robofollow operator ready, or ros2 service call {self.name(topics.READY)} std_srvs/srv/Trigger)',
                ]
            )
        )
        try:
            self.wait(
                lambda: self.ready == spec.episode_id,
                timeout=math.inf,
                what=f'the operator ({self.name(topics.READY)})',
                notified=True,
            )
        finally:
            with self.condition:
                self.awaiting = None
        return picture

    def start(self, spec: EpisodeSpec) -> None:
        """The cell is at the trial's start: publish the RESET status (stamp: the wall clock now); the trial is now
        the one ``/robofollow/void`` voids."""
        with self.condition:
            self.current = spec
        stamp = self.node.get_clock().now().nanoseconds
        self.status_pub.publish(SimStatus(StatusEvent.RESET, spec.episode_id, stamp).to_message())

    def void_reason(self, spec: EpisodeSpec) -> str | None:
        """Why the trial of ``spec`` is void (the operator voided it), or None; asked when its record is written,
        after which it can no longer be voided."""
        with self.condition:
            if self.current is not None and self.current.episode_id == spec.episode_id:
                self.current = None
            return self.voided.get(spec.episode_id)

    def _notify(self) -> None:
        with self.condition:
            self.condition.notify_all()
