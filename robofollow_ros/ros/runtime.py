"""Starting, spinning and stopping a node process the same way for every node (``main(args=None)``)."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, MutableMapping, Sequence
from typing import Any, TypeVar

import rclpy
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType
from rclpy._rclpy_pybind11 import InvalidHandle, RCLError
from rclpy.context import Context
from rclpy.duration import Duration
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.executors import Executor, ExternalShutdownException
from rclpy.experimental import EventsExecutor
from rclpy.node import Node
from rclpy.publisher import Publisher

from robofollow_ros import topics
from robofollow_ros.errors import GraphError, RoboFollowError
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.ros.protocol import read_spec
from robofollow_ros.ros.shutdown import STOP, die_with_parent, ignore_further_stops, install_stop_handlers

SPIN_PERIOD = 0.1
KEEP_EPISODES = 16
"""Episodes a node remembers by id (specs, resets): their messages may arrive in any order across topics."""
ACK_POLL_SECONDS = 0.005
MIN_TIMEOUT = 0.001
"""The smallest timeout parameter a node accepts, seconds (zero or less would give up before starting)."""
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
        if STOP.is_set() and isinstance(error, (RoboFollowError, RCLError, InvalidHandle)):
            return 0  # stopped while starting (a wait for the graph ends with a GraphError then)
        if isinstance(error, RoboFollowError):
            print(f'error: {error}', file=sys.stderr)
            return 2
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


PARAMETER_TYPES: dict[type, int] = {
    bool: ParameterType.PARAMETER_BOOL,
    int: ParameterType.PARAMETER_INTEGER,
    float: ParameterType.PARAMETER_DOUBLE,
    str: ParameterType.PARAMETER_STRING,
}
"""The ROS parameter type a node declares for a default of each Python type."""


def param(
    node: Node,
    name: str,
    default: bool | int | float | str,
    *,
    description: str,
    minimum: float | None = None,
    maximum: float | None = None,
) -> Any:
    """Declare a read-only parameter typed after ``default`` (bool, int, float or str), with the ``description`` that
    ``ros2 param describe`` shows and, for numbers, the range ``minimum``..``maximum`` (either end may be open); its
    value. Read-only because the nodes read their parameters once, when they start.

    Raises:
        GraphError: the value given on the command line or in a params file has another type or is out of range
            (one line naming the parameter, instead of rclpy's traceback).
    """
    kind = PARAMETER_TYPES[type(default)]
    descriptor = ParameterDescriptor(type=kind, description=description, read_only=True)
    if minimum is not None or maximum is not None:
        if kind == ParameterType.PARAMETER_INTEGER:
            low, high = (
                int(minimum if minimum is not None else -(2**63)),
                int(maximum if maximum is not None else 2**63 - 1),
            )
            descriptor.integer_range = [IntegerRange(from_value=low, to_value=high, step=1)]
            descriptor.additional_constraints = _bounds(name, minimum, maximum)
        elif kind == ParameterType.PARAMETER_DOUBLE:
            low_f = float(minimum if minimum is not None else -sys.float_info.max)
            high_f = float(maximum if maximum is not None else sys.float_info.max)
            descriptor.floating_point_range = [FloatingPointRange(from_value=low_f, to_value=high_f, step=0.0)]
            descriptor.additional_constraints = _bounds(name, minimum, maximum)
        else:
            raise TypeError(f'parameter {name}: a range needs a number default, not {default!r}')
    try:
        return node.declare_parameter(name, default, descriptor).value
    except (InvalidParameterTypeException, InvalidParameterValueException) as error:
        if isinstance(error, InvalidParameterTypeException):
            reason = f'expected {PARAMETER_TYPES_NAMES[kind]}'
        else:
            reason = f'must satisfy {descriptor.additional_constraints}'
        raise GraphError(f'parameter {name} of node {node.get_name()}: {reason}') from None


PARAMETER_TYPES_NAMES = {
    ParameterType.PARAMETER_BOOL: 'true or false',
    ParameterType.PARAMETER_INTEGER: 'an integer',
    ParameterType.PARAMETER_DOUBLE: 'a number',
    ParameterType.PARAMETER_STRING: 'a string',
}


def _bounds(name: str, minimum: float | None, maximum: float | None) -> str:
    low = '' if minimum is None else f'{minimum:g} <= '
    high = '' if maximum is None else f' <= {maximum:g}'
    return f'{low}{name}{high}'


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


def publish_acknowledged(publisher: Publisher, message: Any, *, timeout: float, context: Context | None = None) -> bool:
    """Publish ``message`` on a reliable ``publisher`` and wait until every matched reader has acknowledged it, or
    ``timeout`` seconds; whether they did (False also when rclpy shuts down or the process is asked to stop).

    A reliable KEEP_LAST writer of depth 1 (``qos.LATCHED``) replaces a sample that a reader has not acknowledged
    yet with the next one: a reader that lost the first delivery on a busy machine would never get it. Polled,
    because rclpy's ``wait_for_all_acked`` holds the GIL while it waits.
    """
    publisher.publish(message)
    deadline = time.monotonic() + timeout
    while not publisher.wait_for_all_acked(Duration()):
        if time.monotonic() > deadline or not rclpy.ok(context=context) or STOP.is_set():
            return False
        time.sleep(ACK_POLL_SECONDS)
    return True


class Timeout:
    """A real timeout on a node's executor: ``callback`` runs once, ``seconds`` after the latest ``start``, unless
    ``cancel`` came first (a one-shot timer that is not started at creation; the nodes react to message arrivals and
    use this only for what may never arrive).
    """

    def __init__(self, node: Node, seconds: float, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.timer = node.create_timer(seconds, self._expired, autostart=False)

    def start(self) -> None:
        """(Re)start the countdown."""
        self.timer.reset()

    def cancel(self) -> None:
        """Stop the countdown (no call)."""
        self.timer.cancel()

    def running(self) -> bool:
        """Whether a countdown runs."""
        return not self.timer.is_canceled()

    def _expired(self) -> None:
        self.timer.cancel()
        self.callback()


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
        node.get_logger().error(f'ignored {node.resolve_topic_name(topic)}: {error}')
        return None


def read_episode(node: Node, message: Any) -> EpisodeSpec | None:
    """The ``EpisodeSpec`` of a ``/robofollow/episode`` message, or ``None`` after logging why it is ignored."""
    return read_report(node, read_spec, message, topic=topics.EPISODE)
