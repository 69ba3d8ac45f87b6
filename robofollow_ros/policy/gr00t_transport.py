"""One ZeroMQ request/reply connection to a GR00T N1.6 policy server (``run_gr00t_server.py``).

A request is ``{'endpoint': name, 'data': {...}}`` (``data`` only for endpoints that take input; ``api_token`` when
the server wants one); the reply is the endpoint's result, or ``{'error': text}`` when it failed. A REQ socket that
timed out cannot send again, so a timeout closes it and the next request opens a new one.
"""

from __future__ import annotations

from typing import Any

import zmq

from robofollow_ros.errors import PolicyConnectionError, PolicyError
from robofollow_ros.policy.gr00t_codec import packb, unpackb

DEFAULT_MAX_FRAME_BYTES = 256 * 1024 * 1024


class Gr00tConnection:
    """Requests to the GR00T server at ``address`` (``tcp://host:port``), each answered within ``timeout`` seconds.

    Args:
        address: the server's ZeroMQ address.
        timeout: seconds to wait for each reply (and to hand a request over).
        api_token: sent with every request when given.
        max_frame_bytes: largest reply accepted (a larger one is dropped by ZeroMQ and reads as a timeout).
    """

    def __init__(
        self,
        address: str,
        *,
        timeout: float,
        api_token: str | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self.address = address
        self.timeout = timeout
        self.api_token = api_token
        self.max_frame_bytes = max_frame_bytes
        self._context = zmq.Context()
        self._socket: zmq.Socket[bytes] | None = None

    def _open(self) -> zmq.Socket[bytes]:
        if self._socket is None:
            socket = self._context.socket(zmq.REQ)
            milliseconds = max(1, round(self.timeout * 1000))
            socket.setsockopt(zmq.LINGER, 0)
            socket.setsockopt(zmq.RCVTIMEO, milliseconds)
            socket.setsockopt(zmq.SNDTIMEO, milliseconds)
            socket.setsockopt(zmq.MAXMSGSIZE, self.max_frame_bytes)
            socket.connect(self.address)
            self._socket = socket
        return self._socket

    def call(self, endpoint: str, data: dict[str, Any] | None = None, *, requires_input: bool = True) -> Any:
        """The server's answer to ``endpoint`` with ``data``.

        Raises:
            PolicyConnectionError: no answer within the timeout, or the connection failed (a new one is opened next).
            PolicyError: the server answered with an error, or with something that is not a GR00T frame.
        """
        request: dict[str, Any] = {'endpoint': endpoint}
        if requires_input:
            request['data'] = data if data is not None else {}
        if self.api_token:
            request['api_token'] = self.api_token
        frame = packb(request)
        socket = self._open()
        try:
            socket.send(frame)
            reply = socket.recv()
        except zmq.Again:
            self.close()
            raise PolicyConnectionError(
                f'GR00T server at {self.address} did not answer {endpoint!r} within {self.timeout:g} s'
            ) from None
        except zmq.ZMQError as error:
            self.close()
            raise PolicyConnectionError(f'GR00T server at {self.address}: {endpoint!r} failed: {error}') from None
        if reply == b'ERROR':
            raise PolicyError(f'GR00T server at {self.address} answered ERROR (is it a GR00T N1.6 policy server?)')
        answer = unpackb(reply)
        if isinstance(answer, dict) and 'error' in answer:
            raise PolicyError(f'GR00T server error on {endpoint!r}: {answer["error"]}')
        return answer

    def close(self) -> None:
        """Close the socket (the next request opens a new one)."""
        socket, self._socket = self._socket, None
        if socket is not None:
            socket.close(linger=0)

    def shutdown(self) -> None:
        """Close the socket and the ZeroMQ context."""
        self.close()
        self._context.term()
