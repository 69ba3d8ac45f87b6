"""``robofollow eval --workers N``: N simulator processes on this machine, fed one trial at a time.

Each worker process (started with the ``spawn`` method, so it shares no state with this one) holds its own
``TrialRunner`` and answers every trial it is sent with the trial's result; this process hands trials out
from a ``TrialQueue`` and writes everything. A worker that dies mid-trial is replaced and its trial goes back
to the front of the queue, so nothing is lost and nothing is recorded twice. Workers ignore Ctrl-C; the
parent stops them (a stopped run resumes like a one-process run), and a worker whose parent is gone exits
when its pipe closes. Each worker runs in its own session: where the kernel shares the CPU between sessions
(autogroup scheduling), N workers then get the share of N programs, not of one, as Ray's workers do.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Generator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from robofollow_ros.errors import RoboFollowError
from robofollow_ros.evaluation.dispatch import Binding, TrialQueue, new_binding, run_pool
from robofollow_ros.evaluation.identity import RunIdentity
from robofollow_ros.evaluation.options import SuiteOptions
from robofollow_ros.evaluation.records import Trial
from robofollow_ros.evaluation.runner import TrialResult, TrialRunner

STOP_GRACE = 5.0
"""Seconds an idle worker gets to close its simulator and policy before it is terminated."""


def serve_trials(
    connection: Connection, options: SuiteOptions, identity: RunIdentity, policy_kwargs: dict[str, Any] | None
) -> None:
    """A worker process: run every trial received on ``connection`` and send its result back."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setsid()
    try:
        with TrialRunner(options, identity=identity, policy_kwargs=policy_kwargs) as runner:
            while (trial := connection.recv()) is not None:
                connection.send(('result', runner.run(trial)))
    except EOFError:
        return
    except Exception as error:  # the parent re-raises it: a one-process run would have stopped the same way
        send_failure(connection, error)


def send_failure(connection: Connection, error: BaseException) -> None:
    """Tell a worker's parent ``error`` (``('error', exception)``), as a ``RoboFollowError`` naming it when the
    exception itself does not pickle."""
    try:
        connection.send(('error', error))
    except Exception:
        connection.send(('error', RoboFollowError(f'{type(error).__name__}: {error}')))


class _Worker:
    def __init__(
        self, context: Any, *, number: int, options: SuiteOptions, identity: RunIdentity, binding: Binding
    ) -> None:
        self.connection, child = context.Pipe()
        self.binding = binding
        self.trial: Trial | None = None
        self.process = context.Process(
            target=serve_trials,
            args=(child, options, identity, binding.policy_kwargs),
            name=f'robofollow-worker-{number}',
            daemon=True,
        )
        self.process.start()
        child.close()

    def hand(self, trial: Trial) -> bool:
        self.trial = trial
        try:
            self.connection.send(trial)
        except OSError:
            return False
        return True

    def receive(self) -> tuple[str, Any] | None:
        try:
            return self.connection.recv() if self.connection.poll() else None
        except (EOFError, OSError):
            return None

    def stop(self, *, busy_too: bool) -> None:
        if self.trial is None or not busy_too:
            with contextlib.suppress(OSError):
                self.connection.send(None)
        else:
            self.process.terminate()

    def reap(self) -> None:
        self.process.join(STOP_GRACE)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(STOP_GRACE)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()


class LocalWorkers:
    """Runs trials on ``options.workers`` worker processes of this machine.

    Attributes:
        problems: what went wrong while stopping (reported as warnings by the caller).
        replaced: how many workers died and were replaced during ``results``.
    """

    def __init__(self, options: SuiteOptions, *, identity: RunIdentity) -> None:
        self.options = options
        self.identity = identity
        self.context = multiprocessing.get_context('spawn')
        self.problems: list[str] = []
        self.replaced = 0
        self.pids: list[int] = []
        self._started = 0

    def _start(self, binding: Binding) -> _Worker:
        self._started += 1
        worker = _Worker(
            self.context, number=self._started, options=self.options, identity=self.identity, binding=binding
        )
        self.pids.append(int(worker.process.pid or 0))
        return worker

    def results(self, todo: Sequence[Trial]) -> Generator[TrialResult, None, None]:
        """Each trial's result as soon as a worker finishes it (in any order)."""
        queue = TrialQueue(todo)
        pool = run_pool(self.options)
        workers: list[_Worker] = []
        interrupted = True
        try:
            for _ in range(min(self.options.workers, len(todo))):
                workers.append(self._start(new_binding(self.options, pool)))
            while True:
                for worker in workers:
                    if worker.trial is None and queue and not worker.hand(queue.take()):
                        self._lost(worker, workers, queue, pool)
                busy = [worker for worker in workers if worker.trial is not None]
                if not busy:
                    break
                ready = set(wait([w.connection for w in busy] + [w.process.sentinel for w in busy]))
                for worker in busy:
                    if worker.connection not in ready and worker.process.sentinel not in ready:
                        continue
                    message = worker.receive()
                    if message is None:
                        if not worker.process.is_alive() or worker.connection.closed:
                            self._lost(worker, workers, queue, pool)
                        continue
                    kind, payload = message
                    if kind == 'error':
                        raise payload
                    trial, worker.trial = worker.trial, None
                    endpoint = worker.binding.endpoint
                    if pool is not None and endpoint is not None and pool.lost(endpoint, payload.record):
                        assert trial is not None
                        queue.put_back(trial, reason=f'policy server {endpoint} is down', lost_simulator=False)
                        self._retire(worker, workers, pool)
                        continue
                    yield payload
            interrupted = False
        finally:
            for worker in workers:
                worker.stop(busy_too=interrupted)
            for worker in workers:
                worker.reap()

    def _lost(self, worker: _Worker, workers: list[_Worker], queue: TrialQueue, pool: Any) -> None:
        trial = worker.trial
        worker.trial = None
        worker.process.join(STOP_GRACE)
        self.replaced += 1
        if trial is not None:
            queue.put_back(trial, reason=f'worker process exited with code {worker.process.exitcode}')
        self._retire(worker, workers, pool)

    def _retire(self, worker: _Worker, workers: list[_Worker], pool: Any) -> None:
        worker.stop(busy_too=True)
        worker.reap()
        workers[workers.index(worker)] = self._start(new_binding(self.options, pool))
