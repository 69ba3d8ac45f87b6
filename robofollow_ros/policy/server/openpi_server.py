"""Serves a policy over the openpi websocket wire, so openpi clients (and ``OpenpiPolicy``) can use it.

Per connection: the msgpack metadata map first, then one reply per binary frame. A new connection starts
a new episode (the policy is reset). A request that cannot be answered gets a text frame with one error
line and the connection stays open (openpi servers close it; its clients raise on the text frame either
way). Frames above the size cap are refused by the websocket layer with close code 1009. ``GET /healthz``
answers ``200 OK``. The control maps of newer openpi clients (``{"__ctrl__": "episode_start"}``) are
acknowledged; ``episode_start`` also resets the policy. Every connection is served in its own thread; one that
sends no frame for ``idle_timeout`` seconds is closed (code 1001), so idle clients do not hold threads for ever.
"""

from __future__ import annotations

import http
import logging
import time
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.sync.server import Request, Response, Server, ServerConnection, serve

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.openpi import DEFAULT_PORT
from robofollow_ros.policy.openpi_codec import packb, unpackb
from robofollow_ros.policy.openpi_images import OPENPI_IMAGE_SIZE
from robofollow_ros.policy.openpi_messages import CAMERAS, parse_request
from robofollow_ros.policy.server.failures import describe_failure
from robofollow_ros.policy.server.interface import DEFAULT_IDLE_TIMEOUT
from robofollow_ros.policy.server.served import ServedPolicy
from robofollow_ros.state_layout import ACTION_DIM

DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024
CONTROL_KEY = '__ctrl__'


def _health_check(connection: ServerConnection, request: Request) -> Response | None:
    if request.path == '/healthz':
        return connection.respond(http.HTTPStatus.OK, 'OK\n')
    return None


class OpenpiServer:
    """A websocket ``PolicyServer`` (see ``interface.py`` for the constructor's arguments)."""

    def __init__(
        self,
        served: ServedPolicy,
        *,
        host: str = '127.0.0.1',
        port: int = DEFAULT_PORT,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        if not idle_timeout > 0:
            raise PolicyError(f'the idle timeout must be positive, got {idle_timeout}')
        self.served = served
        self.idle_timeout = idle_timeout
        self.metadata: dict[str, Any] = {
            'server': 'robofollow',
            'policy': served.name,
            'action_dim': ACTION_DIM,
            'cameras': list(CAMERAS),
            'image_size': OPENPI_IMAGE_SIZE,
        }
        self._server: Server = serve(
            self._handle,
            host,
            port,
            compression=None,
            max_size=max_frame_bytes,
            process_request=_health_check,
            logger=logging.getLogger('robofollow.serve_policy'),
        )

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
        try:
            self.served.reset()
            connection.send(packb(self.metadata))
            while True:
                try:
                    frame = connection.recv(timeout=self.idle_timeout)
                except TimeoutError:
                    connection.close(CloseCode.GOING_AWAY, f'no request for {self.idle_timeout:g} s')
                    return
                connection.send(self._answer(frame))
        except ConnectionClosed:
            return

    def _answer(self, frame: str | bytes) -> str | bytes:
        if isinstance(frame, str):
            return 'robofollow serve-policy: expected a binary msgpack frame, got text'
        started = time.perf_counter()
        try:
            request = unpackb(frame)
            if isinstance(request, dict) and CONTROL_KEY in request:
                return packb(self._control(request[CONTROL_KEY]))
            observation = parse_request(request)
            chunk = self.served.predict(observation.images, observation.state, observation.prompt)
        except Exception as error:  # a bad request or a failing policy must not end the connection
            return f'robofollow serve-policy: {describe_failure(error)}'
        return packb({'actions': chunk, 'server_timing': {'infer_ms': 1000.0 * (time.perf_counter() - started)}})

    def _control(self, command: Any) -> dict[str, str]:
        if command == 'episode_start':
            self.served.reset()
            return {'__ack__': 'episode_start'}
        if command == 'episode_end':
            return {'__ack__': 'episode_end'}
        return {'__ack__': 'ignored'}
