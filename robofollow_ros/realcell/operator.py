"""The evaluator's part on a real (or fake-hardware) cell: bringing the cell to a trial's start, and the operator.

Before each trial (docs/real-cell.md): the arms go home (``/robofollow/home``, the bridge's, when it is served);
then fake hardware resets the cell (``/robofollow/cell/reset``, called by the evaluator node), or the operator is
shown the task, the instruction and where each object goes (text here, a top-down picture in ``OUT/layouts``) and
says ready (``/robofollow/ready``, or Enter on the evaluator's terminal). Then the layout check (issue 21): the
evaluator reads where the objects are from their pose topics (fake hardware's simulation truth, the tracker, or
motion capture), compares them with the trial's places (``tracking.layout_check``), draws the picture with what it
measured (``OUT/layouts/<stem>.check.png``) and prints what is off and by how much; outside tolerance the trial is
held until the operator fixes it (``/robofollow/ready`` or Enter checks again) or overrides the check
(``/robofollow/override_layout``, or ``override <why>`` typed on the terminal), which the trial's record keeps. The
episode then starts from a ``SimStatus`` RESET stamped with this node's wall clock, which the bridge, referee and
recorder follow as they follow the sim's. ``/robofollow/void`` marks the current trial void (from its start until
the next one starts, or its record is written if it is the last): its record is written marked void and it is
played again.

On the evaluator's terminal (its stdin, when it is a terminal) ``s`` or the space bar stops both arms at once, without
Enter: the same call as ``/robofollow/stop`` (``robofollow operator stop``), made from a client that found the
bridge when the graph started, so no discovery stands between the key and the stop (``realcell/operator_keys.py``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from rclpy.client import Client
from rclpy.node import Node
from std_srvs.srv import Trigger

from robofollow_ros import topics
from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.seeds import perturbed_positions
from robofollow_ros.errors import GraphError
from robofollow_ros.evaluation.episode_files import LAYOUTS_DIR, episode_stem
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.layout_picture import layout_text, write_layout_picture
from robofollow_ros.realcell.object_poses import ObjectPoses
from robofollow_ros.realcell.operator_keys import KeyReader
from robofollow_ros.ros import qos
from robofollow_ros.ros.protocol import (
    EpisodeSpecMessage,
    HomeCode,
    MoveHome,
    ResetEpisode,
    SimStatus,
    SimStatusMessage,
    StatusEvent,
    spec_message,
)
from robofollow_ros.ros.runtime import publish_acknowledged
from robofollow_ros.tracking.layout_check import DEFAULT_TOLERANCES, LayoutCheck, Tolerances, check_layout

ANNOUNCE_SECONDS = 5.0
"""How long a trial's layout announcement waits for its readers' acknowledgement before the trial goes on."""
HOME_SECONDS = 120.0
"""How long the bridge may take to bring both arms home (slowly, through the safety filter)."""
HOME_ANSWER_SECONDS = 10.0
"""How long a call of ``/robofollow/home`` may stay unanswered before it is made again (the bridge answers at once)."""
EXIT_STOP_SECONDS = 1.0
"""How long an evaluator leaving mid-run waits for the bridge to answer its stop."""
HOME_RETRY = 0.2
"""Seconds between calls of ``/robofollow/home`` while the bridge has heard nothing fresh from the driver yet
(``NOT_YET``: the graph just started, or the grippers' operating modes are not told yet)."""
RUNTIMES = ('sim', 'real')
"""The evaluator's ``runtime`` parameter: the simulated graph, or a real (or fake-hardware) cell."""

RECHECK_SECONDS = 3.0
"""How often a held trial's layout is checked again without the operator: a tag the tracker missed once (glare, an
arm in the view) is seen again, and the trial goes on by itself."""
LAYOUT_TIMEOUT_SECONDS = 900.0
"""How long a trial may be held by its layout check, nobody fixing or overriding it, before the run stops (it
resumes from that trial); an unattended run must not wait for ever."""
POSE_WAIT_SECONDS = 2.0
"""How long a layout check waits for a fresh pose of every object (the tracker publishes at the camera's rate)."""
OVERRIDE_WORD = 'override'
"""Typed on the evaluator's terminal (``override <why>``) while a failed layout check holds a trial: start it."""
SERVICE_OVERRIDE = f'the operator called {topics.resolve(topics.OVERRIDE_LAYOUT)}'
"""The reason recorded when the override came through the service (std_srvs/Trigger carries no text)."""
TERMINAL_OVERRIDE = f"the operator typed {OVERRIDE_WORD!r} on the evaluator's terminal"
"""The reason recorded for a bare ``override`` typed on the terminal."""
CHECK_PICTURE_SUFFIX = '.check.png'
STOP_KEY_NAMES = 's or the space bar'
"""The stop keys of the evaluator's terminal (``operator_keys.STOP_KEYS``), as the operator is told them."""
"""``OUT/layouts/<stem>.check.png``: the layout check's picture (the places and what was measured)."""

Wait = Callable[..., None]
"""``EvaluatorNode._wait``: ``wait(condition, *, timeout, what, notified)``."""


@dataclass(frozen=True)
class LayoutGate:
    """The layout check before each trial (the evaluator's ``layout_check``, ``layout_position_mm``,
    ``layout_rotation_deg``, ``layout_pose_wait``, ``layout_recheck`` and ``layout_timeout`` parameters): on or
    off, its tolerances, how long it waits for a fresh pose of every object before the ones without count as not
    seen, how often a held trial's layout is checked again by itself, and how long a trial may be held before the
    run stops (0: for ever)."""

    enabled: bool = True
    tolerances: Tolerances = DEFAULT_TOLERANCES
    pose_wait: float = POSE_WAIT_SECONDS
    recheck: float = RECHECK_SECONDS
    timeout: float = LAYOUT_TIMEOUT_SECONDS


@dataclass(frozen=True)
class CellSettings:
    """The real cell the evaluator drives (its ``robot_profile``, ``pose_source``, ``fake_hardware`` parameters,
    and the layout check's)."""

    robot_profile: str
    pose_source: str
    fake_hardware: bool
    layout: LayoutGate = LayoutGate()

    def identity_fields(self) -> dict[str, str]:
        """What the run identity, run.json and every record name besides ``runtime: real``."""
        return {'robot_profile': self.robot_profile, 'pose_source': self.pose_source}


class CellOperator:
    """Services, clients and state of the evaluator node on a real cell (thin: the node does the calling).

    Args:
        node: the evaluator node (its executor spins the callbacks).
        settings: the cell.
        out: the run folder (layout pictures go to ``out/layouts``).
        condition: notified when the operator says ready or a service call returns (the node's waits watch it).
        wait: the node's wait (``EvaluatorNode._wait``).
        terminal: where the operator may press Enter (the evaluator's stdin when it is a terminal), or None; read key
            by key when it is a real terminal (a stop key stops the arms at once), by lines otherwise.
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
        self.holding: str | None = None
        """The episode a failed layout check holds (what ``/robofollow/override_layout`` starts)."""
        self.override: str | None = None
        """Why the operator overrode the held check (set while ``holding``)."""
        self.poses = ObjectPoses(node) if settings.layout.enabled else None
        self.home_client: Client[MoveHome.Request, MoveHome.Response] = node.create_client(MoveHome, topics.HOME)
        self.stop_client: Client[Trigger.Request, Trigger.Response] = node.create_client(Trigger, topics.STOP)
        self.release_client: Client[Trigger.Request, Trigger.Response] = node.create_client(Trigger, topics.RELEASE)
        self.reset_client: Client[ResetEpisode.Request, ResetEpisode.Response] = node.create_client(
            ResetEpisode, topics.CELL_RESET
        )
        self.status_pub = node.create_publisher(SimStatusMessage, topics.SIM_STATUS, qos.EVENTS)
        self.layout_pub = node.create_publisher(EpisodeSpecMessage, topics.CELL_LAYOUT, qos.LATCHED)
        # Fake hardware resets the cell, but a layout check it fails, or a stop, still waits for the operator (or a
        # test).
        node.create_service(Trigger, topics.READY, self.on_ready)
        if settings.layout.enabled:
            node.create_service(Trigger, topics.OVERRIDE_LAYOUT, self.on_override)
        node.create_service(Trigger, topics.VOID, self.on_void)
        self.keys: KeyReader | None = None
        if terminal is not None:
            self.keys = KeyReader.for_terminal(terminal, on_stop=self.stop_key, on_line=self._take_line, report=say)
            if self.keys is not None and self.keys.start():
                say(
                    f'stop key: press {STOP_KEY_NAMES} here to stop both arms at once ({self.name(topics.STOP)}, as '
                    'robofollow operator stop)'
                )
            else:
                self.keys = None
                threading.Thread(target=self._read_terminal, args=(terminal,), daemon=True, name='operator').start()

    def close(self) -> None:
        """Give the terminal back as it was (the evaluator's exit)."""
        if self.keys is not None:
            self.keys.close()

    # --- the operator's services (executor threads) ------------------------------------------------------------

    def name(self, relative: str) -> str:
        """A topic or service name as this node resolves it (for what the operator reads)."""
        return topics.resolve(relative, self.node.get_namespace())

    def on_ready(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """``/robofollow/ready``: the objects are placed; the awaited trial starts."""
        response.success, response.message = self._say_ready()
        return response

    def on_override(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """``/robofollow/override_layout``: the trial a failed layout check holds starts with the objects as they
        are; the override is recorded."""
        response.success, response.message = self._say_override(SERVICE_OVERRIDE)
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
            if self.holding is not None:
                return True, 'the layout is checked again'
            if self.settings.layout.enabled:
                return True, 'the layout is checked; the trial starts if it is in place'
            return True, 'the trial starts'

    def _say_override(self, reason: str) -> tuple[bool, str]:
        with self.condition:
            if self.holding is None:
                return False, 'no layout check is holding a trial'
            self.override = reason
            self.condition.notify_all()
            return True, 'the trial starts with the layout as it is (the override is recorded)'

    def _read_terminal(self, terminal: TextIO) -> None:
        for line in terminal:
            self._take_line(line)

    def _take_line(self, line: str) -> None:
        """A line typed on the terminal: ``override <why>``, or Enter (ready)."""
        word, _, rest = line.strip().partition(' ')
        if word.lower() == OVERRIDE_WORD:
            _accepted, answer = self._say_override(rest.strip() or TERMINAL_OVERRIDE)
            self.say(answer)
        else:
            self._say_ready()  # Enter outside a wait counts for nothing

    def stop_key(self) -> None:
        """The stop key (the terminal's thread): call ``/robofollow/stop`` now; its answer is printed when it comes.
        The client has matched the bridge's service since the graph started: no discovery to wait for."""
        pressed = time.monotonic()
        name = self.name(topics.STOP)
        if not self.stop_client.service_is_ready():
            self.say(f'STOP key: no {name} service is there (is the policy bridge running?): stop the arms at the cell')
            return
        future = self.stop_client.call_async(Trigger.Request())
        self.say(f'STOP key: {name} called')
        self.node.get_logger().warning(f'stop key pressed on the terminal: {name} called')

        def answered(done: Any) -> None:
            response = done.result()
            answer = response.message if response is not None else 'no answer'
            self.say(f'STOP: {answer} ({1e3 * (time.monotonic() - pressed):.0f} ms after the key)')

        future.add_done_callback(answered)

    def stop_arms(self, *, timeout: float = EXIT_STOP_SECONDS) -> bool:
        """The evaluator leaves mid-run (a signal to it alone, as a service manager sends): stop the arms now through
        ``/robofollow/stop``, not once the launcher has stopped the bridge (0.4-0.5 s and 40-70 mm of travel later
        over fake hardware); waits up to ``timeout`` for the answer. Whether the bridge answered."""
        if not self.stop_client.service_is_ready():
            return False
        future = self.stop_client.call_async(Trigger.Request())
        deadline = time.monotonic() + timeout
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.005)
        if not future.done():
            self.stop_client.remove_pending_request(future)
            return False
        self.node.get_logger().warning(f'the evaluator is stopping mid-run: {self.name(topics.STOP)} called')
        return True

    # --- a trial's start (the trial thread) ---------------------------------------------------------------------

    def announce(self, spec: EpisodeSpec) -> None:
        """The cell is about to be laid out for ``spec``'s trial (``robofollow/cell/layout``), acknowledged by its
        readers (the tracker) before the trial goes on."""
        if not publish_acknowledged(
            self.layout_pub, spec_message(spec), timeout=ANNOUNCE_SECONDS, context=self.node.context
        ):
            self.node.get_logger().warning(
                f'{spec.task_id}: not every reader of {topics.CELL_LAYOUT} acknowledged its layout in '
                f'{ANNOUNCE_SECONDS:g} s'
            )

    def home(self, spec: EpisodeSpec) -> None:
        """Bring both arms home through the bridge before ``spec``'s trial, when it serves ``/robofollow/home``. A
        bridge stopped by ``/robofollow/stop`` moves nothing until the operator says ready (Enter or
        ``/robofollow/ready``), which releases the stop (``/robofollow/release``); then the arms go home.

        Raises:
            GraphError: the bridge refused or did not answer in ``HOME_SECONDS``.
        """
        if not self.home_client.service_is_ready():
            return
        response = self._move_home()
        if response is not None and response.code == HomeCode.STOPPED:
            self._wait_for_operator(
                spec,
                held=False,
                prompt=f'the arms are stopped ({self.name(topics.STOP)}); the stopped trial is void and plays again. '
                f'When the cell is safe, press Enter here or call {self.name(topics.READY)} (robofollow operator '
                f'ready) to release the stop and move the arms home for {spec.task_id} round {spec.round}',
            )
            self._release()
            response = self._move_home()
        if response is None or response.code != HomeCode.MOVING:
            reason = response.message if response is not None else 'no answer'
            raise GraphError(f'{self.name(topics.HOME)} refused to move the arms home: {reason}')
        # Reset the cell only once the arms are home: a trial started meanwhile saw the move's last rows (the
        # commanded grips of /robofollow/joint_states opening a gripper the last trial closed: "the other arm took
        # part").
        home_at = time.monotonic() + float(response.seconds)
        self.wait(lambda: time.monotonic() >= home_at, timeout=HOME_SECONDS, what='the arms to reach home')

    def _release(self) -> None:
        """Ask the bridge to release its stop (``/robofollow/release``)."""
        what = f'the bridge to release its stop ({self.name(topics.RELEASE)})'
        self.wait(self.release_client.service_is_ready, timeout=HOME_SECONDS, what=what, notified=False)
        future = self.release_client.call_async(Trigger.Request())
        future.add_done_callback(lambda _: self._notify())
        try:
            self.wait(future.done, timeout=HOME_SECONDS, what=what, notified=True)
        except GraphError:
            self.release_client.remove_pending_request(future)
            raise
        response = future.result()
        answer = response.message if response is not None else 'no answer'
        self.node.get_logger().warning(f'{self.name(topics.RELEASE)}: {answer}')

    def _move_home(self) -> MoveHome.Response | None:
        """Call ``/robofollow/home`` until the bridge has heard the driver (or ``HOME_SECONDS`` passed); its answer.
        A call unanswered for ``HOME_ANSWER_SECONDS`` is made again (moving home twice is harmless): under load the
        bridge's answer to the first call of a fresh graph was once lost ("failed to send response (timeout)": the
        evaluator's response reader not yet matched), and the run waited out ``HOME_SECONDS`` and failed."""
        deadline = time.monotonic() + HOME_SECONDS
        what = f'the arms to reach home ({self.name(topics.HOME)})'
        while True:
            future = self.home_client.call_async(MoveHome.Request())
            future.add_done_callback(lambda _: self._notify())
            answer_by = min(deadline, time.monotonic() + HOME_ANSWER_SECONDS)

            def answered(future: Any = future, answer_by: float = answer_by) -> bool:
                return bool(future.done()) or time.monotonic() >= answer_by

            try:
                self.wait(answered, timeout=HOME_SECONDS, what=what, notified=True)
            except GraphError:
                self.home_client.remove_pending_request(future)
                raise
            if not future.done():
                self.home_client.remove_pending_request(future)
                if time.monotonic() >= deadline:
                    raise GraphError(f'timed out after {HOME_SECONDS:g} s waiting for {what}')
                unanswered = f'{self.name(topics.HOME)}: no answer in {HOME_ANSWER_SECONDS:g} s, asked again'
                self.node.get_logger().warning(unanswered)
                continue
            response = future.result()
            retryable = response is not None and response.code == HomeCode.NOT_YET
            if not retryable or time.monotonic() > deadline:
                return response
            retry_at = time.monotonic() + HOME_RETRY
            self.wait(lambda at=retry_at: time.monotonic() >= at, timeout=HOME_SECONDS, what='the driver to be heard')

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
        prompt = '\n'.join(
            [
                f'next trial: {spec.task_id} round {spec.round} (level {spec.level}, {spec.arm} arm)',
                f'instruction: {spec.instruction}',
                f'place the objects (top-down picture: {picture}):',
                layout_text(layout, positions=positions),
                f'then press Enter here or call {self.name(topics.READY)} '
                f'(robofollow operator ready, or ros2 service call {self.name(topics.READY)} std_srvs/srv/Trigger)',
            ]
        )
        self._wait_for_operator(spec, held=False, prompt=prompt)
        return picture

    def _wait_for_operator(
        self, spec: EpisodeSpec, *, held: bool, until: float = math.inf, prompt: str | None = None
    ) -> str | None:
        """Say ``prompt``, then wait until the operator says ready for ``spec`` or, ``held`` by a failed layout check,
        overrides it, or until ``until`` (``time.monotonic()``; none by default); returns the override's reason, else
        None. The trial is awaited before the prompt goes out, so an Enter pressed as soon as it shows counts (it
        was lost when the wait began after the prompt)."""
        with self.condition:
            self.awaiting, self.ready = spec.episode_id, None
            if held:
                self.holding, self.override = spec.episode_id, None
        if prompt is not None:
            self.say(prompt)
        what = f'the operator ({self.name(topics.READY)}' + (
            f' or {self.name(topics.OVERRIDE_LAYOUT)})' if held else ')'
        )
        try:
            self.wait(
                lambda: (
                    self.ready == spec.episode_id or (held and self.override is not None) or time.monotonic() >= until
                ),
                timeout=math.inf,
                what=what,
                notified=True,
            )
            with self.condition:
                return self.override if held else None
        finally:
            with self.condition:
                self.awaiting = self.holding = self.override = None

    def check_layout(self, spec: EpisodeSpec) -> dict[str, Any]:
        """The layout check before ``spec``'s trial (the cell is reset or the operator said ready): read where the
        objects are, compare with the trial's places, write the picture with what was measured and tell the
        operator; outside tolerance hold the trial until a check passes (the operator fixed the objects and said
        ready again, or a check made by itself every ``recheck`` seconds passes) or the operator overrides it.
        Returns the fields the trial's record gains (``layout_check``: the accepted check's ``to_dict()``, how many
        checks it took and the picture), or none with the check off.

        Raises:
            GraphError: the node shut down while waiting, or the trial was held ``timeout`` seconds.
        """
        gate = self.settings.layout
        if not gate.enabled or self.poses is None:
            return {}
        _task, layout = spec.resolve()
        positions = perturbed_positions(layout, seed=spec.seed)
        # A camera sees a stack's top, not its support: the tracker publishes the support under the object on it,
        # with that object's yaw.
        tracked = self.settings.pose_source == 'tracker'
        covered = {p.on for p in layout.placements if p.on is not None} if tracked else set()
        picture = self.out / LAYOUTS_DIR / f'{episode_stem(spec.task_id, spec.round)}{CHECK_PICTURE_SUFFIX}'
        name = f'{spec.task_id} round {spec.round}'
        attempts = 0
        held_until = math.inf if gate.timeout <= 0.0 else time.monotonic() + gate.timeout
        reported, asked = None, False
        while True:
            attempts += 1
            measured = self._measure(layout.object_names, wait=gate.pose_wait)
            check = check_layout(
                layout, measured, positions=positions, tolerances=gate.tolerances, yaw_unmeasured=covered
            )
            title = f'{name}\nlayout check {attempts}'
            write_layout_picture(
                layout, picture, positions=positions, measured=measured, tolerances=gate.tolerances, title=title
            )
            if check.passed:
                self.say(f'{name}: {check.summary()}')
                break
            if asked or check.summary() != reported:  # a check of its own says only what changed
                self._report_problems(name, check, picture)
                reported = check.summary()
            if time.monotonic() >= held_until:
                raise GraphError(
                    f'{name}: the layout stayed off for {gate.timeout:g} s (layout_timeout) with nobody fixing or '
                    f'overriding it: {check.summary()}; the run stops here and resumes from this trial'
                )
            until = min(time.monotonic() + gate.recheck, held_until)
            reason = self._wait_for_operator(spec, held=True, until=until)
            asked = reason is None and time.monotonic() < until  # the operator said ready, before the next check
            if reason is not None:
                check = check_layout(
                    layout,
                    measured,
                    positions=positions,
                    tolerances=gate.tolerances,
                    override=reason,
                    yaw_unmeasured=covered,
                )
                write_layout_picture(
                    layout,
                    picture,
                    positions=positions,
                    measured=measured,
                    tolerances=gate.tolerances,
                    title=f'{title}, overridden: {reason}',
                )
                self.say(f'{name}: {check.summary()}')
                self.node.get_logger().warning(f'{name}: layout check overridden: {check.summary()}')
                break
        record = check.to_dict()
        record.update(attempts=attempts, picture=str(picture.relative_to(self.out)))
        return {'layout_check': record}

    def _measure(self, names: tuple[str, ...], *, wait: float) -> dict[str, tuple[float, float, float]]:
        """Every object's pose that arrives from now on, stamped from now on, waiting up to ``wait`` seconds for all of
        ``names``."""
        assert self.poses is not None
        poses, start, stamp_ns = self.poses, time.monotonic(), self.node.get_clock().now().nanoseconds
        end = start + wait
        self.wait(
            lambda: time.monotonic() >= end or set(names) <= set(poses.since(start, stamp_ns=stamp_ns)),
            timeout=wait + 60.0,  # (never reached: the condition holds from ``end`` on)
            what='the object poses',
            notified=False,
        )
        return poses.since(start, stamp_ns=stamp_ns)

    def _report_problems(self, name: str, check: LayoutCheck, picture: Path) -> None:
        tolerance = f'{check.tolerances.position_mm:g} mm, {check.tolerances.rotation_deg:g}°'
        lines = [f'{name}: the layout is off (tolerance {tolerance}); the trial waits:']
        lines += [f'  {failure}' for failure in check.failures]
        lines += [
            f'picture with what was measured: {picture}',
            f'fix it, then press Enter here or call {self.name(topics.READY)} to check again; or start the trial as it '
            f'is with "{OVERRIDE_WORD} <why>" typed here or {self.name(topics.OVERRIDE_LAYOUT)} (robofollow operator '
            f"override; recorded in the trial's record)",
        ]
        self.say('\n'.join(lines))
        self.node.get_logger().warning(f'{name}: {check.summary()}')

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
