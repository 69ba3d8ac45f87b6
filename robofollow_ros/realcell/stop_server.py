"""``StopServer``: a std_srvs/Trigger service that never waits behind the node's other callbacks.

The nodes spin rclpy's ``EventsExecutor`` (``runtime.run_node``), which runs every callback of its nodes on one
thread, one at a time, in arrival order, whatever their callback groups: a callback group only tells the wait-set
executors (``MultiThreadedExecutor``) what may run together, and the events executor has no second thread to run
anything on. The bridge's ``/robofollow/stop`` used to queue there behind camera images (each decoded in its
callback) and joint states: issue 29 measured 23-700 ms from the call to the hold under load.

So the stop is served by a node of its own (in the bridge's context and namespace, no parameter services, no rosout)
spun by an executor of its own on a thread of its own: its callback runs as soon as the request arrives, whatever
the bridge's executor is doing (it needs only the GIL, which a busy Python callback hands over every 5 ms). The
service keeps the bridge's resolved name (remaps and namespace included).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import rclpy
from rclpy._rclpy_pybind11 import RCLError
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from std_srvs.srv import Trigger

from robofollow_ros.ros.runtime import SPIN_PERIOD

JOIN_SECONDS = 2.0
"""How long ``close`` waits for the service's thread (it sees the shutdown within one spin period)."""


class StopServer:
    """Serve the Trigger ``service`` of ``node`` (a relative name, resolved as ``node`` resolves it) from a node and
    thread of its own, calling ``callback(request, response)`` there.

    Args:
        node: the node the service belongs to (its context, namespace, name and remaps).
        service: the service's name, e.g. ``topics.STOP``.
        callback: the service's callback; it runs on this server's thread, concurrently with ``node``'s callbacks. An
            exception it raises is logged and answered as a failure.
    """

    def __init__(self, node: Node, service: str, callback: Callable[[Any, Any], Any]) -> None:
        self.name = node.resolve_service_name(service)
        self.node = rclpy.create_node(
            f'{node.get_name()}_stop',
            context=node.context,
            namespace=node.get_namespace(),
            use_global_arguments=False,  # (the process's ``-r __node:=...`` would give it the bridge's name)
            enable_rosout=False,
            start_parameter_services=False,
        )
        self.callback = callback
        self.logger = node.get_logger()
        self.service = self.node.create_service(Trigger, self.name, self._serve)
        self.executor = SingleThreadedExecutor(context=node.context)
        self.executor.add_node(self.node)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._spin, name='stop-service', daemon=True)
        self.thread.start()

    def _serve(self, request: Any, response: Any) -> Any:
        """The callback; a failure is answered (and logged), never left to end this thread (no stop service then)."""
        try:
            return self.callback(request, response)
        except Exception as error:
            self.logger.error(f'{self.name} failed: {type(error).__name__}: {error}')
            response.success, response.message = False, f'the stop failed: {type(error).__name__}: {error}'
            return response

    def _spin(self) -> None:
        """Spin until ``close`` or rclpy's shutdown (not on the process's stop: the stop is served while the bridge
        exits)."""
        with contextlib.suppress(ExternalShutdownException):
            while not self.done.is_set() and self.executor.context.ok():
                try:
                    self.executor.spin_once(timeout_sec=SPIN_PERIOD)
                except RCLError:
                    if self.executor.context.ok() and not self.done.is_set():
                        raise
                    return  # shut down between the check and the wait

    def close(self) -> None:
        """Stop serving: the thread ends, the node is destroyed."""
        self.done.set()
        self.executor.wake()
        self.thread.join(timeout=JOIN_SECONDS)
        self.executor.shutdown(timeout_sec=JOIN_SECONDS)
        with contextlib.suppress(Exception):  # (the context may be shut down already)
            self.node.destroy_node()
