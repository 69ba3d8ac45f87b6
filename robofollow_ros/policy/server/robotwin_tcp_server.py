"""Serves a policy over the published length-prefixed JSON wire (protocol §5.2), one client at a time.

Every request frame gets one reply frame: ``{"res": ...}`` or ``{"error": line, "traceback": text}``.
A frame whose body is not a valid request gets an error reply and the connection goes on; a frame header
announcing more than the cap (or nothing) gets an error reply and the connection is closed, because the
stream cannot be resynchronised. The server keeps accepting connections either way.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import traceback
from collections.abc import Mapping
from typing import Any

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.robotwin_tcp import DEFAULT_PORT
from robofollow_ros.policy.robotwin_tcp_codec import MAX_FRAME_BYTES, decode_message, encode_message, read_frame
from robofollow_ros.policy.robotwin_tcp_messages import COMMANDS, parse_predict_payload
from robofollow_ros.policy.server.failures import describe_failure
from robofollow_ros.policy.server.served import ServedPolicy


class _Listener(socketserver.TCPServer):
    allow_reuse_address = True
    owner: RobotwinTcpServer


class _Connection(socketserver.BaseRequestHandler):
    server: _Listener

    def handle(self) -> None:
        self.server.owner.converse(self.request)


def _error_reply(error: BaseException) -> dict[str, str]:
    return {'error': describe_failure(error), 'traceback': ''.join(traceback.format_exception(error))}


class RobotwinTcpServer:
    """A TCP ``PolicyServer`` (see ``interface.py`` for the constructor's arguments)."""

    def __init__(
        self,
        served: ServedPolicy,
        *,
        host: str = '127.0.0.1',
        port: int = DEFAULT_PORT,
        max_frame_bytes: int = MAX_FRAME_BYTES,
    ) -> None:
        self.served = served
        self.max_frame_bytes = max_frame_bytes
        self._listener = _Listener((host, port), _Connection)
        self._listener.owner = self
        self._client: socket.socket | None = None
        self._client_lock = threading.Lock()

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self._listener.server_address[1])

    def serve_forever(self) -> None:
        """Answer connections until ``shutdown``."""
        self._listener.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        """Stop accepting, drop the connected client and close the socket."""
        with self._client_lock:
            if self._client is not None:
                with contextlib.suppress(OSError):
                    self._client.shutdown(socket.SHUT_RDWR)
        self._listener.shutdown()
        self._listener.server_close()

    def converse(self, sock: socket.socket) -> None:
        """Answer the frames of one connection until the client leaves or the framing breaks."""
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._client_lock:
            self._client = sock
        try:
            while True:
                try:
                    body = read_frame(sock, max_bytes=self.max_frame_bytes)
                except PolicyError as error:
                    self._send(sock, _error_reply(error))
                    return
                if body is None:
                    return
                if not self._send(sock, self.answer(body)):
                    return
        except OSError:
            return
        finally:
            with self._client_lock:
                self._client = None

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
