"""Thread-safe store of what the sim published, keyed by stamp, so the bridge can wait for a complete observation.

Joint states and poses stay serialised (CDR) until an observation needs them: the sim publishes them for every
executed row, the bridge reads them once per query. For the same reason a stored sample wakes the waiting episode
thread only when its observation was already announced (a sim status with that stamp or a later one arrived
before it): the sim announces an observation after publishing it, so nobody waits for the other rows' samples,
and waking the thread for each of them cost a thread switch per message.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from typing import Generic, TypeVar

import numpy as np

from robofollow_ros.errors import GraphError
from robofollow_ros.ros.protocol import SimStatus
from robofollow_ros.ros.shutdown import STOP

_V = TypeVar('_V')
KEEP = 64


class _Recent(Generic[_V]):
    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self.items: OrderedDict[int, _V] = OrderedDict()

    def put(self, stamp_ns: int, value: _V) -> None:
        self.items[stamp_ns] = value
        while len(self.items) > self.keep:
            self.items.popitem(last=False)


class ObservationCache:
    """The latest joint states, images, poses and sim statuses by stamp; ``wait`` blocks until a predicate holds."""

    def __init__(self) -> None:
        self.condition = threading.Condition()
        self.states: _Recent[bytes] = _Recent()
        self.images: dict[str, _Recent[np.ndarray]] = {}
        self.poses: dict[str, _Recent[bytes]] = {}
        self.statuses: list[tuple[float, SimStatus]] = []
        self.announced_ns = -1
        self.sources: list[Callable[[Collection[str] | None], None]] = []
        """Called by ``refresh``: samples read on demand (``OnDemandReaders.drain``) rather than pushed by callbacks."""

    def refresh(self, topics: Collection[str] | None = None) -> None:
        """Pull in the samples of every on-demand source (of ``topics`` only, if given)."""
        for source in self.sources:
            source(topics)

    def _add(self, update: Callable[[], None], stamp_ns: int) -> None:
        with self.condition:
            update()
            if stamp_ns <= self.announced_ns:
                self.condition.notify_all()

    def add_state(self, stamp_ns: int, state: bytes) -> None:
        """Store a JointState (CDR, decoded only when an observation needs it)."""
        self._add(lambda: self.states.put(stamp_ns, state), stamp_ns)

    def add_image(self, camera: str, stamp_ns: int, pixels: np.ndarray) -> None:
        """Store a camera image."""
        self._add(lambda: self.images.setdefault(camera, _Recent()).put(stamp_ns, pixels), stamp_ns)

    def add_pose(self, topic: str, stamp_ns: int, pose: bytes) -> None:
        """Store a PoseStamped (CDR; only the latest ``KEEP`` stamps per topic)."""
        self._add(lambda: self.poses.setdefault(topic, _Recent()).put(stamp_ns, pose), stamp_ns)

    def add_status(self, status: SimStatus) -> None:
        """Store a sim status with its arrival time; it announces the observation stamped ``status.stamp_ns``."""

        with self.condition:
            self.statuses.append((time.perf_counter(), status))
            del self.statuses[:-KEEP]
            self.announced_ns = max(self.announced_ns, status.stamp_ns)
            self.condition.notify_all()

    def find_status(self, predicate: Callable[[SimStatus], bool]) -> tuple[float, SimStatus] | None:
        """The latest status matching ``predicate`` (call with the condition held, or accept a race)."""
        for arrival, status in reversed(self.statuses):
            if predicate(status):
                return arrival, status
        return None

    def wait(self, predicate: Callable[[], bool], *, timeout: float, what: str, poll: float | None = None) -> None:
        """Block until ``predicate()`` (evaluated with the lock held) is true: re-evaluated when a sample is
        stored, and every ``poll`` seconds if given (for predicates on on-demand sources, which notify nobody).

        Raises:
            GraphError: ``timeout`` seconds passed first, or the process was asked to stop (``STOP``; whoever
                asks notifies ``condition``).
        """
        deadline = time.monotonic() + timeout
        with self.condition:
            while not predicate():
                if STOP.is_set():
                    raise GraphError(f'stopped while waiting for {what}')
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise GraphError(f'timed out after {timeout:g} s waiting for {what}')
                self.condition.wait(remaining if poll is None else min(poll, remaining))
