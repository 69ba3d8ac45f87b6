"""The one TCP address a sandboxed policy may reach (``--policy-network host:port``), relayed through a socket file.

The sandbox has only its own loopback. With ``--policy-network`` the evaluator listens on a Unix socket in a
private folder (``OuterRelay``) and connects every stream accepted there to the given address, nothing else;
inside the sandbox the policy host listens on ``127.0.0.1:<port>`` and hands every connection to that socket
(``start_inner_relay``). Whatever the policy does, it reaches that address and no other: no UDP, no other
port, none of the graph's DDS traffic.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from robofollow_ros.errors import PolicyError

RELAY_SOCKET = 'relay.sock'
CONNECT_TIMEOUT = 10.0
BUFFER_BYTES = 1 << 16


def parse_address(text: str) -> tuple[str, int]:
    """``host:port`` -> ``(host, port)``.

    Raises:
        PolicyError: not ``host:port`` with a port in 1..65535.
    """
    host, _, port = str(text).rpartition(':')
    host = host.strip('[]')
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise PolicyError(f'--policy-network must look like host:port (port 1-65535), got {text!r}')
    return host, int(port)


def _copy(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(BUFFER_BYTES):
            target.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


def splice(first: socket.socket, second: socket.socket) -> None:
    """Copy bytes both ways between two connected sockets until both directions end, then close both."""
    other = threading.Thread(target=_copy, args=(second, first), daemon=True)
    other.start()
    _copy(first, second)
    other.join()
    first.close()
    second.close()


def _serve(listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
    while True:
        try:
            accepted, _ = listener.accept()
        except OSError:
            return
        try:
            upstream = connect()
        except OSError:
            accepted.close()
            continue
        threading.Thread(target=splice, args=(accepted, upstream), daemon=True).start()


class OuterRelay:
    """The evaluator's side: a Unix socket in a private folder whose every stream goes to ``address``.

    Args:
        address: ``host:port`` the policy may reach.
    """

    def __init__(self, address: str) -> None:
        self.host, self.port = parse_address(address)
        self.folder = Path(tempfile.mkdtemp(prefix='robofollow-relay-'))
        self.folder.chmod(0o755)
        self.socket_path = self.folder / RELAY_SOCKET
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.socket_path))
        self.socket_path.chmod(0o777)
        self._listener.listen(16)
        threading.Thread(target=_serve, args=(self._listener, self._connect), name='policy-relay', daemon=True).start()

    def _connect(self) -> socket.socket:
        return socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT)

    def close(self) -> None:
        """Stop accepting and remove the socket's folder (open streams end with their peers)."""
        with contextlib.suppress(OSError):
            self._listener.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def start_inner_relay(port: int, socket_path: str) -> None:
    """Inside the sandbox: listen on ``127.0.0.1:port`` and pass every connection to ``socket_path``."""

    def connect() -> socket.socket:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.connect(socket_path)
        return upstream

    listener = socket.create_server(('127.0.0.1', port))
    threading.Thread(target=_serve, args=(listener, connect), name='policy-relay', daemon=True).start()
