"""``robotwin-tcp``: a policy behind the published RoboFollow length-prefixed JSON server (protocol §5.2).

``reset`` and ``set_instruction`` are queued and sent, in order, right before the episode's first
``predict``: the server sees the same command sequence, and a server that died between episodes shows up
as that episode's policy error instead of ending the run. As the protocol says, only ``reset`` is retried
(once, on a new connection) after a lost connection; ``set_instruction`` and ``predict`` are never replayed.
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
        self._pending: list[tuple[str, Any]] = []

    def reset(self) -> None:
        """Queue ``reset`` (and drop commands queued for the previous episode)."""
        self._pending = [('reset', None)]

    def set_instruction(self, text: str) -> None:
        """Queue ``set_instruction``; the instruction also travels with every ``predict``."""
        self._instruction = text
        self._pending.append(('set_instruction', text))

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for command, payload in pending:
            if command == 'reset':
                try:
                    self._connection.call(command, payload)
                except PolicyConnectionError:
                    self._connection.connect()
                    self._connection.call(command, payload)
            else:
                self._connection.call(command, payload)

    def predict(self, observation: Any) -> np.ndarray:
        """Send the observation and return the server's validated float32 [T, 14] chunk."""
        self._flush()
        return validate_chunk(self._connection.call('predict', predict_payload(observation, self._instruction)))

    def close(self) -> None:
        """Close the connection."""
        self._connection.close()
