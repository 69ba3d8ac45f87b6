"""Calling policy code safely: every call with a deadline, a user policy in its own process.

A policy is user code. Whatever it does (raises, returns garbage, sleeps forever, calls ``sys.exit`` or
``os._exit``, runs out of memory) is turned into a ``PolicyFailure`` that the episode records, and the run goes
on with a fresh instance for the next trial.

A ``module:function`` policy runs in its own process inside the policy sandbox
(``robofollow_ros.policy.isolation``; ``isolation == 'sandbox'``): a call that misses its deadline kills that
process and everything it started at once, and a process that dies is a ``crash``. Built-in policies, and user
policies under ``--trusted-policy``, run in this process on their own worker thread; a Python thread cannot be
killed, so a call of theirs that misses its deadline is left running on its daemon thread and the instance is
abandoned. Either way the evaluator never calls an abandoned instance again (``GuardedPolicy.abandoned``), and
Ctrl-C and SIGTERM reach the main thread, so they stop the run cleanly however busy the policy is.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np

from robofollow_ros.errors import PolicyChunkError, PolicyError, PolicyProcessError, PolicyRaisedError
from robofollow_ros.policy.base import needs_images, validate_chunk
from robofollow_ros.policy.factory import PolicyFactory
from robofollow_ros.policy.isolation.sandbox import SandboxOptions

FailureKind = Literal[
    'build', 'reset', 'set_instruction', 'bind_task', 'predict', 'invalid_chunk', 'timeout', 'crash', 'memory', 'close'
]
"""Every ``error_kind`` a record can hold for a policy failure (the graph's bridge adds ``graph``): ``crash`` when
the policy's own process died, ``memory`` when it reached its memory cap."""
DEFAULT_QUERY_TIMEOUT = 300.0
BUILD_TIMEOUT_FACTOR = 10.0
"""Building an instance (loading a checkpoint) may take this many times the per-call deadline."""
DEFAULT_POLICY_MEMORY_MIB = 8192
"""The default address-space cap of each process of a sandboxed policy (``--policy-memory-limit``), in MiB.

Generous on purpose: 8 GiB holds a CPU model of about two billion float32 parameters with room for its
activations (GPU memory is not counted), while a runaway policy fails its trial before it takes a typical
16 GB machine down with the simulator. 0 means no cap."""
CLOSE_TIMEOUT = 10.0
"""Seconds an isolated policy's ``close`` may take before its process is killed."""

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
    """One policy instance, built and called with a deadline per call: in its own process
    (``factory.isolation`` ``sandbox``, or ``process`` without the sandbox) or on its own worker thread.

    Args:
        factory: the resolved policy (its name, privilege, isolation and keyword arguments).
        timeout: seconds each ``reset``, ``set_instruction``, ``bind_task`` and ``predict`` may take.
        memory_limit_mib: address-space cap of each of the policy's processes in MiB (0: none; in-process: unused).
        sandbox: where the sandboxed policy's output goes, what it must not see, what network it may reach
            (``None``: the defaults of ``SandboxOptions``).

    Raises:
        PolicyFailure: (kind ``build``, ``timeout``, ``crash`` or ``memory``) the factory failed, returned an
            object without the policy interface, did not return within ``BUILD_TIMEOUT_FACTOR * timeout``, or
            its process died or ran out of memory.
    """

    def __init__(
        self,
        factory: PolicyFactory,
        *,
        timeout: float = DEFAULT_QUERY_TIMEOUT,
        memory_limit_mib: int = DEFAULT_POLICY_MEMORY_MIB,
        sandbox: SandboxOptions | None = None,
    ) -> None:
        self.name = factory.name
        self.sandbox = sandbox
        self.privileged = factory.privileged
        self.isolation = factory.isolation
        self.timeout = timeout
        self.memory_limit_mib = memory_limit_mib
        self.abandoned = False
        self._worker: _Worker | None = None
        self._process: Any = None
        self._policy: Any = None
        build_timeout = BUILD_TIMEOUT_FACTOR * timeout
        try:
            if factory.isolation in ('sandbox', 'process'):
                self._start_process(factory, timeout=build_timeout)
            else:
                self._worker = _Worker(f'policy {factory.name}')
                self._policy = self._call('build', factory.build, timeout=build_timeout)
                self.needs_images = needs_images(self._policy)
        except PolicyFailure:
            self._abandon()
            raise

    def _start_process(self, factory: PolicyFactory, *, timeout: float) -> None:
        import sys

        from robofollow_ros.policy.isolation.client import PolicyProcess

        sandbox = (self.sandbox or SandboxOptions()) if factory.isolation == 'sandbox' else None
        if sandbox is not None and factory.readable:
            sandbox = dataclasses.replace(sandbox, readable=(*sandbox.readable, *map(Path, factory.readable)))
        try:
            self._process = PolicyProcess(
                memory_limit_mib=self.memory_limit_mib, sandbox=sandbox, interpreter=factory.interpreter
            )
        except PolicyProcessError as error:
            raise PolicyFailure(str(error), kind='build') from error
        # Another interpreter keeps its own path: this one's site-packages would shadow its own.
        path = list(sys.path) if factory.interpreter is None else None
        request = {'name': factory.name, 'kwargs': dict(factory.kwargs), 'path': path}
        built = self._remote('build', 'build', request, timeout=timeout)
        self.needs_images = bool(built.get('needs_images', True)) if isinstance(built, dict) else True

    @property
    def log_path(self) -> Any:
        """The log file of the policy process's output (``None`` in-process)."""
        return None if self._process is None else self._process.log.path

    @property
    def pid(self) -> int | None:
        """The id of the policy's own process (``None`` in-process)."""
        return None if self._process is None else int(self._process.pid)

    @classmethod
    def wrap(
        cls, policy: object, *, privileged: bool, name: str | None = None, timeout: float = DEFAULT_QUERY_TIMEOUT
    ) -> GuardedPolicy:
        """Guard an instance that already exists (tests, benchmarks, an evaluator that builds its own).

        ``privileged`` is the caller's decision; the evaluator grants it only to ``PRIVILEGED_POLICIES``.
        """
        label = name or type(policy).__name__
        return cls(PolicyFactory(name=label, privileged=privileged, factory=lambda: policy), timeout=timeout)

    def _remote(
        self, stage: FailureKind, op: str, fields: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> Any:
        """One call into the policy's process (``op`` with ``fields``; ``predict`` takes ``observation``)."""
        if self.abandoned:
            raise PolicyFailure(f'policy {self.name!r} was abandoned after an earlier failure', kind=stage)
        limit = self.timeout if timeout is None else timeout
        try:
            if op == 'predict':
                assert fields is not None
                return self._process.predict(fields['observation'], timeout=limit)
            return self._process.call(op, fields, timeout=limit)
        except TimeoutError:
            self._abandon()
            raise PolicyFailure(
                f'{stage} did not return within {limit:g} s (policy process killed; --query-timeout sets the limit)',
                kind='timeout',
            ) from None
        except PolicyProcessError as error:
            self._abandon()
            raise PolicyFailure(str(error), kind='crash') from None
        except PolicyRaisedError as error:
            if error.memory or error.fatal:
                self._abandon()
            if error.memory:
                cap = (
                    f'the policy process may use at most {self.memory_limit_mib} MiB (--policy-memory-limit)'
                    if self.memory_limit_mib > 0
                    else 'the machine has no more for the policy process'
                )
                raise PolicyFailure(f'{stage} ran out of memory: {cap}; {error}', kind='memory') from None
            if error.own:
                raise PolicyFailure(str(error), kind=stage) from None
            raise PolicyFailure(f'{stage} raised {error.type_name}: {error.detail}', kind=stage) from None
        except PolicyChunkError as error:
            raise PolicyFailure(str(error), kind='invalid_chunk') from None

    def _call(self, stage: FailureKind, function: Callable[[], T], *, timeout: float | None = None) -> T:
        if self.abandoned:
            raise PolicyFailure(f'policy {self.name!r} was abandoned after an earlier failure', kind=stage)
        limit = self.timeout if timeout is None else timeout
        assert self._worker is not None
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
        if self._worker is not None:
            self._worker.stop()
        if self._process is not None:
            self._process.kill()

    def reset(self) -> None:
        """Call the policy's ``reset``."""
        if self._process is not None:
            self._remote('reset', 'reset')
            return
        self._call('reset', self._policy.reset)

    def set_instruction(self, text: str) -> None:
        """Call the policy's ``set_instruction``."""
        if self._process is not None:
            self._remote('set_instruction', 'set_instruction', {'text': str(text)})
            return
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
            PolicyFailure: kind ``predict`` (it raised), ``timeout``, ``invalid_chunk``, ``crash`` or ``memory``.
        """
        if self._process is not None:
            chunk = self._remote('predict', 'predict', {'observation': observation})
        else:
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
        if self._process is not None:
            if not self.abandoned and self._process.alive and not self._process.busy:
                try:
                    self._remote('close', 'close', timeout=min(self.timeout, CLOSE_TIMEOUT))
                except PolicyFailure as failure:
                    message = f'closing the policy failed: {failure}'
                else:
                    self._process.wait_exit()
            self._abandon()
            return message
        close = getattr(self._policy, 'close', None)
        assert self._worker is not None
        if callable(close) and not self.abandoned and not self._worker.busy:
            try:
                self._call('close', close)
            except PolicyFailure as failure:
                message = f'closing the policy failed: {failure}'
        self._abandon()
        return message
