"""``robotwin-tcp``: a policy behind the published RoboFollow length-prefixed JSON server (protocol §5.2).

Each call is one request on a persistent connection. As the protocol says, only ``reset`` is retried (once,
on a new connection) after a lost connection; ``set_instruction`` and ``predict`` are never replayed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from robofollow_ros.errors import PolicyConnectionError
from robofollow_ros.policy.base import validate_chunk
from robofollow_ros.policy.robotwin_tcp_codec import MAX_FRAME_BYTES
from robofollow_ros.policy.robotwin_tcp_messages import predict_payload
from robofollow_ros.policy.robotwin_tcp_transport import RobotwinTcpConnection

DEFAULT_PORT = 8999


class RobotwinTcpPolicy:
    """Client of a RoboFollow remote-policy server.

    Args:
        host: server address.
        port: server port (protocol default 8999).
        timeout: seconds to wait for a connection and for each reply (the published client's default 120).
        connect_retries: connection attempts, ``retry_interval`` seconds apart (published: 20 x 1 s).
        max_frame_bytes: largest reply accepted.

    Raises:
        PolicyError: on construction when the server cannot be reached.
    """

    def __init__(
        self,
        host: str = '127.0.0.1',
        port: int = DEFAULT_PORT,
        *,
        timeout: float = 120.0,
        connect_retries: int = 20,
        retry_interval: float = 1.0,
        max_frame_bytes: int = MAX_FRAME_BYTES,
    ) -> None:
        self._connection = RobotwinTcpConnection(
            host,
            port,
            timeout=timeout,
            connect_retries=connect_retries,
            retry_interval=retry_interval,
            max_frame_bytes=max_frame_bytes,
        )
        self._connection.connect()
        self._instruction = ''

    def reset(self) -> None:
        """Send ``reset``; after a lost connection, reconnect and send it once more."""
        try:
            self._connection.call('reset', None)
        except PolicyConnectionError:
            self._connection.connect()
            self._connection.call('reset', None)

    def set_instruction(self, text: str) -> None:
        """Send ``set_instruction``; the instruction also travels with every ``predict``."""
        self._instruction = text
        self._connection.call('set_instruction', text)

    def predict(self, observation: Any) -> np.ndarray:
        """Send the observation and return the server's validated float32 [T, 14] chunk."""
        return validate_chunk(self._connection.call('predict', predict_payload(observation, self._instruction)))

    def close(self) -> None:
        """Close the connection."""
        self._connection.close()
