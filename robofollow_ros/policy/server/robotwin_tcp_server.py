"""Serves a policy over the published length-prefixed JSON wire (protocol §5.2), each connection in its own thread.

Every request frame gets one reply frame: ``{"res": ...}`` or ``{"error": line, "traceback": line}``; both lines
hold only the exception's type and message (a traceback would tell any client the server's paths and code).
A frame whose body is not a valid request gets an error reply and the connection goes on; a frame header
announcing more than the cap (or nothing) gets an error reply and the connection is closed, because the
stream cannot be resynchronised. A connection that sends nothing for ``idle_timeout`` seconds (also in the
middle of a frame) is closed, and at most ``max_connections`` are served at once (one more is told
the server is busy and closed), so an idle or half-open client delays nobody else. Calls into the policy are
still made one at a time (``ServedPolicy``).
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
from collections.abc import Mapping
from typing import Any

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.robotwin_tcp import DEFAULT_PORT
from robofollow_ros.policy.robotwin_tcp_codec import MAX_FRAME_BYTES, decode_message, encode_message, read_frame
from robofollow_ros.policy.robotwin_tcp_messages import COMMANDS, parse_predict_payload
from robofollow_ros.policy.server.failures import describe_failure, exception_line
from robofollow_ros.policy.server.interface import DEFAULT_IDLE_TIMEOUT
from robofollow_ros.policy.server.served import ServedPolicy

DEFAULT_MAX_CONNECTIONS = 256
"""Connections served at once; each holds a thread while it is open."""


class _Listener(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    block_on_close = False
    request_queue_size = socket.SOMAXCONN  # socketserver's 5 resets clients that connect at the same moment
    owner: RobotwinTcpServer


class _Connection(socketserver.BaseRequestHandler):
    server: _Listener

    def handle(self) -> None:
        self.server.owner.converse(self.request)


def _error_reply(error: BaseException) -> dict[str, str]:
    return {'error': describe_failure(error), 'traceback': exception_line(error)}


class RobotwinTcpServer:
    """A TCP ``PolicyServer`` (see ``interface.py`` for the constructor's arguments).

    ``max_connections`` bounds the connections served at once.
    """

    def __init__(
        self,
        served: ServedPolicy,
        *,
        host: str = '127.0.0.1',
        port: int = DEFAULT_PORT,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        if not idle_timeout > 0:
            raise PolicyError(f'the idle timeout must be positive, got {idle_timeout}')
        self.served = served
        self.max_frame_bytes = max_frame_bytes
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self._listener = _Listener((host, port), _Connection)
        self._listener.owner = self
        self._clients: set[socket.socket] = set()
        self._clients_lock = threading.Lock()

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self._listener.server_address[1])

    @property
    def open_connections(self) -> int:
        """Connections being served now."""
        with self._clients_lock:
            return len(self._clients)

    def serve_forever(self) -> None:
        """Answer connections until ``shutdown``."""
        self._listener.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        """Stop accepting, drop the connected clients and close the socket."""
        self._listener.shutdown()
        with self._clients_lock:
            for client in self._clients:
                with contextlib.suppress(OSError):
                    client.shutdown(socket.SHUT_RDWR)
        self._listener.server_close()

    def converse(self, sock: socket.socket) -> None:
        """Answer the frames of one connection until the client leaves, stays idle too long or the framing breaks."""
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(self.idle_timeout)
        with self._clients_lock:
            busy = len(self._clients) >= self.max_connections
            if not busy:
                self._clients.add(sock)
        if busy:
            self._send(sock, {'error': f'server busy: {self.max_connections} connections are open; try again later'})
            return
        try:
            while True:
                try:
                    body = read_frame(sock, max_bytes=self.max_frame_bytes)
                except PolicyError as error:
                    self._send(sock, _error_reply(error))
                    return
                except TimeoutError:
                    # Closed without a word: a frame sent now would be read as the reply to the client's next
                    # request, where a closed connection tells our client to reconnect.
                    return
                if body is None:
                    return
                if not self._send(sock, self.answer(body)):
                    return
        except OSError:
            return
        finally:
            with self._clients_lock:
                self._clients.discard(sock)

    @staticmethod
    def _send(sock: socket.socket, reply: Mapping[str, Any]) -> bool:
        try:
            sock.sendall(encode_message(reply))
        except OSError:
            return False
        return True

    def answer(self, body: bytes) -> dict[str, Any]:
        """The reply to one request frame body."""
        try:
            request = decode_message(body)
            if not isinstance(request, dict) or request.get('cmd') not in COMMANDS:
                raise PolicyError(f'a request must be {{"cmd": one of {", ".join(COMMANDS)}, "obs": ...}}')
            command, payload = request['cmd'], request.get('obs')
            if command == 'reset':
                self.served.reset()
                return {'res': None}
            if command == 'set_instruction':
                self.served.set_instruction(payload)
                return {'res': None}
            images, state, instruction = parse_predict_payload(payload)
            return {'res': self.served.predict(images, state, instruction)}
        except Exception as error:  # a bad request or a failing policy must not end the connection
            return _error_reply(error)
