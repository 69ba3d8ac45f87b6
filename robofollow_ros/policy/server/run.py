"""Running a policy server in the foreground until SIGINT or SIGTERM."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Mapping
from typing import Any, Literal

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy import openpi, robotwin_tcp
from robofollow_ros.policy.factory import resolve_policy
from robofollow_ros.policy.server.batching import DEFAULT_WINDOW, BatchedPolicy
from robofollow_ros.policy.server.interface import PolicyServer, Served
from robofollow_ros.policy.server.openpi_server import OpenpiServer
from robofollow_ros.policy.server.robotwin_tcp_server import RobotwinTcpServer
from robofollow_ros.policy.server.served import ServedPolicy

WireProtocol = Literal['openpi', 'robotwin-tcp']
PROTOCOLS: tuple[WireProtocol, ...] = ('openpi', 'robotwin-tcp')
DEFAULT_PORTS: dict[WireProtocol, int] = {'openpi': openpi.DEFAULT_PORT, 'robotwin-tcp': robotwin_tcp.DEFAULT_PORT}
SCHEMES: dict[WireProtocol, str] = {'openpi': 'ws', 'robotwin-tcp': 'tcp'}


def make_server(
    served: Served,
    *,
    protocol: WireProtocol,
    host: str,
    port: int,
    max_frame_bytes: int | None = None,
    idle_timeout: float | None = None,
    max_connections: int | None = None,
    max_inflight_bytes: int | None = None,
) -> PolicyServer:
    """Bind a server for ``served`` speaking ``protocol`` (``None`` options keep the server's defaults)."""
    limits = {
        'max_frame_bytes': max_frame_bytes,
        'idle_timeout': idle_timeout,
        'max_connections': max_connections,
        'max_inflight_bytes': max_inflight_bytes,
    }
    options: dict[str, Any] = {'host': host, 'port': port}
    options.update({name: value for name, value in limits.items() if value is not None})
    try:
        if protocol == 'openpi':
            return OpenpiServer(served, **options)
        if protocol == 'robotwin-tcp':
            return RobotwinTcpServer(served, **options)
    except OSError as error:
        raise PolicyError(f'cannot listen on {host}:{port}: {error.strerror or error}') from error
    raise PolicyError(f'unknown protocol {protocol!r}: use one of {", ".join(PROTOCOLS)}')


def serve_policy(
    name: str,
    *,
    kwargs: Mapping[str, Any] | None = None,
    protocol: WireProtocol = 'openpi',
    host: str = '127.0.0.1',
    port: int | None = None,
    max_frame_bytes: int | None = None,
    idle_timeout: float | None = None,
    max_connections: int | None = None,
    max_inflight_bytes: int | None = None,
    batch: int = 1,
    batch_window: float = DEFAULT_WINDOW,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve the policy ``name`` until SIGINT or SIGTERM, then close it.

    Raises:
        PolicyError: ``name`` is privileged (``expert``, ``blind``: they need the scene's ground truth,
            which a client cannot send), cannot be built, the address cannot be bound, or a limit is unusable.

    ``idle_timeout`` (default ``interface.DEFAULT_IDLE_TIMEOUT``, 300 s) closes a connection that sends nothing
    for that long; ``max_frame_bytes``, ``max_connections`` and ``max_inflight_bytes`` default to ``limits``'s.
    ``announce`` receives one line with the bound address once the server accepts connections (``port=0`` binds
    a free port, which that line names). ``batch`` > 1 answers the queries of concurrent connections in batches of
    up to that many, gathered for ``batch_window`` seconds (``batching``; the policy must have ``predict_batch``).
    """
    factory = resolve_policy(name, kwargs=kwargs, trusted=True)  # the server's process is the policy's own
    if factory.privileged:
        raise PolicyError(
            f'{name} is a privileged policy: it plans from the scene state, which does not travel over the wire; '
            'serve a policy that needs only images, state and instruction (e.g. hold, or a replay of a recorded '
            'expert episode)'
        )
    policy = factory.build()
    try:
        served: Served = (
            ServedPolicy(policy, name=name)
            if batch == 1
            else BatchedPolicy(policy, name=name, max_batch=batch, window=batch_window)
        )
    except PolicyError:
        close = getattr(policy, 'close', None)
        if close is not None:
            close()
        raise
    try:
        server = make_server(
            served,
            protocol=protocol,
            host=host,
            port=DEFAULT_PORTS[protocol] if port is None else port,
            max_frame_bytes=max_frame_bytes,
            idle_timeout=idle_timeout,
            max_connections=max_connections,
            max_inflight_bytes=max_inflight_bytes,
        )
    except BaseException:
        served.close()
        raise
    stop = threading.Event()
    previous = {number: signal.signal(number, lambda *_: stop.set()) for number in (signal.SIGINT, signal.SIGTERM)}
    worker = threading.Thread(target=server.serve_forever, name='serve-policy', daemon=True)
    try:
        worker.start()
        batching = '' if batch == 1 else f' in batches of up to {batch} within {1000 * batch_window:g} ms'
        announce(f'serving {name}{batching} over {protocol} at {SCHEMES[protocol]}://{host}:{server.port}')
        while not stop.wait(0.5):
            if not worker.is_alive():
                raise PolicyError(f'the {protocol} server stopped unexpectedly')
    finally:
        server.shutdown()
        worker.join(timeout=10)
        served.close()
        for number, handler in previous.items():
            signal.signal(number, handler)
