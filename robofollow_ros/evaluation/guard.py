"""Calling policy code safely: each policy instance on its own worker thread, every call with a deadline.

A policy is user code. Whatever it does (raises, returns garbage, sleeps forever, calls ``sys.exit``) is
turned into a ``PolicyFailure`` that the episode records, and the run goes on.

A Python thread cannot be killed. A call that misses its deadline is therefore left running on its daemon
thread and the whole instance is abandoned (``GuardedPolicy.abandoned``): the evaluator never calls it again
and builds a fresh instance for the next trial. Ctrl-C and SIGTERM reach the main thread, never the worker,
so they stop the run cleanly however busy the policy is.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.base import needs_images, validate_chunk
from robofollow_ros.policy.factory import PolicyFactory

FailureKind = Literal['build', 'reset', 'set_instruction', 'bind_task', 'predict', 'invalid_chunk', 'timeout', 'close']
DEFAULT_QUERY_TIMEOUT = 300.0
BUILD_TIMEOUT_FACTOR = 10.0
"""Building an instance (loading a checkpoint) may take this many times the per-call deadline."""

T = TypeVar('T')


class PolicyFailure(PolicyError):
    """A call into a policy failed; ``kind`` says where (``build``, ``predict``, ``timeout``...)."""

    def __init__(self, message: str, *, kind: FailureKind) -> None:
        super().__init__(message)
        self.kind: FailureKind = kind


class _Job:
    def __init__(self, function: Callable[[], Any]) -> None:
        self.function = function
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.function()
        except BaseException as error:  # SystemExit / KeyboardInterrupt from policy code are results too
            self.error = error
        self.done.set()


class _Worker:
    """One daemon thread that runs jobs in order, so a policy always sees the same thread."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._last: _Job | None = None
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            job.run()

    def call(self, function: Callable[[], Any], *, timeout: float) -> _Job:
        """Run ``function`` on the worker and return the finished job; ``TimeoutError`` past ``timeout``.

        The job's own exception is returned in ``job.error``, never raised here, so that an exception raised
        in this (main) thread while waiting, such as Ctrl-C, is never mistaken for the policy's.
        """
        job = self._last = _Job(function)
        self._jobs.put(job)
        if not job.done.wait(timeout):
            raise TimeoutError
        return job

    @property
    def busy(self) -> bool:
        """Whether a job is still running (a call that timed out or was interrupted while waiting)."""
        return self._last is not None and not self._last.done.is_set()

    def stop(self) -> None:
        """Let the thread end after its current job."""
        self._jobs.put(None)


class GuardedPolicy:
    """One policy instance, built and called on its own worker thread with a deadline per call.

    Args:
        factory: the resolved policy (its name, privilege and keyword arguments).
        timeout: seconds each ``reset``, ``set_instruction``, ``bind_task`` and ``predict`` may take.

    Raises:
        PolicyFailure: (kind ``build`` or ``timeout``) the factory failed, returned an object without the
            policy interface, or did not return within ``BUILD_TIMEOUT_FACTOR * timeout``.
    """

    def __init__(self, factory: PolicyFactory, *, timeout: float = DEFAULT_QUERY_TIMEOUT) -> None:
        self.name = factory.name
        self.privileged = factory.privileged
        self.timeout = timeout
        self.abandoned = False
        self._worker = _Worker(f'policy {factory.name}')
        self._policy: Any = None
        try:
            self._policy = self._call('build', factory.build, timeout=BUILD_TIMEOUT_FACTOR * timeout)
        except PolicyFailure:
            self._abandon()
            raise
        self.needs_images = needs_images(self._policy)

    @classmethod
    def wrap(
        cls, policy: object, *, privileged: bool, name: str | None = None, timeout: float = DEFAULT_QUERY_TIMEOUT
    ) -> GuardedPolicy:
        """Guard an instance that already exists (tests, benchmarks, an evaluator that builds its own).

        ``privileged`` is the caller's decision; the evaluator grants it only to ``PRIVILEGED_POLICIES``.
        """
        label = name or type(policy).__name__
        return cls(PolicyFactory(name=label, privileged=privileged, factory=lambda: policy), timeout=timeout)

    def _call(self, stage: FailureKind, function: Callable[[], T], *, timeout: float | None = None) -> T:
        if self.abandoned:
            raise PolicyFailure(f'policy {self.name!r} was abandoned after an earlier failure', kind=stage)
        limit = self.timeout if timeout is None else timeout
        try:
            job = self._worker.call(function, timeout=limit)
        except TimeoutError:
            self._abandon()
            raise PolicyFailure(
                f'{stage} did not return within {limit:g} s (instance abandoned; --query-timeout sets the limit)',
                kind='timeout',
            ) from None
        error = job.error
        if error is None:
            return job.result
        if isinstance(error, PolicyError):
            raise PolicyFailure(str(error), kind=stage) from error
        if not isinstance(error, Exception):
            # SystemExit / KeyboardInterrupt raised *by policy code* (real signals go to the main thread).
            self._abandon()
        raise PolicyFailure(f'{stage} raised {type(error).__name__}: {error}', kind=stage) from error

    def _abandon(self) -> None:
        self.abandoned = True
        self._worker.stop()

    def reset(self) -> None:
        """Call the policy's ``reset``."""
        self._call('reset', self._policy.reset)

    def set_instruction(self, text: str) -> None:
        """Call the policy's ``set_instruction``."""
        self._call('set_instruction', lambda: self._policy.set_instruction(text))

    def bind_task(self, task: Any, layout: Any) -> None:
        """Hand a privileged policy the task and layout; a policy that is not privileged gets nothing.

        Raises:
            PolicyError: the policy is not privileged.
        """
        if not self.privileged:
            raise PolicyError(f'policy {self.name!r} is not privileged: it never receives the task')
        bind = getattr(self._policy, 'bind_task', None)
        if bind is not None:
            self._call('bind_task', lambda: bind(task, layout))

    def predict(self, observation: Any, *, max_rows: int | None = None) -> np.ndarray:
        """The policy's next chunk, validated (float32 [T, 14], at most ``max_rows`` rows).

        Raises:
            PolicyFailure: kind ``predict`` (it raised), ``timeout`` or ``invalid_chunk``.
        """
        chunk = self._call('predict', lambda: self._policy.predict(observation))
        try:
            return validate_chunk(chunk, max_rows=max_rows)
        except PolicyError as error:
            raise PolicyFailure(str(error), kind='invalid_chunk') from error

    def close(self) -> str | None:
        """Call the policy's ``close`` if it has one and stop the worker; returns a failure message, if any.

        A policy still busy (the run was interrupted while it was thinking) is not waited for.
        """
        message = None
        close = getattr(self._policy, 'close', None)
        if callable(close) and not self.abandoned and not self._worker.busy:
            try:
                self._call('close', close)
            except PolicyFailure as failure:
                message = f'closing the policy failed: {failure}'
        self._abandon()
        return message
