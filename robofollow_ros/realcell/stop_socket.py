"""The operator's stop without DDS: a Unix socket of the bridge that ``robofollow operator stop`` reaches first.

A new process needs a second or more to find the graph's ``/robofollow/stop`` over DDS (its own start-up, then
discovery: up to one announcement period of the running bridge). The bridge also listens on a Unix stream socket,
``<runtime folder>/robofollow/stop-d<domain><service>.sock``, where ``<runtime folder>`` is ``$XDG_RUNTIME_DIR``
(``/run/user/<uid>``), else ``/tmp/robofollow-<uid>``. A client connects, writes ``stop``, and reads one line:
``1 <message>`` when both arms hold, ``0 <message>`` when they could not be held. The same stop as the service
(``CellBridge.on_stop``), on a thread of its own.

Who can reach it: the folder is created ``0700`` and must be owned by this user with no access for others (it is
refused otherwise: a folder another user made in ``/tmp`` could hold a socket of theirs), the socket is ``0600``.
So exactly the processes of this user that can already call ``/robofollow/stop`` over DDS, and nothing new. A policy
in the sandbox sees neither folder: its ``/run`` and ``/tmp`` are private tmpfs (``test_policy_sandbox.py``).
This module imports the standard library only: the operator's command imports it before anything else.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

REQUEST = b'stop\n'
ACCEPT_POLL_SECONDS = 0.2
"""How often the accepting thread looks whether it should end."""
CLIENT_SECONDS = 2.0
"""How long the bridge gives one client to send its request."""


class StopSocketError(OSError):
    """The stop socket cannot be served here (its folder is not this user's alone, another bridge serves it)."""


def runtime_folder() -> Path:
    """This user's folder for the stop sockets (not created here)."""
    base = os.environ.get('XDG_RUNTIME_DIR', '')
    if base and Path(base).is_dir():
        return Path(base) / 'robofollow'
    return Path('/tmp') / f'robofollow-{os.getuid()}'


def stop_socket_path(domain: int, service: str = '/robofollow/stop') -> Path:
    """The stop socket of the bridge serving ``service`` (resolved name) in ROS ``domain``."""
    return runtime_folder() / f'stop-d{int(domain)}{service.replace("/", ".")}.sock'


def _private_folder(folder: Path) -> None:
    folder.mkdir(mode=0o700, parents=False, exist_ok=True)
    status = folder.lstat()
    if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid() or status.st_mode & 0o077:
        raise StopSocketError(f'{folder} is not a folder of this user alone (mode {stat.filemode(status.st_mode)})')


class StopSocket:
    """Serve the stop on ``path``: ``stop()`` returns (held, message) and runs on this server's thread.

    Raises:
        StopSocketError: the folder is not this user's alone, or a live server answers on ``path`` already.
    """

    def __init__(self, path: Path, stop: Callable[[], tuple[bool, str]]) -> None:
        _private_folder(path.parent)
        if path.exists() or path.is_symlink():
            if _answers(path):
                raise StopSocketError(f'another bridge serves {path}')
            path.unlink()  # left by a bridge that was killed
        self.path = path
        self.stop = stop
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        os.chmod(path, 0o600)
        self.inode = path.stat().st_ino
        self.server.listen(8)
        self.server.settimeout(ACCEPT_POLL_SECONDS)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, name='stop-socket', daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.done.is_set():
            try:
                client, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with client:
                client.settimeout(CLIENT_SECONDS)
                with contextlib.suppress(OSError):
                    request = client.recv(64)
                    if request != REQUEST:
                        client.sendall(b'0 unknown request: send "stop\\n"\n')
                        continue
                    try:
                        held, message = self.stop()
                    except Exception as error:  # answered, and the socket goes on serving
                        held, message = False, f'the stop failed: {type(error).__name__}: {error}'
                    client.sendall(f'{int(held)} {message}\n'.encode())

    def close(self) -> None:
        """Stop serving and remove the socket (unless another server has taken its name since)."""
        self.done.set()
        self.server.close()
        self.thread.join(timeout=2 * ACCEPT_POLL_SECONDS + CLIENT_SECONDS)
        with contextlib.suppress(OSError):
            if self.path.stat().st_ino == self.inode:
                self.path.unlink()


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def stop_over_socket(
    path: Path, *, timeout: float, on_connect: Callable[[], None] | None = None
) -> tuple[bool, str] | None:
    """Ask the bridge at ``path`` to stop: ``(held, message)``, or None when nothing listens there (use the service);
    ``on_connect`` is called once connected.

    Raises:
        TimeoutError: a bridge accepted but did not answer within ``timeout`` (the stop may have gone through).
    """
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(timeout)
        try:
            client.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        if on_connect is not None:
            on_connect()
        client.sendall(REQUEST)
        answer = b''
        while not answer.endswith(b'\n'):
            client.settimeout(max(0.001, deadline - time.monotonic()))
            try:
                part = client.recv(4096)
            except TimeoutError:
                raise TimeoutError(f'{path} accepted the stop but did not answer within {timeout:g} s') from None
            if not part:
                break
            answer += part
    text = answer.decode(errors='replace').strip()
    held, _, message = text.partition(' ')
    return held == '1', message
