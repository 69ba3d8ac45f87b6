"""Starting, spinning and stopping a node process the same way for every node (``main(args=None)``)."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, MutableMapping, Sequence
from typing import Any, TypeVar

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy._rclpy_pybind11 import InvalidHandle, RCLError
from rclpy.context import Context
from rclpy.executors import Executor, ExternalShutdownException
from rclpy.experimental import EventsExecutor
from rclpy.node import Node

from robofollow_ros import topics
from robofollow_ros.errors import GraphError, RoboFollowError
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.ros.protocol import read_spec
from robofollow_ros.ros.shutdown import STOP, die_with_parent, ignore_further_stops, install_stop_handlers

SPIN_PERIOD = 0.1
KEEP_EPISODES = 16
"""Episodes a node remembers by id (specs, resets): their messages may arrive in any order across topics."""
_K = TypeVar('_K')
_V = TypeVar('_V')
_R = TypeVar('_R')


def run_node(factory: Callable[[], Node], args: Sequence[str] | None = None) -> int:
    """Init rclpy, build the node, spin until asked to stop; returns the process exit code.

    SIGINT and SIGTERM ask the node to stop (``ros/shutdown.py``): the callback running when the signal arrives
    finishes, then the node is closed (``node.close()``), destroyed and rclpy shut down; the exit code is 0. The
    node also stops when its parent process dies (``die_with_parent``).

    Callbacks run one at a time on rclpy's events executor: the nodes take about 14 messages per executed row,
    and the wait-set executors spent 70 (single-threaded) to 150 (multi-threaded) microseconds of CPU on each,
    against about 11 (``docs/graph.md``). A callback must not block for long: the bridge runs episodes on its
    own thread.

    A node may end the process itself by setting ``node.exit_code`` and calling ``rclpy.shutdown()``.
    """
    install_stop_handlers()
    die_with_parent()
    rclpy.init(args=None if args is None else list(args), signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    try:
        node = factory()
    except Exception as error:
        rclpy.try_shutdown()
        if isinstance(error, RoboFollowError):
            print(f'error: {error}', file=sys.stderr)
            return 2
        if STOP.is_set() and isinstance(error, (RCLError, InvalidHandle)):
            return 0  # stopped while starting
        raise
    executor = EventsExecutor()
    executor.add_node(node)
    try:
        spin(executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        ignore_further_stops()
        close = getattr(node, 'close', None)
        if close is not None:
            close()
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.try_shutdown()
    return int(getattr(node, 'exit_code', 0))


def spin(executor: Executor) -> None:
    """Spin until rclpy shuts down or the process is asked to stop (``STOP``), waking up often enough to see it."""
    with contextlib.suppress(ExternalShutdownException):
        while executor.context.ok() and not STOP.is_set():
            try:
                executor.spin_once(timeout_sec=SPIN_PERIOD)
            except RCLError:
                if executor.context.ok():
                    raise
                return  # shut down between the check and the wait


def param(node: Node, name: str, default: Any, *, description: str) -> Any:
    """Declare a parameter that accepts any type from the command line or a params file (the launchers pass
    strings), with the ``description`` that ``ros2 param describe`` shows; its value."""
    descriptor = ParameterDescriptor(dynamic_typing=True, description=description)
    return node.declare_parameter(name, default, descriptor).value


def wait_for(
    condition: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    poll: float = 0.005,
    context: Context | None = None,
    notified_by: threading.Condition | None = None,
) -> None:
    """Block until ``condition()`` holds: looked at every ``poll`` seconds, or, with ``notified_by``, whenever
    that condition variable is notified (and at least every ``poll`` seconds; ``condition`` runs with it held).

    Raises:
        GraphError: ``timeout`` seconds passed, or rclpy (``context``, default the global one) was shut down, or
            the process was asked to stop.
    """
    deadline = time.monotonic() + timeout
    with notified_by or contextlib.nullcontext():
        while not condition():
            if not rclpy.ok(context=context) or STOP.is_set():
                raise GraphError(f'shut down while waiting for {what}')
            remaining = deadline - time.monotonic()
            if remaining < 0:
                raise GraphError(f'timed out after {timeout:g} s waiting for {what}')
            if notified_by is None:
                time.sleep(poll)
            else:
                notified_by.wait(min(poll, remaining))


def remember(mapping: MutableMapping[_K, _V], key: _K, value: _V, *, keep: int = KEEP_EPISODES) -> None:
    """Store ``value`` under ``key`` and forget the oldest entries beyond ``keep`` (insertion order)."""
    mapping[key] = value
    while len(mapping) > keep:
        del mapping[next(iter(mapping))]


def read_report(node: Node, parse: Callable[[Any], _R], message: Any, *, topic: str) -> _R | None:
    """``parse(message)`` (``SimStatus.from_message``, ``EpisodeEnd.from_message``...), or ``None`` after logging why
    the message on ``topic`` is ignored."""
    try:
        return parse(message)
    except RoboFollowError as error:
        node.get_logger().error(f'ignored {topic}: {error}')
        return None


def read_episode(node: Node, message: Any) -> EpisodeSpec | None:
    """The ``EpisodeSpec`` of a ``/robofollow/episode`` message, or ``None`` after logging why it is ignored."""
    return read_report(node, read_spec, message, topic=topics.EPISODE)
