"""Serves a policy over the openpi websocket wire, so openpi clients (and ``OpenpiPolicy``) can use it.

Per connection: the msgpack metadata map first, then one reply per binary frame. A new connection starts
a new episode (the policy is reset). A request that cannot be answered gets a text frame with one error
line and the connection stays open (openpi servers close it; its clients raise on the text frame either
way). Frames above the size cap are refused by the websocket layer with close code 1009. ``GET /healthz``
answers ``200 OK``. The control maps of newer openpi clients (``{"__ctrl__": "episode_start"}``) are
acknowledged; ``episode_start`` also resets the policy. Every connection is served in its own thread; one that
sends no frame for ``idle_timeout`` seconds is closed (code 1001), so idle clients do not hold threads for ever.
Connections and the bytes of requests in flight are bounded (``limits``): the client's websocket frames are
followed as they are read (``_RequestSocket``), so a frame's payload is reserved before it is read, and a client
is busy (never hung up for a newcomer) from the first byte of a message until its reply has been sent.
"""

from __future__ import annotations

import http
import logging
import socket
import threading
import time
from collections import deque
from functools import partial
from typing import Any, cast

from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.sync.server import Request, Response, Server, ServerConnection, serve

from robofollow_ros.policy.openpi import DEFAULT_PORT
from robofollow_ros.policy.openpi_codec import packb, unpackb
from robofollow_ros.policy.openpi_images import OPENPI_IMAGE_SIZE
from robofollow_ros.policy.openpi_messages import CAMERAS, parse_request
from robofollow_ros.policy.server.failures import describe_failure
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
from robofollow_ros.state_layout import ACTION_DIM

CONTROL_KEY = '__ctrl__'
HTTP_REQUEST_END = b'\r\n\r\n'


def _health_check(connection: ServerConnection, request: Request) -> Response | None:
    if request.path == '/healthz':
        return connection.respond(http.HTTPStatus.OK, 'OK\n')
    return None


class _RequestSocket(socket.socket):
    """A client's socket that counts the bytes of its unanswered messages against the server's budget.

    It follows the websocket frames the client sends (RFC 6455, section 5.2) as websockets reads them: a frame's payload
    is reserved once its header has been read and before any of it is, and reads never go past the frame. The
    bytes of a message stay reserved until the server has answered it (``answered``); the opening HTTP request
    and control frames, which websockets handles at once, are given back as soon as they have been read.
    """

    def __init__(self, sock: socket.socket, *, budget: InflightBudget, max_frame_bytes: int) -> None:
        super().__init__(fileno=sock.detach())
        self.budget = budget
        self.client: AdmittedClient | None = None
        self._max_frame_bytes = max_frame_bytes
        self._lock = threading.Lock()
        self._stopped = False
        self._closed = False
        self._outstanding = 0
        self._request_tail: bytes | None = b''  # None once the HTTP request has been read
        self._header = bytearray()
        self._header_size = 2
        self._frame_head = 0
        self._frame_bytes = 0
        self._payload_left = 0
        self._message_bytes = 0
        self._unchecked = False
        self._unanswered: deque[int] = deque()

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        if flags or self._unchecked:  # past a frame over the cap websockets only discards what comes
            return super().recv(bufsize, flags)
        if self._request_tail is not None:
            return self._recv_http_request(bufsize)
        if self._payload_left:
            data = super().recv(min(bufsize, self._payload_left))
            self._payload_left -= len(data)
            if data and not self._payload_left:
                self._end_frame()
            return data
        data = self._recv_charged(self._header_size - len(self._header))
        self._header += data
        if len(self._header) == 2:
            length = self._header[1] & 0x7F
            self._header_size = 2 + {126: 2, 127: 8}.get(length, 0) + (4 if self._header[1] & 0x80 else 0)
        if data and len(self._header) == self._header_size:
            self._start_payload()
        return data

    def _recv_http_request(self, bufsize: int) -> bytes:
        assert self._request_tail is not None
        peeked = super().recv(bufsize, socket.MSG_PEEK)
        end = (self._request_tail + peeked).find(HTTP_REQUEST_END)
        data = self._recv_charged(len(peeked) if end < 0 else end + len(HTTP_REQUEST_END) - len(self._request_tail))
        self._request_tail = (self._request_tail + data)[-len(HTTP_REQUEST_END) :]
        if self._request_tail == HTTP_REQUEST_END:
            self._request_tail = None
            self._release(self._outstanding)
        return data

    def _start_payload(self) -> None:
        length = self._header[1] & 0x7F
        if length >= 126:
            length = int.from_bytes(self._header[2 : 4 if length == 126 else 10], 'big')
        self._frame_bytes, self._frame_head = len(self._header) + length, self._header[0]
        self._header, self._header_size = bytearray(), 2
        if length > self._max_frame_bytes:
            self._unchecked = True  # websockets refuses it unread (close code 1009)
            return
        if not self.budget.reserve(length, timeout=None, cancelled=lambda: self._stopped):
            raise ConnectionAbortedError('the connection was closed while its request waited for memory')
        self._charge(length)
        self._payload_left = length
        if not length:
            self._end_frame()

    def _end_frame(self) -> None:
        if self._frame_head & 0x08:
            self._release(self._frame_bytes)
            return
        self._message_bytes += self._frame_bytes
        if self._frame_head & 0x80:
            with self._lock:
                self._unanswered.append(self._message_bytes)
            self._message_bytes = 0

    def _recv_charged(self, size: int) -> bytes:
        if not self.budget.reserve(size, timeout=None, cancelled=lambda: self._stopped):
            raise ConnectionAbortedError('the connection was closed while its request waited for memory')
        try:
            data = super().recv(size)
        except BaseException:
            self.budget.release(size)
            raise
        self.budget.release(size - len(data))
        self._charge(len(data))
        return data

    def _charge(self, size: int) -> None:
        with self._lock:
            admitted = not self._closed and (
                self._outstanding or not size or self.client is None or self.client.start_request()
            )
            if admitted:
                self._outstanding += size
        if not admitted:
            self.budget.release(size)
            raise ConnectionAbortedError('the connection was closed to admit another client')

    def _release(self, size: int) -> None:
        with self._lock:
            size = min(size, self._outstanding)
            self._outstanding -= size
            idle = size and not self._outstanding and self.client is not None
        self.budget.release(size)
        if idle:
            assert self.client is not None
            self.client.end_request()

    def answered(self) -> None:
        """The reply to the oldest unanswered message has been sent: give its bytes back."""
        with self._lock:
            size = self._unanswered.popleft() if self._unanswered else 0
        self._release(size)

    def shutdown(self, how: int) -> None:
        if how != socket.SHUT_WR:
            self._stopped = True
            self.budget.wake()
        super().shutdown(how)

    def close(self) -> None:
        with self._lock:
            first, self._closed, self._stopped = not self._closed, True, True
            outstanding, self._outstanding = self._outstanding, 0
        super().close()
        if first:
            self.budget.release(outstanding)
            self.budget.wake()
            if self.client is not None:
                self.client.leave()


class _Listener(socket.socket):
    """The listening socket: hands websockets a connection once ``Admission`` has let it in."""

    owner: OpenpiServer

    def accept(self) -> tuple[socket.socket, Any]:
        sock, address = super().accept()
        connection = _RequestSocket(sock, budget=self.owner._budget, max_frame_bytes=self.owner.max_frame_bytes)
        connection.client = self.owner._admission.admit(partial(hang_up, connection))
        if connection.client is None:
            connection.close()
            raise OSError('the server is shutting down')
        return connection, address

    def close(self) -> None:
        self.owner._admission.close(hang_up_busy=False)  # websockets closes the busy ones cleanly
        super().close()


class OpenpiServer:
    """A websocket ``PolicyServer`` (see ``interface.py`` for the constructor's arguments)."""

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
        self.idle_timeout = idle_timeout
        self.max_frame_bytes = max_frame_bytes
        self._admission = Admission(max_connections)
        self._budget = InflightBudget(max_inflight_bytes)
        self.metadata: dict[str, Any] = {
            'server': 'robofollow',
            'policy': served.name,
            'action_dim': ACTION_DIM,
            'cameras': list(CAMERAS),
            'image_size': OPENPI_IMAGE_SIZE,
        }
        listener = _Listener(fileno=socket.create_server((host, port)).detach())
        listener.owner = self
        self._server: Server = serve(
            self._handle,
            sock=listener,
            compression=None,
            max_size=max_frame_bytes,
            process_request=_health_check,
            logger=logging.getLogger('robofollow.serve_policy'),
        )

    @property
    def open_connections(self) -> int:
        """Connections being served now."""
        return self._admission.open_connections

    @property
    def busy_connections(self) -> int:
        """Connections in the middle of a request."""
        return self._admission.busy_connections

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self._server.socket.getsockname()[1])

    def serve_forever(self) -> None:
        """Answer connections until ``shutdown``."""
        self._server.serve_forever()

    def shutdown(self) -> None:
        """Stop accepting, close open connections and return once their handlers ended."""
        self._server.shutdown()

    def _handle(self, connection: ServerConnection) -> None:
        requests = cast(_RequestSocket, connection.socket)
        session = self.served.session()
        try:
            session.reset()
            connection.send(packb(self.metadata))
            while True:
                try:
                    reply = self._answer(connection.recv(timeout=self.idle_timeout), session)
                except TimeoutError:
                    connection.close(CloseCode.GOING_AWAY, f'no request for {self.idle_timeout:g} s')
                    return
                connection.send(reply)
                del reply
                requests.answered()
        except ConnectionClosed:
            return

    def _answer(self, frame: str | bytes, session: Session) -> str | bytes:
        if isinstance(frame, str):
            return 'robofollow serve-policy: expected a binary msgpack frame, got text'
        started = time.perf_counter()
        try:
            request = unpackb(frame)
            if isinstance(request, dict) and CONTROL_KEY in request:
                return packb(self._control(request[CONTROL_KEY], session))
            observation = parse_request(request)
            chunk = session.predict(observation.images, observation.state, observation.prompt)
        except Exception as error:  # a bad request or a failing policy must not end the connection
            return f'robofollow serve-policy: {describe_failure(error)}'
        return packb({'actions': chunk, 'server_timing': {'infer_ms': 1000.0 * (time.perf_counter() - started)}})

    def _control(self, command: Any, session: Session) -> dict[str, str]:
        if command == 'episode_start':
            session.reset()
            return {'__ack__': 'episode_start'}
        if command == 'episode_end':
            return {'__ack__': 'episode_end'}
        return {'__ack__': 'ignored'}
