"""One websocket connection to an openpi policy server: connect with retries, send a frame, await the reply.

The server speaks first: right after the handshake it sends a msgpack metadata map. A text frame in
place of a reply is the server's error report (openpi sends its traceback that way).
"""

from __future__ import annotations

import time
from typing import Any

import websockets
from websockets.sync.client import ClientConnection, connect

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.openpi_codec import packb, unpackb

DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024


def error_summary(text: str) -> str:
    """The last non-empty line of a server's error text (a traceback ends with the exception)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else 'unspecified error'


class OpenpiConnection:
    """A reconnectable websocket to ``uri`` with a reply timeout.

    Args:
        uri: ``ws://host:port``.
        timeout: seconds to wait for the handshake and for each reply.
        connect_retries: connection attempts before giving up.
        retry_interval: seconds between attempts.
        api_key: sent as ``Authorization: Api-Key <key>`` when given (openpi's convention).
        max_frame_bytes: largest reply accepted.
    """

    def __init__(
        self,
        uri: str,
        *,
        timeout: float,
        connect_retries: int,
        retry_interval: float,
        api_key: str | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self.uri = uri
        self.timeout = timeout
        self.connect_retries = max(1, int(connect_retries))
        self.retry_interval = retry_interval
        self.api_key = api_key
        self.max_frame_bytes = max_frame_bytes
        self.metadata: dict[str, Any] = {}
        self._socket: ClientConnection | None = None

    def connect(self) -> dict[str, Any]:
        """Open the connection and return the server's metadata."""
        self.close()
        headers = {'Authorization': f'Api-Key {self.api_key}'} if self.api_key else None
        last_error: Exception | None = None
        for attempt in range(self.connect_retries):
            if attempt:
                time.sleep(self.retry_interval)
            try:
                opening = connect(
                    self.uri,
                    compression=None,
                    max_size=self.max_frame_bytes,
                    open_timeout=self.timeout,
                    additional_headers=headers,
                )
                self._socket = opening.__enter__()  # a context manager since websockets 17, a connection before
                break
            except (OSError, TimeoutError, websockets.InvalidHandshake) as error:
                last_error = error
        else:
            raise PolicyError(
                f'openpi server at {self.uri} is not reachable after {self.connect_retries} attempt(s): '
                f'{_describe(last_error)}'
            )
        metadata = self._receive()
        if not isinstance(metadata, dict):
            self.close()
            raise PolicyError(f'openpi server at {self.uri} sent {type(metadata).__name__} instead of its metadata map')
        self.metadata = metadata
        return metadata

    def request(self, message: Any) -> Any:
        """Send ``message`` and return the decoded reply, connecting first if needed."""
        if self._socket is None:
            self.connect()
        assert self._socket is not None
        frame = packb(message)
        try:
            self._socket.send(frame)
        except (OSError, websockets.ConnectionClosed) as error:
            self.close()
            raise PolicyError(f'lost the connection to the openpi server at {self.uri}: {_describe(error)}') from error
        return self._receive()

    def _receive(self) -> Any:
        assert self._socket is not None
        try:
            reply = self._socket.recv(timeout=self.timeout)
        except TimeoutError as error:
            self.close()
            raise PolicyError(f'openpi server at {self.uri} did not answer within {self.timeout:g} s') from error
        except (OSError, websockets.ConnectionClosed) as error:
            self.close()
            raise PolicyError(f'lost the connection to the openpi server at {self.uri}: {_describe(error)}') from error
        if isinstance(reply, str):
            raise PolicyError(f'openpi server error: {error_summary(reply)}')
        return unpackb(reply)

    def close(self) -> None:
        """Close the connection, if open."""
        socket, self._socket = self._socket, None
        if socket is not None:
            socket.close()


def _describe(error: BaseException | None) -> str:
    if error is None:
        return 'no attempt made'
    if isinstance(error, websockets.ConnectionClosed):
        frame = error.rcvd
        if frame is None:
            return 'closed without a close frame (server gone)'
        reason = f': {frame.reason}' if frame.reason else ''
        return f'closed with code {int(frame.code)}{reason}'
    return str(error) or type(error).__name__
