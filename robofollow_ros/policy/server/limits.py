"""What a policy server holds at most: open connections, the size of one request, and the requests in flight.

``Admission`` serves at most ``max_connections`` clients. When all are taken, the client idle the longest
(connected, no request under way) is hung up to admit the new one; a client in the middle of a request (from its
first byte until its reply has been sent) is never hung up for another one, and while every client is, new ones
wait in the listen backlog (no thread, no memory of ours) until one becomes idle or leaves.

``InflightBudget`` bounds the bytes of all requests in flight together: a request reserves its announced size
before its body is read and gives it back once its reply has been sent, so a request that does not fit waits
instead of being read. The server's memory for requests is then a small multiple of the budget (decoding a
request needs a few copies of it), whatever the clients announce.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable

from robofollow_ros.errors import PolicyError

DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024
"""Largest request: ~17 x the ~0.92 MB robotwin-tcp frame of three 320x240 images (openpi's 224x224 frame is
~0.45 MB); three 1280x720 images still fit (~11 MB as base64 JSON)."""
DEFAULT_MAX_INFLIGHT_BYTES = 64 * 1024 * 1024
"""Bytes of requests being received or answered at once: four of the largest, or ~70 of 320x240 images (at
least one frame when a larger frame limit is chosen)."""
DEFAULT_MAX_CONNECTIONS = 64
"""Clients served at once; each holds a thread (openpi: three) while it is connected."""


def check_limits(
    *, max_frame_bytes: int, idle_timeout: float, max_connections: int, max_inflight_bytes: int | None
) -> int:
    """The in-flight budget (``None``: the default, or one largest frame if that is more), once the limits are
    known to be usable.

    Raises:
        PolicyError: a limit is not positive, or one frame would not fit in the in-flight budget.
    """
    if max_inflight_bytes is None:
        max_inflight_bytes = max(DEFAULT_MAX_INFLIGHT_BYTES, max_frame_bytes)
    if not idle_timeout > 0:
        raise PolicyError(f'the idle timeout must be positive, got {idle_timeout}')
    if max_connections < 1 or max_frame_bytes < 1:
        raise PolicyError('the connection and frame limits must be positive')
    if max_inflight_bytes < max_frame_bytes:
        raise PolicyError(
            f'the in-flight budget ({max_inflight_bytes} bytes) must hold at least one frame ({max_frame_bytes} bytes)'
        )
    return max_inflight_bytes


def hang_up(sock: socket.socket) -> None:
    """End a connection from any thread without closing the descriptor its own thread still reads."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class InflightBudget:
    """Bytes of the requests in flight, shared by the connections of one server."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self._changed = threading.Condition()

    def reserve(self, size: int, *, timeout: float | None, cancelled: Callable[[], bool] = lambda: False) -> bool:
        """Wait until ``size`` more bytes fit, then take them.

        Returns:
            False (nothing taken) when they did not fit within ``timeout`` seconds (``None``: no limit) or
            ``cancelled()`` turned true (``wake`` makes waiters check it).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while self.used + size > self.total:
                remaining = None if deadline is None else deadline - time.monotonic()
                if cancelled() or (remaining is not None and remaining <= 0):
                    return False
                self._changed.wait(remaining)
            self.used += size
            return True

    def release(self, size: int) -> None:
        """Give back ``size`` reserved bytes."""
        with self._changed:
            self.used -= size
            self._changed.notify_all()

    def wake(self) -> None:
        """Make every waiting ``reserve`` check its ``cancelled`` again."""
        with self._changed:
            self._changed.notify_all()


class AdmittedClient:
    """A connection that ``Admission`` let in: idle (may be hung up for a newcomer) until it starts a request."""

    def __init__(self, admission: Admission, hang_up: Callable[[], None]) -> None:
        self._admission = admission
        self._hang_up = hang_up
        self.busy = False
        self.shed = False
        self.idle_since = time.monotonic()

    def start_request(self) -> bool:
        """Mark the client busy; False if it was already hung up to admit another client."""
        with self._admission._changed:
            if self.shed:
                return False
            self.busy = True
            return True

    def end_request(self) -> None:
        """Mark the client idle again (its reply has been sent)."""
        with self._admission._changed:
            self.busy = False
            self.idle_since = time.monotonic()
            self._admission._changed.notify_all()

    def leave(self) -> None:
        """The connection is closed: free its place."""
        with self._admission._changed:
            self._admission._clients.discard(self)
            self._admission._changed.notify_all()


class Admission:
    """At most ``max_connections`` admitted clients; the one idle the longest makes room for a newcomer."""

    def __init__(self, max_connections: int) -> None:
        self.max_connections = max_connections
        self._clients: set[AdmittedClient] = set()
        self._closed = False
        self._changed = threading.Condition()

    @property
    def open_connections(self) -> int:
        """Clients admitted and not gone."""
        with self._changed:
            return len(self._clients)

    @property
    def busy_connections(self) -> int:
        """Clients in the middle of a request (never hung up for a newcomer)."""
        with self._changed:
            return sum(client.busy for client in self._clients)

    def admit(self, hang_up: Callable[[], None]) -> AdmittedClient | None:
        """Admit a new client: at once while there is room, else by hanging up the client idle the longest, else
        as soon as one becomes idle or leaves.

        Args:
            hang_up: ends the new client's connection from any thread (it must not block).

        Returns:
            The admitted client, or ``None`` once ``close`` was called.
        """
        with self._changed:
            while not self._closed:
                if len(self._clients) < self.max_connections:
                    break
                idle = [client for client in self._clients if not client.busy]
                if idle:
                    oldest = min(idle, key=lambda client: client.idle_since)
                    oldest.shed = True
                    self._clients.discard(oldest)
                    oldest._hang_up()
                    break
                self._changed.wait()
            else:
                return None
            client = AdmittedClient(self, hang_up)
            self._clients.add(client)
            return client

    def close(self, *, hang_up_busy: bool) -> None:
        """Admit nobody any more (a waiting ``admit`` returns ``None``) and hang up the idle clients; the busy ones
        too with ``hang_up_busy``."""
        with self._changed:
            self._closed = True
            clients = [client for client in self._clients if hang_up_busy or not client.busy]
            for client in clients:
                client.shed = True
            self._changed.notify_all()
        for client in clients:
            client._hang_up()
