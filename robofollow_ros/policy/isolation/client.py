"""``PolicyProcess``: the evaluator's handle on one policy process (start, call with a deadline, kill).

The process is a fresh interpreter (``python -m robofollow_ros.policy.isolation.host``) inside the policy
sandbox (``sandbox``: its own user, PID, network, IPC and mount namespaces) unless it is started without one
(``sandbox=None``: the benchmark's baseline, and the project's own tests of the plain process). Its stdout and
stderr go to a capped log file (``output_log``), never to the terminal. Calls are strictly one at a time.
Anything that leaves the conversation in an unknown state (a missed deadline, a broken pipe, an interrupt while
waiting) kills the process, and with it every process it started, at once. Another thread may ``kill`` the
process while a call is under way (a node shutting down): the call then ends with ``PolicyProcessError`` and
releases the pipes itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from robofollow_ros.errors import PolicyChunkError, PolicyError, PolicyProcessError, PolicyRaisedError
from robofollow_ros.policy.isolation.network import OuterRelay
from robofollow_ros.policy.isolation.output_log import OutputLog, log_path_in
from robofollow_ros.policy.isolation.sandbox import SandboxOptions, bwrap_command, bwrap_environment, package_root
from robofollow_ros.policy.isolation.shared_images import SharedImages
from robofollow_ros.policy.isolation.transport import Channel, FrameTooLarge

HOST_MODULE = 'robofollow_ros.policy.isolation.host'
EXIT_WAIT_SECONDS = 5.0
"""How long a process that closed its pipe may take to exit before it is killed (its exit code is reported)."""


SIGNAL_EXIT_BASE = 128
"""``bwrap`` exits with 128 + the signal number when the policy's process was killed by a signal."""


def exit_description(returncode: int | None, *, sandboxed: bool = False) -> str:
    """``exit code 3``, ``killed by SIGKILL``, or ``still running``."""
    if returncode is None:
        return 'still running'
    number = -returncode if returncode < 0 else None
    if sandboxed and returncode > SIGNAL_EXIT_BASE:
        number = returncode - SIGNAL_EXIT_BASE
    if number is not None:
        try:
            return f'killed by {signal.Signals(number).name}'
        except ValueError:
            return f'killed by signal {number}'
    return f'exit code {returncode}'


def host_command(interpreter: str | None) -> list[str]:
    """How to start the policy host: ``python -m`` here, or under another interpreter with this package's folder
    first on its path (its own site-packages stay its own)."""
    if interpreter is None:
        return [sys.executable, '-m', HOST_MODULE]
    bootstrap = (
        f'import sys; sys.path.insert(0, {str(package_root())!r}); from {HOST_MODULE} import main; sys.exit(main())'
    )
    return [interpreter, '-c', bootstrap]


class PolicyProcess:
    """One user policy in its own process.

    Args:
        memory_limit_mib: the cap on each of its processes' address space in MiB (0: none); see
            ``host.limit_memory``.
        sandbox: the sandbox to run it in (``None``: a plain child process, with none of the sandbox's walls).
        interpreter: the Python to run it under (``None``: this one); another interpreter keeps its own
            ``sys.path``, with this package's folder put first.

    Raises:
        PolicyProcessError: the interpreter (or its sandbox) cannot be started.
    """

    def __init__(
        self, *, memory_limit_mib: int, sandbox: SandboxOptions | None, interpreter: str | None = None
    ) -> None:
        self.memory_limit_mib = memory_limit_mib
        self.sandboxed = sandbox is not None
        self.images = SharedImages()
        self.relay = OuterRelay(sandbox.network) if sandbox is not None and sandbox.network else None
        self.log = OutputLog(log_path_in(sandbox.log_dir if sandbox is not None else None))
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        command = [
            *host_command(interpreter),
            f'--requests={request_read}',
            f'--replies={reply_write}',
            f'--images={self.images.fd}',
            f'--parent={0 if self.sandboxed else os.getpid()}',
            f'--memory-limit-mib={int(memory_limit_mib)}',
        ]
        if self.relay is not None:
            command.append(f'--relay={self.relay.port}:{self.relay.socket_path}')
        if sandbox is not None:
            relay_dir = None if self.relay is None else self.relay.folder
            search_path = [*sys.path, str(package_root())]
            command = bwrap_command(command, options=sandbox, search_path=search_path, relay_dir=relay_dir)
        passed = (request_read, reply_write, *((self.images.fd,) if self.images.fd >= 0 else ()))
        try:
            self.process = subprocess.Popen(
                command,
                pass_fds=passed,
                stdin=subprocess.DEVNULL,
                stdout=self.log.write_fd,
                stderr=self.log.write_fd,
                start_new_session=True,
                env=bwrap_environment() if self.sandboxed else None,
            )
        except OSError as error:
            for fd in (request_write, reply_read):
                os.close(fd)
            self.images.close()
            self.log.close()
            if self.relay is not None:
                self.relay.close()
            raise PolicyProcessError(f'cannot start the policy process: {error}') from error
        finally:
            os.close(request_read)
            os.close(reply_write)
            self.log.release_writer()
        os.set_blocking(request_write, False)
        self.channel = Channel(reply_read, request_write)
        self.alive = True
        self._caller: int | None = None

    @property
    def busy(self) -> bool:
        """Whether another thread is in the middle of a call."""
        return self._caller is not None and self._caller != threading.get_ident()

    @contextlib.contextmanager
    def _calling(self) -> Iterator[None]:
        outer = self._caller is None
        if outer:
            self._caller = threading.get_ident()
        try:
            yield
        finally:
            if outer:
                self._caller = None
                if not self.alive or self.process.returncode is not None:
                    self._release()

    @property
    def pid(self) -> int:
        """The policy process's id."""
        return self.process.pid

    def call(self, op: str, fields: Mapping[str, Any] | None = None, *, timeout: float) -> Any:
        """Send one request and return the reply's value.

        Raises:
            TimeoutError: no reply within ``timeout`` seconds (the process has been killed).
            PolicyProcessError: the process is gone or broke the protocol (it has been killed).
            PolicyRaisedError: the policy raised (the process lives on unless the caller kills it).
            PolicyChunkError: the policy's chunk is not a valid action chunk (with the reason).
        """
        if not self.alive or self.process.returncode is not None:
            raise PolicyProcessError(f'the policy process is not running ({self.how_it_ended()})')
        with self._calling():
            return self._exchange(op, fields, timeout=timeout)

    def _exchange(self, op: str, fields: Mapping[str, Any] | None, *, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        try:
            self.channel.send({'op': op, **dict(fields or {})}, deadline=deadline)
            reply = self.channel.receive(deadline=deadline)
        except TimeoutError:
            self.kill()
            raise
        except (FrameTooLarge, PolicyError) as error:
            self.kill()
            raise PolicyProcessError(f'the policy process broke the protocol during {op}: {error}') from None
        except EOFError:
            raise PolicyProcessError(f'the policy process died during {op} ({self._ended()})') from None
        except BaseException:
            self.kill()
            raise
        if not isinstance(reply, dict):
            self.kill()
            raise PolicyProcessError(f'the policy process broke the protocol during {op}')
        if 'error' in reply:
            raised = reply['error']
            raise PolicyRaisedError(
                str(raised.get('type')),
                str(raised.get('message')),
                own=bool(raised.get('own')),
                fatal=bool(raised.get('fatal')),
                memory=bool(raised.get('memory')),
            )
        if 'invalid' in reply:
            raise PolicyChunkError(str(reply['invalid']))
        return reply.get('ok')

    def predict(self, observation: Any, *, timeout: float) -> np.ndarray:
        """The chunk for ``observation`` (its images and 14-D state go over, nothing else).

        Raises:
            TimeoutError, PolicyProcessError, PolicyRaisedError, PolicyChunkError: as ``call``.
        """
        images = dict(getattr(observation, 'images', None) or {})
        fields: dict[str, Any] = {'state': np.asarray(observation.state, dtype=np.float32).reshape(-1)}
        if not self.alive:
            raise PolicyProcessError(f'the policy process is not running ({self.how_it_ended()})')
        with self._calling():
            if self.images.fd >= 0:
                fields['images'] = [list(slot) for slot in self.images.write(images)]
                fields['area'] = self.images.size
            else:
                fields['inline_images'] = {name: np.asarray(image, dtype=np.uint8) for name, image in images.items()}
            return np.asarray(self.call('predict', fields, timeout=timeout))

    def how_it_ended(self) -> str:
        """``still running``, ``exit code 3`` or ``killed by SIGKILL``."""
        return exit_description(self.process.poll(), sandboxed=self.sandboxed)

    def _ended(self) -> str:
        """Wait briefly for a process that closed its pipe, kill it if it lingers; how it ended."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=EXIT_WAIT_SECONDS)
        code = self.process.returncode
        self.kill()
        ended = exit_description(code if code is not None else self.process.returncode, sandboxed=self.sandboxed)
        return f'{ended}; its output is in {self.log.path}'

    def kill(self) -> None:
        """Kill the process now, and with it whatever it started (the sandbox's PID namespace ends with it; a plain
        process takes its session down), and release the pipes (or leave that to the call another thread has
        under way, which the kill ends)."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        if not self.busy:
            self._release()

    def wait_exit(self) -> None:
        """Give a process that answered ``close`` a moment to exit on its own, then make sure it is gone."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=EXIT_WAIT_SECONDS)
        self.kill()

    def _release(self) -> None:
        if self.alive:
            self.alive = False
            self.channel.close()
            self.images.close()
            self.log.close()
            if self.relay is not None:
                self.relay.close()
