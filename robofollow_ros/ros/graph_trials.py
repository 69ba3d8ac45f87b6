"""``GraphTrials``: ``run_suite``'s executor for the ``ros-graph`` runtime, over one graph or several.

Each graph (one ``EvaluatorNode`` per ROS domain) gets a thread that takes trials from one ``TrialQueue``,
publishes, resets and instructs each, and hands the finished record to ``run_suite`` (the one writer) through a
queue. A graph runs two trials at once, one step apart: once the bridge has ended an episode, the next one is reset
and started while the referee scores the last (and the recorder closes its bag), and only then is the last one's
result collected. A graph that is lost mid-trial (``GraphLostError``) puts its trials back, first in line, and stops
taking trials; the others run them. A graph with nothing to take waits while another is busy, since that one's trial
may come back. When every graph is lost with trials left, the run stops with ``WorkerLostError``.

On a real cell (``runtime: real``) the evaluator prepares the cell before each trial (``prepare_episode``: home, the
fake hardware's reset or the operator placing the objects, then the layout check, whose result the trial's record
keeps), so the last trial's result is collected after the next one is prepared: a trial the operator voids during
or right after it (``void_reason``), that the bridge's stop ended (``error_kind`` ``stopped``), or that could not start
without an object's pose (``pose_missing``: never run blind) is written marked void (``referee.aggregate.is_void``)
and queued again, first in line.
"""

from __future__ import annotations

import queue
import shutil
import threading
import time
from collections import Counter
from collections.abc import Collection, Generator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from robofollow_ros.benchmark import registry
from robofollow_ros.errors import GraphLostError, WorkerLostError
from robofollow_ros.evaluation.dispatch import TrialQueue
from robofollow_ros.evaluation.episode_files import EPISODES_DIR, episode_stem
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.identity import RunIdentity
from robofollow_ros.evaluation.leftovers import process_gone
from robofollow_ros.evaluation.options import SuiteOptions
from robofollow_ros.evaluation.records import Trial, bookkeeping
from robofollow_ros.evaluation.runner import TrialResult
from robofollow_ros.referee.aggregate import VOID_FIELD, is_void
from robofollow_ros.textfiles import partial_owner


class GraphLink(Protocol):
    """What a graph's trial thread uses of the evaluator node linked to it (``nodes.evaluator.EvaluatorNode``)."""

    domain: int
    timeout: float
    stopping: bool

    def prepare_episode(self, spec: EpisodeSpec) -> Mapping[str, Any] | None: ...

    def start_episode(self, spec: EpisodeSpec, *, deadline: float) -> None: ...

    def void_reason(self, spec: EpisodeSpec) -> str | None: ...

    def wait_for_end(self, spec: EpisodeSpec, *, deadline: float) -> None: ...

    def wait_for_result(self, spec: EpisodeSpec, *, deadline: float) -> tuple[dict[str, Any], float]: ...

    def wait_for_bag(self, spec: EpisodeSpec, *, timeout: float) -> bool: ...

    def get_logger(self) -> Any: ...


LIVE_ONLY = ('episode_id', 'end_stamp_ns', 'policy_error', 'error_kind', 'queries', 'executed_rows')
STOPPED = 'stopped'
"""``error_kind`` of an episode ended by ``/robofollow/stop``: void, like one the operator voided."""
POSE_MISSING = 'pose_missing'
"""``error_kind`` of an episode that could not start without an object's pose: void (played again), not scored."""


def void_kind_reason(error_kind: str | None, policy_error: str | None) -> str | None:
    """The void reason of an episode whose end makes it void by itself (a stop; a pose that never came), or None."""
    if error_kind == STOPPED:
        return STOPPED
    if error_kind == POSE_MISSING:
        return policy_error or POSE_MISSING
    return None


POLL_SECONDS = 0.1
JOIN_SECONDS = 5.0
BAG_WAIT_SECONDS = 10.0


class GraphTrials:
    """Runs the suite's trials over the ROS graphs of ``links`` (one ``EvaluatorNode`` per domain).

    Attributes:
        problems: the graphs lost during the run (reported as warnings by ``run_suite``).
        ran: trials finished per ROS domain.
    """

    def __init__(self, links: Sequence[GraphLink], *, cell: Mapping[str, str] | None = None) -> None:
        """``cell``: on a real (or fake-hardware) cell, its ``robot_profile`` and ``pose_source``; the runtime is
        then ``real``, and the identity and every record name all three."""
        self.links = list(links)
        self.runtime = 'ros-graph' if cell is None else 'real'
        self.identity_fields: Mapping[str, str] = dict(cell or {})
        self.problems: list[str] = []
        self.ran: Counter[int] = Counter()
        self.options: SuiteOptions | None = None
        self.identity: RunIdentity | None = None

    def __call__(self, options: SuiteOptions, *, identity: RunIdentity) -> GraphTrials:
        """Bind the run (``run_suite`` calls this once, like it builds any executor)."""
        self.options, self.identity = options, identity
        return self

    def start_trial(self, link: GraphLink, trial: Trial) -> _InFlight:
        """Prepare the cell for one trial (a real cell: home, reset or the operator), then publish, reset and
        instruct it on ``link``'s graph; its time runs from then."""
        options = self.options
        assert options is not None
        layout = registry.layout_of(trial.task)
        spec = EpisodeSpec.for_trial(
            trial.task, seed=trial.seed, round=trial.round, variant=options.variant, layout=layout.name
        )
        fields = dict(link.prepare_episode(spec) or {})
        flight = _InFlight(trial, spec, time.perf_counter(), time.monotonic() + link.timeout, fields)
        link.start_episode(spec, deadline=flight.deadline)
        return flight

    def finish_trial(self, link: GraphLink, flight: _InFlight) -> TrialResult:
        """Collect the referee's result of a started trial; the record is completed as in-process (on a real
        cell it also names the runtime, profile and pose source, and a trial voided or stopped is marked void)."""
        options, identity = self.options, self.identity
        assert options is not None and identity is not None
        trial = flight.trial
        live, arrival = link.wait_for_result(flight.spec, deadline=flight.deadline)
        record = {key: value for key, value in live.items() if key not in LIVE_ONLY}
        record.update(
            bookkeeping(trial, identity=identity, policy_error=live['policy_error'], error_kind=live['error_kind'])
        )
        record.update(
            {
                'queries': live['queries'],
                'executed_rows': live['executed_rows'],
                'wall_seconds': round(arrival - flight.started, 3),
            }
        )
        if self.identity_fields:
            record.update({'runtime': self.runtime, **self.identity_fields})
        record.update(flight.cell_fields)
        reason = link.void_reason(flight.spec) or void_kind_reason(live['error_kind'], live['policy_error'])
        if reason is not None:
            record.update({VOID_FIELD: True, 'void_reason': reason})
        if options.record == 'bag':
            record['episode_file'] = str(Path(EPISODES_DIR) / episode_stem(trial.task.task_id, trial.round))
            if not link.wait_for_bag(flight.spec, timeout=BAG_WAIT_SECONDS):
                # It closes the bag on the same result: a graph stopped before that would leave it hidden.
                link.get_logger().warning(f'the recorder has not published {options.out / record["episode_file"]} yet')
            if is_void(record):
                record['episode_file'] = _set_void_bag_aside(options.out, record['episode_file'])
        return TrialResult(key=trial.key, record=record)

    def results(self, todo: Sequence[Trial]) -> Generator[TrialResult, None, None]:
        """Each trial's result as soon as a graph finishes it (in any order with several graphs)."""
        dispatch = _Dispatch(TrialQueue(todo))
        finished: queue.Queue[tuple[str, Any]] = queue.Queue()
        threads = [
            threading.Thread(target=self._serve, args=(link, dispatch, finished), daemon=True, name=f'graph-{i}')
            for i, link in enumerate(self.links)
        ]
        for thread in threads:
            thread.start()
        try:
            running = len(threads)
            while running:
                try:
                    kind, payload = finished.get(timeout=POLL_SECONDS)
                except queue.Empty:
                    continue
                if kind == 'result':
                    yield payload
                elif kind == 'lost':
                    self.problems.append(payload)
                elif kind == 'error':
                    raise payload
                else:
                    running -= 1
            if dispatch.trials:
                raise WorkerLostError(
                    f'no graph is left to run the {len(dispatch.trials)} remaining trial(s) '
                    f'({"; ".join(self.problems)}); resume the run once the cause is fixed'
                )
        finally:
            dispatch.stop()
            for link in self.links:
                link.stopping = True
            for thread in threads:
                thread.join(JOIN_SECONDS)

    def _serve(self, link: GraphLink, dispatch: _Dispatch, finished: queue.Queue[tuple[str, Any]]) -> None:
        flights: list[_InFlight] = []  # at most two: the trial whose result is due, and the one the graph runs
        try:
            while True:
                if not flights:
                    dispatch.leave(link)
                trial = dispatch.take(link, wait=not flights)
                if trial is None and not flights:
                    return
                try:
                    if trial is not None:
                        flights.append(self.start_trial(link, trial))
                    if len(flights) == 2 or trial is None:
                        result = self._collect(link, dispatch, flights[0])  # lost: still in flight, given back
                        flights.pop(0)
                        finished.put(('result', result))
                    if trial is not None:
                        link.wait_for_end(flights[-1].spec, deadline=flights[-1].deadline)
                except GraphLostError as error:
                    if not dispatch.stopped:
                        finished.put(('lost', self._give_back(link, dispatch, flights, trial, error)))
                    return
        except BaseException as error:  # run_suite re-raises it in the writing thread
            finished.put(('error', error))
        finally:
            dispatch.leave(link)
            finished.put(('exit', None))

    def _collect(self, link: GraphLink, dispatch: _Dispatch, flight: _InFlight) -> TrialResult:
        """``flight``'s result; a void trial (an operator's stop) goes back in the queue to be run again."""
        result = self.finish_trial(link, flight)
        if is_void(result.record):
            dispatch.replay(flight.trial)
        else:
            self.ran[link.domain] += 1
        return result

    @staticmethod
    def _give_back(
        link: GraphLink, dispatch: _Dispatch, flights: list[_InFlight], trial: Trial | None, error: GraphLostError
    ) -> str:
        """A lost graph's trials (in flight, and the one just taken) back in the queue for another graph; what to
        say about it."""
        lost = [flight.trial for flight in flights]
        if trial is not None and all(trial is not other for other in lost):
            lost.append(trial)
        for other in reversed(lost):
            dispatch.give_back(link, other, reason=str(error))
        names = ', '.join(f'{other.task.task_id} round {other.round}' for other in lost)
        message = f'{error}: back in the queue for another graph: {names}'
        link.get_logger().warning(message)
        return message


@dataclass(frozen=True)
class _InFlight:
    """A trial started on a graph whose result is not collected yet."""

    trial: Trial
    spec: EpisodeSpec
    started: float
    deadline: float
    cell_fields: dict[str, Any]
    """What preparing the cell adds to the trial's record (a real cell's ``layout_check``)."""


class _Dispatch:
    """The trial queue shared by the graph threads, and which graphs are busy."""

    def __init__(self, trials: TrialQueue) -> None:
        self.trials = trials
        self.busy: set[int] = set()
        self.condition = threading.Condition()
        self.stopped = False

    def take(self, link: GraphLink, *, wait: bool = True) -> Trial | None:
        """The next trial for ``link``; with ``wait``, waits while the queue is empty but another graph may give
        one back."""
        with self.condition:
            while wait and not self.trials and self.busy and not self.stopped:
                self.condition.wait(POLL_SECONDS)
            if self.stopped or not self.trials:
                return None
            self.busy.add(id(link))
            return self.trials.take()

    def give_back(self, link: GraphLink, trial: Trial, *, reason: str) -> None:
        """``link``'s graph was lost with ``trial`` in flight (raises ``WorkerLostError`` on its third loss)."""
        with self.condition:
            self.trials.put_back(trial, reason=reason)
            self.condition.notify_all()

    def replay(self, trial: Trial) -> None:
        """Queue a voided ``trial`` again, first in line (not a lost graph: no limit)."""
        with self.condition:
            self.trials.put_back(trial, reason='void', lost_simulator=False)
            self.condition.notify_all()

    def leave(self, link: GraphLink) -> None:
        """``link`` is no longer running a trial."""
        with self.condition:
            self.busy.discard(id(link))
            self.condition.notify_all()

    def stop(self) -> None:
        """Hand out nothing more."""
        with self.condition:
            self.stopped = True
            self.condition.notify_all()


def _set_void_bag_aside(out: Path, episode_file: str) -> str:
    """Rename the bag of a voided trial to ``<stem>.void-<n>`` (the first free ``n``), so that the trial played
    again records under the trial's own name; returns its new ``episode_file``."""
    bag = out / episode_file
    if not bag.exists():
        return episode_file
    number = 1
    while bag.with_name(f'{bag.name}.void-{number}').exists():
        number += 1
    target = bag.with_name(f'{bag.name}.void-{number}')
    bag.rename(target)
    return str(Path(episode_file).with_name(target.name))


def remove_orphaned_partials(folder: Path, *, stems: Collection[str]) -> list[Path]:
    """Remove the hidden bags (``.<stem>.partial-<pid>``) in ``folder`` of the run's own trials (``stems``) whose
    recorder process is gone; returns them.

    Called when a run over several graphs is complete: a graph lost mid-trial had its recorder stopped with that
    trial's bag unfinished (hidden, for ``robofollow score``), and the trial then ran and was recorded on another
    graph, so the hidden copy is nobody's. A bag whose recorder still runs, and anything not named after one of
    the run's trials, is left alone.
    """
    removed = []
    for entry in sorted(folder.iterdir()) if folder.is_dir() else []:
        owner = partial_owner(entry)
        if owner is None or owner[0] not in stems or not process_gone(owner[1]):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed
