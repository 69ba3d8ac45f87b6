"""``openpi``: a policy served by an openpi websocket server (pi0, pi0.5 and anything speaking that wire).

Each ``predict`` sends the ALOHA observation (three letterboxed 224x224 CHW images, the 14-D state and the
instruction as ``prompt``) and returns the reply's ``actions``. openpi has no reset message: ``reset``
opens a new connection (servers treat a connection as one task; ours resets its policy).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from robofollow_ros.policy.openpi_images import OPENPI_IMAGE_SIZE
from robofollow_ros.policy.openpi_messages import actions_from_reply, observation_request
from robofollow_ros.policy.openpi_transport import DEFAULT_MAX_FRAME_BYTES, OpenpiConnection

DEFAULT_PORT = 8000
API_KEY_VARIABLE = 'OPENPI_API_KEY'


class OpenpiPolicy:
    """Client of an openpi policy server.

    Args:
        host: server host, or a full ``ws://`` / ``wss://`` URI.
        port: server port (openpi's default 8000).
        api_key: optional key, sent as ``Authorization: Api-Key <key>``; default: the ``OPENPI_API_KEY``
            environment variable, which keeps the key out of the run's recorded policy arguments.
        timeout: seconds to wait for a connection and for each reply.
        connect_retries: connection attempts (``retry_interval`` seconds apart) before a ``PolicyError``.
        image_size: side of the square images sent.
        max_frame_bytes: largest reply accepted.

    Raises:
        PolicyError: on construction when the server cannot be reached, so a wrong address fails at once.
    """

    def __init__(
        self,
        host: str = '127.0.0.1',
        port: int | None = DEFAULT_PORT,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        connect_retries: int = 20,
        retry_interval: float = 1.0,
        image_size: int = OPENPI_IMAGE_SIZE,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        uri = host if host.startswith(('ws://', 'wss://')) else f'ws://{host}'
        if port is not None and not host.startswith(('ws://', 'wss://')):
            uri = f'{uri}:{int(port)}'
        self.image_size = image_size
        self._prompt = ''
        self._connection = OpenpiConnection(
            uri,
            timeout=timeout,
            connect_retries=connect_retries,
            retry_interval=retry_interval,
            api_key=api_key if api_key is not None else os.environ.get(API_KEY_VARIABLE) or None,
            max_frame_bytes=max_frame_bytes,
        )
        self._connection.connect()

    @property
    def metadata(self) -> dict[str, Any]:
        """The metadata map the server sent on the latest connection."""
        return self._connection.metadata

    def reset(self) -> None:
        """Start a server-side episode on a fresh connection."""
        self._connection.connect()

    def set_instruction(self, text: str) -> None:
        """Sent as ``prompt`` with every observation."""
        self._prompt = text

    def predict(self, observation: Any) -> np.ndarray:
        """Send the observation and return the server's [T, 14] float32 actions."""
        request = observation_request(observation, self._prompt, image_size=self.image_size)
        return actions_from_reply(self._connection.request(request))

    def close(self) -> None:
        """Close the connection."""
        self._connection.close()
