"""What ``serve-policy`` needs from a server, whichever wire it speaks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

DEFAULT_IDLE_TIMEOUT = 300.0
"""Seconds a server waits for the next request of a connection (or the rest of one) before closing it."""


class PolicyServer(Protocol):
    """A server bound at construction to ``host:port`` (``port=0`` picks a free port).

    Constructors take the ``Served`` policy and, keyword-only, ``host`` (127.0.0.1 keeps the policy off
    the network), ``port``, ``max_frame_bytes`` (the largest request accepted), ``idle_timeout`` (seconds a
    connection may stay silent, also in the middle of a request, before the server closes it),
    ``max_connections`` (clients served at once) and ``max_inflight_bytes`` (bytes of all requests being
    received or answered at once); ``limits`` says how the last two are kept.
    """

    @property
    def port(self) -> int:
        """The bound port."""

    def serve_forever(self) -> None:
        """Answer connections until ``shutdown``."""

    def shutdown(self) -> None:
        """Stop accepting, close open connections, release the socket."""


class Session(Protocol):
    """What one connection (one episode) talks to."""

    def reset(self) -> None:
        """A new episode."""

    def set_instruction(self, text: object) -> None:
        """The episode's instruction (refused unless a string)."""

    def predict(self, images: Mapping[str, np.ndarray], state: np.ndarray, instruction: str | None) -> np.ndarray:
        """The validated chunk for one observation."""


class Served(Protocol):
    """The policy behind a server: ``served.ServedPolicy`` (one query at a time) or ``batching.BatchedPolicy``."""

    name: str

    def session(self) -> Session:
        """A new connection's session."""

    def close(self) -> None:
        """Release the policy."""
