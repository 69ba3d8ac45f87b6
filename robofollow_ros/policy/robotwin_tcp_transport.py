"""One TCP connection to a RoboFollow remote-policy server: a command out, its ``res`` or ``error`` back."""

from __future__ import annotations

import socket
import time
from typing import Any

from robofollow_ros.errors import PolicyConnectionError, PolicyError
from robofollow_ros.policy.robotwin_tcp_codec import MAX_FRAME_BYTES, decode_message, encode_message, read_frame


class RobotwinTcpConnection:
    """A reconnectable socket to ``host:port`` with a per-reply timeout.

    Args:
        host: server address.
        port: server port.
        timeout: seconds to wait for a connection and for each reply.
        connect_retries: connection attempts before giving up.
        retry_interval: seconds between attempts.
        max_frame_bytes: largest reply accepted.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout: float,
        connect_retries: int,
        retry_interval: float,
        max_frame_bytes: int = MAX_FRAME_BYTES,
    ) -> None:
        self.address = (host, int(port))
        self.timeout = timeout
        self.connect_retries = max(1, int(connect_retries))
        self.retry_interval = retry_interval
        self.max_frame_bytes = max_frame_bytes
        self._socket: socket.socket | None = None

    @property
    def endpoint(self) -> str:
        """``host:port`` for messages."""
        return f'{self.address[0]}:{self.address[1]}'

    def connect(self) -> None:
        """Open the connection, retrying."""
        self.close()
        last_error: OSError | None = None
        for attempt in range(self.connect_retries):
            if attempt:
                time.sleep(self.retry_interval)
            try:
                sock = socket.create_connection(self.address, timeout=self.timeout)
            except OSError as error:
                last_error = error
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._socket = sock
            return
        raise PolicyError(
            f'robotwin-tcp server at {self.endpoint} is not reachable after {self.connect_retries} attempt(s): '
            f'{last_error}'
        )

    def call(self, command: str, payload: Any) -> Any:
        """Send ``{"cmd": command, "obs": payload}`` and return the reply's ``res``.

        Raises:
            PolicyConnectionError: the connection broke or timed out.
            PolicyError: the server answered with an error, or with something that is not a reply.
        """
        if self._socket is None:
            self.connect()
        assert self._socket is not None
        frame = encode_message({'cmd': command, 'obs': payload})
        try:
            self._socket.sendall(frame)
            body = read_frame(self._socket, max_bytes=self.max_frame_bytes)
        except TimeoutError as error:
            self.close()
            raise PolicyConnectionError(
                f'robotwin-tcp server at {self.endpoint} did not answer {command!r} within {self.timeout:g} s'
            ) from error
        except OSError as error:
            self.close()
            raise PolicyConnectionError(
                f'lost the connection to the robotwin-tcp server at {self.endpoint}: {error}'
            ) from error
        except PolicyError as error:
            self.close()
            raise PolicyConnectionError(f'robotwin-tcp server at {self.endpoint}: {error}') from error
        if body is None:
            self.close()
            raise PolicyConnectionError(
                f'robotwin-tcp server at {self.endpoint} closed the connection during {command!r}'
            )
        reply = decode_message(body)
        if isinstance(reply, dict) and 'error' in reply:
            raise PolicyError(f'robotwin-tcp server error on {command!r}: {reply["error"]}')
        if not isinstance(reply, dict) or 'res' not in reply:
            raise PolicyError(f'robotwin-tcp server sent a reply without "res" to {command!r}')
        return reply['res']

    def close(self) -> None:
        """Close the connection, if open."""
        sock, self._socket = self._socket, None
        if sock is not None:
            sock.close()
