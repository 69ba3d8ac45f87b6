"""Policy-server pools: ``--policy-kwargs '{"endpoints": ["host:port", ...]}'`` for the network backends.

Each simulator holds one connection, to the endpoint it was given when it started (round robin over the
endpoints still alive). A trial whose policy failed is checked against its endpoint: when the server no
longer accepts connections, the endpoint leaves the pool and the trial runs again on another one; a policy
that answered with an error is recorded like any other. With no endpoint left the run stops.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from typing import Any

from robofollow_ros.errors import PolicyError, PolicyPoolError, PolicyServerDownError
from robofollow_ros.policy import openpi, robotwin_tcp

ENDPOINTS_KEY = 'endpoints'
POOL_CONNECT_RETRIES = 2
"""Connection attempts per instance in a pool (not the single-server default): the next endpoint is preferred."""
PROBE_TIMEOUT = 2.0
SERVER_DEFAULT_PORTS = {'openpi': openpi.DEFAULT_PORT, 'robotwin-tcp': robotwin_tcp.DEFAULT_PORT}
"""The network backends by policy name, and the port each connects to when none is given."""
SERVER_DOWN_TRIALS = 3
"""Trials in a row that fail while the run's one policy server refuses connections before the run stops."""


def parse_endpoint(text: str) -> tuple[str, int]:
    """``host:port`` (optionally ``ws://host:port`` or ``tcp://host:port``) as a (host, port) pair.

    Raises:
        PolicyError: no port, or a port that is not a number from 1 to 65535.
    """
    bare = str(text).split('://', 1)[-1].rstrip('/')
    host, _, port = bare.rpartition(':')
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise PolicyError(f'policy endpoint {text!r} must look like "host:port"')
    return host.strip('[]'), int(port)


def reachable(endpoint: str, *, timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether a server accepts TCP connections at ``endpoint``."""
    host, port = parse_endpoint(endpoint)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class EndpointPool:
    """The endpoints of a pool run that are still alive, and the policy keyword arguments for each."""

    def __init__(self, endpoints: Sequence[str], *, base_kwargs: Mapping[str, Any]) -> None:
        if not endpoints:
            raise PolicyError('"endpoints" must list at least one "host:port"')
        for endpoint in endpoints:
            parse_endpoint(endpoint)
        self.alive = list(dict.fromkeys(str(endpoint) for endpoint in endpoints))
        self.dead: list[str] = []
        self.base_kwargs = {key: value for key, value in base_kwargs.items() if key != ENDPOINTS_KEY}
        self._turn = 0

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> EndpointPool | None:
        """The pool ``kwargs`` ask for, or ``None`` when they name no ``endpoints``."""
        endpoints = kwargs.get(ENDPOINTS_KEY)
        if endpoints is None:
            return None
        if isinstance(endpoints, str) or not isinstance(endpoints, Sequence):
            raise PolicyError('"endpoints" must be a JSON list of "host:port" strings')
        return cls(list(endpoints), base_kwargs=kwargs)

    def next_endpoint(self) -> str:
        """The endpoint for a new simulator (round robin over the live ones).

        Raises:
            PolicyPoolError: no endpoint is alive.
        """
        if not self.alive:
            raise PolicyPoolError(f'every policy server of the pool is unreachable ({", ".join(self.dead)})')
        endpoint = self.alive[self._turn % len(self.alive)]
        self._turn += 1
        return endpoint

    def kwargs_for(self, endpoint: str) -> dict[str, Any]:
        """The policy keyword arguments of an instance connected to ``endpoint``."""
        host, port = parse_endpoint(endpoint)
        return {'connect_retries': POOL_CONNECT_RETRIES, **self.base_kwargs, 'host': host, 'port': port}

    def lost(self, endpoint: str, record: Mapping[str, Any]) -> bool:
        """Whether ``record`` failed because ``endpoint`` is down; if so, it leaves the pool."""
        if not record.get('policy_error') or endpoint not in self.alive or reachable(endpoint):
            return False
        self.alive.remove(endpoint)
        self.dead.append(endpoint)
        return True


def server_endpoint(policy: str, kwargs: Mapping[str, Any]) -> str | None:
    """``host:port`` of the one server a network backend talks to; ``None`` for other policies and for pools."""
    if policy not in SERVER_DEFAULT_PORTS or ENDPOINTS_KEY in kwargs:
        return None
    host = str(kwargs.get('host', '127.0.0.1'))
    port = kwargs.get('port', SERVER_DEFAULT_PORTS[policy])
    endpoint = host if port is None else f'{host.rstrip("/")}:{port}'
    try:
        parse_endpoint(endpoint)
    except PolicyError:
        return None
    return endpoint


class ServerWatch:
    """Stops a run whose one policy server stays down instead of recording every remaining trial as an error.

    A trial that ended in a policy error while the server refuses connections counts; any other trial resets
    the count. A server that comes back within a trial's connection retries loses nothing.
    """

    def __init__(self, endpoint: str, *, limit: int = SERVER_DOWN_TRIALS) -> None:
        self.endpoint = endpoint
        self.limit = limit
        self.down = 0

    @classmethod
    def for_run(cls, policy: str, kwargs: Mapping[str, Any]) -> ServerWatch | None:
        """The watch of a run of ``policy`` (``None`` unless it talks to one policy server)."""
        endpoint = server_endpoint(policy, kwargs)
        return None if endpoint is None else cls(endpoint)

    def observe(self, record: Mapping[str, Any], *, remaining: int) -> None:
        """Count ``record``.

        Raises:
            PolicyServerDownError: ``limit`` trials in a row failed with the server down, and trials remain.
        """
        if not record.get('policy_error') or reachable(self.endpoint):
            self.down = 0
            return
        self.down += 1
        if self.down >= self.limit and remaining > 0:
            raise PolicyServerDownError(
                f'the policy server at {self.endpoint} refused connections through {self.down} trials in a row; '
                f'the run stops with {remaining} trials to go (resume it when the server is back; add '
                '--retry-errors to play the failed trials again)'
            )
