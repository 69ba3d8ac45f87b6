"""``evaluator`` node: runs an evaluation suite over the graph and writes ``results.jsonl`` and ``run.json``.

For each trial not yet in the results file: publish the ``EpisodeSpec``, reset the sim, send the instruction,
wait for the bridge's end of the episode, collect the referee's result (handshake: ``ros/protocol.py``); the
next trial starts as soon as the bridge is done, while the referee scores the last one (``GraphTrials``).
Planning, resuming, the results file, progress and ``run.json`` are the in-process suite's own (``run_suite``
with ``GraphTrials``). Exits when the suite is done, so the launcher shuts the graph down.

With ``workers: N`` the process drives N graphs, graph ``i`` in ROS domain ``ROS_DOMAIN_ID + i``
(``graph/domains.py``): one rclpy context and one ``EvaluatorNode`` per domain, one trial queue for all. A graph
whose policy bridge, referee or sim leaves mid-run is dropped and its trial in flight goes back to the queue.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rclpy
from rclpy.client import Client
from rclpy.context import Context
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.executors import Executor
from rclpy.experimental import EventsExecutor
from rclpy.node import Node
from std_msgs.msg import String

from robofollow_ros import topics
from robofollow_ros.errors import GraphError, GraphLostError, RoboFollowError
from robofollow_ros.evaluation.episode_files import EPISODES_DIR, episode_stem
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.options import SuiteOptions
from robofollow_ros.evaluation.status import amend_status
from robofollow_ros.evaluation.suite import RunInterrupted, plan_trials, run_suite
from robofollow_ros.graph.domains import base_domain, graph_domains
from robofollow_ros.graph.suite_parameters import SUITE_MINIMUMS, SUITE_PARAMETERS, suite_options
from robofollow_ros.graph.supervisor import STOP_REASON_VARIABLE
from robofollow_ros.policy.factory import resolve_policy
from robofollow_ros.policy.isolation.sandbox import protect_this_process
from robofollow_ros.realcell.operator import (
    LAYOUT_TIMEOUT_SECONDS,
    POSE_WAIT_SECONDS,
    RECHECK_SECONDS,
    RUNTIMES,
    CellOperator,
    CellSettings,
    LayoutGate,
)
from robofollow_ros.ros import qos
from robofollow_ros.ros.graph_trials import GraphTrials, remove_orphaned_partials
from robofollow_ros.ros.protocol import (
    EpisodeEnd,
    EpisodeEndMessage,
    EpisodeSpecMessage,
    ResetCode,
    ResetEpisode,
    ResultMessage,
    record_from_result,
    spec_message,
)
from robofollow_ros.ros.runtime import (
    MIN_TIMEOUT,
    param,
    publish_acknowledged,
    read_report,
    remember,
    spin,
    wait_for,
)
from robofollow_ros.ros.shutdown import STOP, die_with_parent, ignore_further_stops
from robofollow_ros.state_layout import CAMERAS
from robofollow_ros.tracking.layout_check import DEFAULT_TOLERANCES, Tolerances

RESET_ATTEMPT_SECONDS = 15.0
"""How long one call of the reset service may stay unanswered before it is made again."""
SPEC_DELIVERY_SECONDS = 5.0
"""How long an episode's spec waits for its readers' acknowledgement before the episode goes on without it (the
next spec would replace one still undelivered, and the referee would drop that episode's end as unknown)."""
LOSS_CHECK_SECONDS = 0.05
"""How often a wait looks whether its graph is still there (several graphs only)."""
RESET_DISCOVERY_SECONDS = 3.0
"""How long a real cell's evaluator gives discovery to find a cell reset service (fake hardware started on its own)
before its trials go to the operator; a real cell has none and starts this much later."""


class EvaluatorNode(Node):
    """Publishes episodes, calls the reset service and collects results, for the graph of one ROS domain.

    Args:
        context: the rclpy context of the domain (default: the global one, whose node reads the parameters).
        settings: the node that read the parameters (for the nodes of the other domains).
        domain: this node's domain (only with ``settings``).
    """

    options: SuiteOptions
    progress: bool
    domains: list[int]
    domain: int
    timeout: float
    startup_timeout: float
    cell_settings: CellSettings | None

    def __init__(
        self, *, context: Context | None = None, settings: EvaluatorNode | None = None, domain: int | None = None
    ) -> None:
        # The other domains' contexts have no command line: their nodes take the namespace of the first.
        namespace = None if settings is None else settings.get_namespace()
        super().__init__('evaluator', context=context, enable_rosout=settings is None, namespace=namespace)
        self.results: dict[str, tuple[dict[str, Any], float]] = {}
        self.ended: dict[str, bool] = {}
        self.recorded: dict[str, bool] = {}
        self.condition = threading.Condition()
        self.ready = False
        self.stopping = False
        if settings is not None:
            self.options, self.progress, self.domains = settings.options, settings.progress, settings.domains
            self.timeout, self.startup_timeout = settings.timeout, settings.startup_timeout
            self.cell_settings = settings.cell_settings
            self.domain = int(domain if domain is not None else settings.domain)
        else:
            self._read_parameters()
        self.where = f' in ROS domain {self.domain}' if len(self.domains) > 1 else ''
        # A match of these endpoints wakes the waits for the graph (wait_for_graph) at once.
        self.episode_pub = self.create_publisher(
            EpisodeSpecMessage, topics.EPISODE, qos.LATCHED, event_callbacks=self._wake_on_match()
        )
        self.instruction_pub = self.create_publisher(
            String, topics.INSTRUCTION, qos.COMMANDS, event_callbacks=self._wake_on_match()
        )
        self.reset_client: Client[ResetEpisode.Request, ResetEpisode.Response] = self.create_client(
            ResetEpisode, topics.SIM_RESET
        )
        self.create_subscription(
            ResultMessage,
            topics.RESULT,
            self.on_result,
            qos.EVENTS,
            event_callbacks=SubscriptionEventCallbacks(matched=lambda _: self._notify()),
        )
        self.create_subscription(EpisodeEndMessage, topics.EPISODE_END, self.on_end, qos.EVENTS)
        self.cell: CellOperator | None = None
        if self.cell_settings is not None:
            self.cell = CellOperator(
                self,
                settings=self.cell_settings,
                out=self.options.out,
                condition=self.condition,
                wait=self._wait,
                terminal=sys.stdin if sys.stdin is not None and sys.stdin.isatty() else None,
            )
        if self.options.record == 'bag':
            self.create_subscription(String, topics.RECORDED, self.on_recorded, qos.EVENTS)

    def _read_parameters(self) -> None:
        self.options = suite_options(
            {
                name: param(
                    self,
                    name,
                    default,
                    description=f'suite option {name} (as robofollow eval)',
                    minimum=SUITE_MINIMUMS.get(name),
                )
                for name, default in SUITE_PARAMETERS.items()
            }
        )
        self.timeout = float(
            param(self, 'timeout', 600.0, description='seconds one trial may take over the graph', minimum=MIN_TIMEOUT)
        )
        self.startup_timeout = float(
            param(
                self,
                'startup_timeout',
                60.0,
                description='seconds to wait for every node to be there',
                minimum=MIN_TIMEOUT,
            )
        )
        self.progress = bool(param(self, 'progress', True, description='show the progress display'))
        self.domain = base_domain()
        self.domains = graph_domains(self.domain, self.options.workers)
        self.cell_settings = self._read_cell_parameters()

    def _read_cell_parameters(self) -> CellSettings | None:
        """The real cell this evaluator drives (``runtime: real``), or None in the simulated graph."""
        runtime = str(param(self, 'runtime', 'sim', description='sim (the simulated graph) or real (a real cell)'))
        profile = str(param(self, 'robot_profile', '', description='real cell: its robot profile (config/robots)'))
        pose_source = str(param(self, 'pose_source', 'sim', description='real cell: sim, tracker or mocap'))
        fake = bool(param(self, 'fake_hardware', False, description='real cell: fake hardware resets the cell'))
        layout = self._read_layout_gate()  # (declared in the simulated graph too, as the cell's other parameters)
        if runtime not in RUNTIMES:
            raise GraphError(f'runtime must be one of {", ".join(RUNTIMES)} (got {runtime!r})')
        if runtime == 'sim':
            return None
        if not profile:
            raise GraphError('runtime real needs the robot_profile parameter')
        if len(self.domains) > 1:
            raise GraphError('runtime real drives one cell: workers must be 1')
        return CellSettings(robot_profile=profile, pose_source=pose_source, fake_hardware=fake, layout=layout)

    def _read_layout_gate(self) -> LayoutGate:
        """The layout check's parameters (used on a real cell)."""
        enabled = bool(param(self, 'layout_check', True, description='real cell: check the layout before each trial'))
        position = float(
            param(
                self,
                'layout_position_mm',
                DEFAULT_TOLERANCES.position_mm,
                description='layout check: how far (mm) an object may be from its place',
                minimum=0.001,
            )
        )
        rotation = float(
            param(
                self,
                'layout_rotation_deg',
                DEFAULT_TOLERANCES.rotation_deg,
                description='layout check: how far (degrees, modulo its symmetry) an object may be turned',
                minimum=0.001,
            )
        )
        pose_wait = float(
            param(
                self,
                'layout_pose_wait',
                POSE_WAIT_SECONDS,
                description='layout check: seconds to wait for a fresh pose of every object (then: not seen)',
                minimum=0.05,
            )
        )
        recheck = float(
            param(
                self,
                'layout_recheck',
                RECHECK_SECONDS,
                description='layout check: seconds between checks of a held trial made without the operator',
                minimum=0.05,
            )
        )
        timeout = float(
            param(
                self,
                'layout_timeout',
                LAYOUT_TIMEOUT_SECONDS,
                description='layout check: seconds a trial may be held before the run stops (0: for ever)',
                minimum=0.0,
            )
        )
        tolerances = Tolerances(position_mm=position, rotation_deg=rotation)
        return LayoutGate(enabled=enabled, tolerances=tolerances, pose_wait=pose_wait, recheck=recheck, timeout=timeout)

    def on_result(self, message: ResultMessage) -> None:
        record = read_report(self, record_from_result, message, topic=topics.RESULT)
        if record is None:
            return
        with self.condition:
            self.results[message.episode_id] = (record, time.perf_counter())
            self.condition.notify_all()

    def on_end(self, message: EpisodeEndMessage) -> None:
        end = read_report(self, EpisodeEnd.from_message, message, topic=topics.EPISODE_END)
        if end is None:
            return
        with self.condition:
            remember(self.ended, end.episode_id, True)
            self.condition.notify_all()

    def on_recorded(self, message: String) -> None:
        with self.condition:
            remember(self.recorded, message.data, True)
            self.condition.notify_all()

    def _wake_on_match(self) -> PublisherEventCallbacks:
        return PublisherEventCallbacks(matched=lambda _: self._notify())

    def _notify(self) -> None:
        with self.condition:
            self.condition.notify_all()

    def lost(self) -> str | None:
        """Why this node's graph is gone (only watched with several graphs, once the graph was complete)."""
        if self.stopping:
            return 'the run stopped'
        if not self.ready or len(self.domains) == 1:
            return None
        if self.instruction_pub.get_subscription_count() == 0:
            return 'its policy bridge left'
        if self.count_publishers(topics.RESULT) == 0:
            return 'its referee left'
        if not self.reset_client.service_is_ready():
            return 'its sim left'
        return None

    def _wait(self, condition: Callable[[], bool], *, timeout: float, what: str, notified: bool = False) -> None:
        """Wait for ``condition`` (with ``notified``: looked at when ``self.condition`` is notified, which the
        result, end and reset callbacks do) while watching that the graph is still there."""
        next_check = 0.0

        def done() -> bool:
            nonlocal next_check
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + LOSS_CHECK_SECONDS
                reason = self.lost()
                if reason is not None:
                    raise GraphLostError(f'the graph in ROS domain {self.domain} is gone ({reason})')
            return condition()

        wait_for(
            done,
            timeout=timeout,
            what=f'{what}{self.where}',
            context=self.context,
            poll=LOSS_CHECK_SECONDS if notified else 0.005,
            notified_by=self.condition if notified else None,
        )

    def wait_for_graph(self) -> None:
        """Block until the sim's reset service, the bridge and the referee are there (on a real cell: what
        ``wait_for_cell`` waits for).

        The waits on this node's own endpoints wake up when those match (their matched events); the service and
        the other nodes' readers are seen in the graph, looked at every ``LOSS_CHECK_SECONDS`` (rclpy has no
        graph-change callback). Nothing waits beyond that: the sim sends an episode's first frame once the readers
        it knows of have matched its writers (``nodes/sim.py``).
        """
        if self.cell is not None:
            self.wait_for_cell(self.cell)
            return
        self._wait(
            self.reset_client.service_is_ready,
            timeout=self.startup_timeout,
            what=f'the {self.resolve_service_name(topics.SIM_RESET)} service',
            notified=True,
        )
        self._wait(
            lambda: self.instruction_pub.get_subscription_count() > 0,
            timeout=self.startup_timeout,
            what=f'a policy bridge on {self.resolve_topic_name(topics.INSTRUCTION)}',
            notified=True,
        )
        self._wait(
            lambda: self.count_publishers(topics.RESULT) > 0,
            timeout=self.startup_timeout,
            what='a referee',
            notified=True,
        )
        listeners = 2 + (self.options.record == 'bag')  # the sim has the episode in the reset request
        self._wait(
            lambda: self.episode_pub.get_subscription_count() >= listeners,
            timeout=self.startup_timeout,
            what=f'the bridge, referee{" and recorder" if listeners > 2 else ""} on '
            f'{self.resolve_topic_name(topics.EPISODE)}',
            notified=True,
        )
        recording = int(self.options.record == 'bag')
        factory = resolve_policy(
            self.options.policy, trusted=self.options.trusted_policy, python=self.options.policy_python
        )
        pose_readers = 1 + recording + int(factory.privileged)
        expected = {topics.JOINT_STATES: 2 + recording}
        expected.update(dict.fromkeys(topics.pose_topics(), pose_readers))
        if recording:
            expected[topics.SCENE_MARKERS] = 1  # the sim publishes markers only to a matched reader
        if isinstance(factory.factory, type) and getattr(factory.factory, 'needs_images', True):
            expected.update({topics.image_topic(camera): 1 for camera in CAMERAS})
        self._wait(
            lambda: all(self.count_subscribers(topic) >= count for topic, count in expected.items()),
            timeout=self.startup_timeout,
            what='the readers of every joint-state and pose topic',
            notified=True,
        )
        self.ready = True

    def reset(
        self,
        spec: EpisodeSpec,
        *,
        deadline: float,
        client: Client[ResetEpisode.Request, ResetEpisode.Response] | None = None,
    ) -> None:
        """Call the reset service (the sim's, or ``client``: fake hardware's) until it has reset to ``spec``.

        A call unanswered after ``RESET_ATTEMPT_SECONDS`` is abandoned and made again: Fast DDS drops a response
        whose reader the service has not matched yet ("failed to send response"), and resetting twice to the
        same episode is harmless (every node follows the latest reset of an episode).
        """
        client = client or self.reset_client
        who = 'the sim' if client is self.reset_client else 'fake hardware'
        while True:
            future = client.call_async(ResetEpisode.Request(episode=spec_message(spec)))
            future.add_done_callback(lambda _: self._notify())
            attempt_end = min(deadline, time.monotonic() + RESET_ATTEMPT_SECONDS)
            try:
                self._wait(
                    future.done,
                    timeout=max(0.0, attempt_end - time.monotonic()),
                    what=client.srv_name,
                    notified=True,
                )
            except GraphLostError:
                client.remove_pending_request(future)
                raise
            except GraphError:
                client.remove_pending_request(future)
                if time.monotonic() >= deadline or not self.context.ok():
                    raise
                self.get_logger().warning(
                    f'{client.srv_name}{self.where} unanswered for {RESET_ATTEMPT_SECONDS:g} s: calling again'
                )
                continue
            response = future.result()
            if response is None or response.episode_id != spec.episode_id:
                if time.monotonic() > deadline:
                    raise GraphError(f'{who}{self.where} did not reset to {spec.task_id} in time')
                continue  # the answer to an abandoned call
            if response.code == ResetCode.OK:
                return
            code = {int(c): c.name for c in ResetCode}.get(response.code, str(response.code))
            raise GraphError(f'{who}{self.where} could not reset to {spec.task_id} ({code}): {response.message}')

    def start_episode(self, spec: EpisodeSpec, *, deadline: float) -> None:
        """Publish ``spec``, reset the sim to it and send the instruction: the bridge starts the episode (on a
        real cell the cell is reset already, ``prepare_episode``: the RESET status starts it)."""
        if not publish_acknowledged(
            self.episode_pub, spec_message(spec), timeout=SPEC_DELIVERY_SECONDS, context=self.context
        ):
            self.get_logger().warning(
                f'{spec.task_id}: not every reader of {topics.EPISODE}{self.where} acknowledged its spec in '
                f'{SPEC_DELIVERY_SECONDS:g} s'
            )
        if self.cell is None:
            self.reset(spec, deadline=deadline)
        else:
            self.cell.start(spec)
        self.instruction_pub.publish(String(data=spec.instruction))

    def wait_for_cell(self, cell: CellOperator) -> None:
        """Block until the bridge, the referee (and the recorder) are there, and fake hardware's reset service
        when the cell is fake hardware."""
        if cell.settings.fake_hardware:
            what = f'the {topics.CELL_RESET} service'
            self._wait(cell.reset_client.service_is_ready, timeout=self.startup_timeout, what=what)
        else:
            # Fake hardware started on its own serves the reset as well: a reset service not yet discovered when the
            # first trial starts sent that trial to the operator, and an unattended run waited for ever.
            with contextlib.suppress(GraphError):
                self._wait(cell.reset_client.service_is_ready, timeout=RESET_DISCOVERY_SECONDS, what='a cell reset')
        self._wait(
            lambda: self.instruction_pub.get_subscription_count() > 0,
            timeout=self.startup_timeout,
            what=f'a policy bridge on {topics.INSTRUCTION}',
        )
        self._wait(lambda: self.count_publishers(topics.RESULT) > 0, timeout=self.startup_timeout, what='a referee')
        listeners = 2 + (self.options.record == 'bag')
        self._wait(
            lambda: (
                self.episode_pub.get_subscription_count() >= listeners
                and cell.status_pub.get_subscription_count() >= listeners
            ),
            timeout=self.startup_timeout,
            what=f'the bridge, referee{" and recorder" if listeners > 2 else ""} on {topics.EPISODE}',
        )
        self.ready = True

    def prepare_episode(self, spec: EpisodeSpec) -> dict[str, Any] | None:
        """On a real cell, bring it to the trial's start: announce its layout, arms home, then fake hardware's reset
        or the operator, then the layout check (``realcell/operator.py``), whose result the trial's record gains
        (returned); nothing in the simulated graph (the sim resets in ``start_episode``)."""
        if self.cell is None:
            return None
        self.cell.announce(spec)
        self.cell.home(spec)
        if self.cell.reset_client.service_is_ready():
            self.reset(spec, deadline=time.monotonic() + self.timeout, client=self.cell.reset_client)
        else:
            self.cell.ask_operator(spec)
        return self.cell.check_layout(spec)

    def void_reason(self, spec: EpisodeSpec) -> str | None:
        """Why the trial of ``spec`` is void (the operator voided it on a real cell), or None."""
        return None if self.cell is None else self.cell.void_reason(spec)

    def wait_for_end(self, spec: EpisodeSpec, *, deadline: float) -> None:
        """Block until the bridge has ended the episode of ``spec`` (the sim is free for the next reset)."""
        self._wait(
            lambda: spec.episode_id in self.ended,
            timeout=max(0.0, deadline - time.monotonic()),
            what=f'the end of {spec.task_id}',
            notified=True,
        )

    def wait_for_bag(self, spec: EpisodeSpec, *, timeout: float) -> bool:
        """Whether the recorder announced the bag of ``spec`` as published (``/robofollow/recorded``) within
        ``timeout`` seconds."""
        try:
            self._wait(
                lambda: spec.episode_id in self.recorded,
                timeout=timeout,
                what=f'the bag of {spec.task_id}',
                notified=True,
            )
        except GraphError:  # lost too: the result is in, so the trial counts; its bag may stay hidden
            return False
        with self.condition:
            self.recorded.pop(spec.episode_id, None)
        return True

    def wait_for_result(self, spec: EpisodeSpec, *, deadline: float) -> tuple[dict[str, Any], float]:
        """The referee's result record of ``spec`` and when it arrived (``time.perf_counter``)."""
        self._wait(
            lambda: spec.episode_id in self.results,
            timeout=max(0.0, deadline - time.monotonic()),
            what=f'the result of {spec.task_id}',
            notified=True,
        )
        with self.condition:
            self.ended.pop(spec.episode_id, None)
            return self.results.pop(spec.episode_id)


def main(args: list[str] | None = None) -> int:
    """Run the suite over the graph (or the graphs); exit 0 when it is complete, 2 on an error, 130/143 when
    interrupted (SIGINT/SIGTERM, or SIGTERM because the launcher died). Not dumpable: no process of the same user
    reads or traces it."""
    protect_this_process()
    run = _SuiteRun()
    signal.signal(signal.SIGINT, run.on_signal)
    signal.signal(signal.SIGTERM, run.on_signal)
    die_with_parent()
    rclpy.init(args=args, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    links: list[EvaluatorNode] = []
    try:
        links.append(EvaluatorNode())
        for domain in links[0].domains[1:]:
            context = Context()
            rclpy.init(context=context, domain_id=domain, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
            links.append(EvaluatorNode(context=context, settings=links[0], domain=domain))
    except (RoboFollowError, ValueError) as error:
        print(f'error: {error}', file=sys.stderr)
        _shut_down(links)
        return 2
    except KeyboardInterrupt as stop:
        _shut_down(links)
        return _interrupted_code(stop)
    executors = [EventsExecutor(context=link.context) for link in links]
    spinners = []
    for link, executor in zip(links, executors, strict=True):
        executor.add_node(link)
        spinners.append(threading.Thread(target=spin, args=(executor,), daemon=True))
        spinners[-1].start()
    try:
        return run.suite(links)
    finally:
        _close(links, executors, spinners)


def _interrupted_code(stop: KeyboardInterrupt) -> int:
    return 143 if str(stop) == 'SIGTERM' else 130


class _SuiteRun:
    """The suite over the linked graphs, and what a signal does before and while it runs."""

    def __init__(self) -> None:
        self.started = False

    def on_signal(self, number: int, _frame: object) -> None:
        # Before the suite runs, a signal stops the start-up; once it runs, the suite's own handlers turn it into
        # run.json's "interrupted", and a repeated signal (a launcher forwards the one the terminal already sent)
        # must not break the writing of run.json or the shutdown that follow.
        if self.started:
            return  # (setting STOP here would end the graph threads' waits as failures, not as a stop)
        name = signal.Signals(number).name
        first = not STOP.is_set()
        STOP.set(name)
        if first:
            raise RunInterrupted(name)

    def suite(self, links: list[EvaluatorNode]) -> int:
        """Run the suite once every graph is there; the exit code."""
        node = links[0]
        try:
            for link in links:
                link.wait_for_graph()
            cell = node.cell_settings
            trials = GraphTrials(links, cell=None if cell is None else cell.identity_fields())
            self.started = True
            records = run_suite(node.options, progress=node.progress, executor=trials)
            _report(node, links, trials, records)
        except RoboFollowError as error:
            if STOP.is_set() and isinstance(error, GraphError) and not self.started:
                return 143 if STOP.name == 'SIGTERM' else 130  # a wait for the graph ended by the stop
            print(f'error: {error}', file=sys.stderr)
            return 2
        except KeyboardInterrupt as stop:
            for link in links:
                if link.cell is not None and self.started:
                    link.cell.stop_arms()
            reason = _stop_reason()
            if reason is not None and self.started:
                amend_status(node.options.out, status='failed', reason=reason)
            return _interrupted_code(stop)
        return 0


def _report(node: EvaluatorNode, links: list[EvaluatorNode], trials: GraphTrials, records: list[dict]) -> None:
    """Log the run's outcome (and, over several graphs, the trials each ran); drop partial bags no trial owns."""
    if node.options.record == 'bag' and len(links) > 1:
        stems = {episode_stem(trial.task.task_id, trial.round) for trial in plan_trials(node.options)}
        remove_orphaned_partials(node.options.out / EPISODES_DIR, stems=stems)
    completed = sum(bool(record.get('completion_ok')) for record in records)
    node.get_logger().info(f'{len(records)} trials in {node.options.out}; completed {completed}/{len(records)}')
    if len(links) > 1:
        counts = ', '.join(f'{domain}: {trials.ran[domain]}' for domain in node.domains)
        node.get_logger().info(f'trials run per ROS domain (this run): {counts}')


def _close(links: list[EvaluatorNode], executors: list[Executor], spinners: list[threading.Thread]) -> None:
    """Every way out: no more stops, the cells closed (the terminal as it was), the spinners joined, then the
    contexts, executors and nodes shut down."""
    ignore_further_stops()
    STOP.set(STOP.name or 'exit')
    for link in links:
        if link.cell is not None:
            link.cell.close()  # the terminal as it was (read key by key for the stop key)
    # The spinners see STOP between waits and return; shutting a context down while one waits on it can raise
    # in that thread (a traceback in the launch output of a SIGTERM mid-trial, once under load).
    for spinner in spinners:
        spinner.join(timeout=5.0)
    _shut_down(links)
    for executor in executors:
        executor.shutdown(timeout_sec=1.0)
    for link in links:
        link.destroy_node()


def _stop_reason() -> str | None:
    """Why ``robofollow launch`` stopped the graph, when a required node died: it writes that into the file named
    by ``STOP_REASON_VARIABLE`` before it signals the evaluator, so run.json says ``failed`` with that reason."""
    path = os.environ.get(STOP_REASON_VARIABLE)
    if not path:
        return None
    try:
        return Path(path).read_text(encoding='utf-8').strip() or None
    except OSError:
        return None


def _shut_down(links: list[EvaluatorNode]) -> None:
    for link in links:
        link.stopping = True
        rclpy.try_shutdown(context=link.context)
    rclpy.try_shutdown()


if __name__ == '__main__':
    raise SystemExit(main())
