"""Starting, spinning and stopping a node process the same way for every node (``main(args=None)``)."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node

from robofollow_ros.errors import GraphError, RoboFollowError


def run_node(factory: Callable[[], Node], args: Sequence[str] | None = None, *, threads: int = 2) -> int:
    """Init rclpy, build the node, spin until shutdown (SIGINT or SIGTERM); returns the process exit code.

    A node may end the process itself by setting ``node.exit_code`` and calling ``rclpy.shutdown()``.
    """
    rclpy.init(args=args, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    stop = threading.Event()

    def request_stop(*_: Any) -> None:
        stop.set()
        if rclpy.ok():
            rclpy.try_shutdown()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    try:
        node = factory()
    except RoboFollowError as error:
        print(f'error: {error}', file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    executor = SingleThreadedExecutor() if threads == 1 else MultiThreadedExecutor(num_threads=threads)
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        close = getattr(node, 'close', None)
        if close is not None:
            close()
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.try_shutdown()
    return int(getattr(node, 'exit_code', 0))


def wait_for(condition: Callable[[], bool], *, timeout: float, what: str, poll: float = 0.005) -> None:
    """Block until ``condition()`` holds.

    Raises:
        GraphError: ``timeout`` seconds passed, or rclpy was shut down.
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if not rclpy.ok():
            raise GraphError(f'shut down while waiting for {what}')
        if time.monotonic() > deadline:
            raise GraphError(f'timed out after {timeout:g} s waiting for {what}')
        time.sleep(poll)
