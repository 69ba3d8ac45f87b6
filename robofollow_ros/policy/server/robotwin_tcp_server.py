"""Serves a policy over the published length-prefixed JSON wire (protocol §5.2), each connection in its own thread.

Every request frame gets one reply frame: ``{"res": ...}`` or ``{"error": line, "traceback": line}``; both lines
hold only the exception's type and message (a traceback would tell any client the server's paths and code).
A frame whose body is not a valid request gets an error reply and the connection goes on; a frame header
announcing more than the cap (or nothing) gets an error reply and the connection is closed, because the
stream cannot be resynchronised. A connection that sends nothing for ``idle_timeout`` seconds (also in the
middle of a frame) is closed. Connections and the bytes of requests in flight are bounded (``limits``): a
frame's announced length is reserved before its body is read, the client idle the longest makes room for a new
one, and a client in the middle of a request is never hung up. Calls into the policy are still made one at a
time (``ServedPolicy``).
"""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Mapping
from functools import partial
from typing import Any

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.robotwin_tcp import DEFAULT_PORT
from robofollow_ros.policy.robotwin_tcp_codec import decode_message, encode_message, read_frame
from robofollow_ros.policy.robotwin_tcp_messages import COMMANDS, parse_predict_payload
from robofollow_ros.policy.server.failures import describe_failure, exception_line
from robofollow_ros.policy.server.interface import DEFAULT_IDLE_TIMEOUT, Served, Session
from robofollow_ros.policy.server.limits import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_FRAME_BYTES,
    Admission,
    AdmittedClient,
    InflightBudget,
    check_limits,
    hang_up,
)


class _Listener(socketserver.TCPServer):
    allow_reuse_address = True
    request_queue_size = socket.SOMAXCONN  # socketserver's 5 resets clients that connect at the same moment
    owner: RobotwinTcpServer

    def process_request(self, request: Any, client_address: Any) -> None:
        self.owner.admit(request)


def _error_reply(error: BaseException) -> dict[str, str]:
    return {'error': describe_failure(error), 'traceback': exception_line(error)}


class RobotwinTcpServer:
    """A TCP ``PolicyServer`` (see ``interface.py`` for the constructor's arguments)."""

    def __init__(
        self,
        served: Served,
        *,
        host: str = '127.0.0.1',
        port: int = DEFAULT_PORT,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_inflight_bytes: int | None = None,
    ) -> None:
        max_inflight_bytes = check_limits(
            max_frame_bytes=max_frame_bytes,
            idle_timeout=idle_timeout,
            max_connections=max_connections,
            max_inflight_bytes=max_inflight_bytes,
        )
        self.served = served
        self.max_frame_bytes = max_frame_bytes
        self.idle_timeout = idle_timeout
        self._admission = Admission(max_connections)
        self._budget = InflightBudget(max_inflight_bytes)
        self._listener = _Listener((host, port), socketserver.BaseRequestHandler)
        self._listener.owner = self

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self._listener.server_address[1])

    @property
    def open_connections(self) -> int:
        """Connections being served now."""
        return self._admission.open_connections

    @property
    def busy_connections(self) -> int:
        """Connections in the middle of a request."""
        return self._admission.busy_connections

    def serve_forever(self) -> None:
        """Answer connections until ``shutdown``."""
        self._listener.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        """Stop accepting, drop the connected clients and close the socket."""
        self._admission.close(hang_up_busy=True)
        self._listener.shutdown()
        self._listener.server_close()

    def admit(self, sock: socket.socket) -> None:
        """Serve a new connection in its own thread once ``Admission`` lets it in (or close it at shutdown)."""
        client = self._admission.admit(partial(hang_up, sock))
        if client is None:
            sock.close()
            return
        threading.Thread(target=self.converse, args=(sock, client), name='robotwin-tcp-client', daemon=True).start()

    def converse(self, sock: socket.socket, client: AdmittedClient) -> None:
        """Answer the frames of one connection until the client leaves, stays idle too long or the framing breaks."""
        session = self.served.session()
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(self.idle_timeout)
            while sock.recv(1, socket.MSG_PEEK) and client.start_request():
                reserved: list[int] = []
                try:
                    going_on = self._request(sock, reserved, session)
                finally:
                    self._budget.release(sum(reserved))
                    client.end_request()
                if not going_on:
                    return
        except OSError:
            # Also the idle timeout: closed without a word (a frame sent now would be read as the reply to the
            # client's next request, where a closed connection tells our client to reconnect).
            return
        finally:
            client.leave()
            sock.close()

    def _request(self, sock: socket.socket, reserved: list[int], session: Session) -> bool:
        def reserve(size: int) -> None:
            if not self._budget.reserve(size, timeout=self.idle_timeout):
                raise PolicyError(
                    f'server busy: requests of {self._budget.total} bytes in all are in flight; try again later'
                )
            reserved.append(size)

        try:
            body = read_frame(sock, max_bytes=self.max_frame_bytes, reserve=reserve)
        except PolicyError as error:
            self._send(sock, _error_reply(error))
            return False
        return body is not None and self._send(sock, self.answer(body, session))

    @staticmethod
    def _send(sock: socket.socket, reply: Mapping[str, Any]) -> bool:
        try:
            sock.sendall(encode_message(reply))
        except OSError:
            return False
        return True

    def answer(self, body: bytes, session: Session | None = None) -> dict[str, Any]:
        """The reply to one request frame body (``session``: the connection's; default the served policy's own)."""
        session = self.served.session() if session is None else session
        try:
            request = decode_message(body)
            if not isinstance(request, dict) or request.get('cmd') not in COMMANDS:
                raise PolicyError(f'a request must be {{"cmd": one of {", ".join(COMMANDS)}, "obs": ...}}')
            command, payload = request['cmd'], request.get('obs')
            if command == 'reset':
                session.reset()
                return {'res': None}
            if command == 'set_instruction':
                session.set_instruction(payload)
                return {'res': None}
            images, state, instruction = parse_predict_payload(payload)
            return {'res': session.predict(images, state, instruction)}
        except Exception as error:  # a bad request or a failing policy must not end the connection
            return _error_reply(error)
