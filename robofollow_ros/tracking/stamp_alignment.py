"""The arms as they were when an image was taken: TCP poses and gripper states at the image's stamp.

An image reaches the tracker some time after it was taken, and the TCP poses and joint states it is combined with
arrive on their own topics, sooner or later. Taking the latest of each, as they happened to have arrived, put a
carried object where the TCP was up to half a second from the image (1.4 s under load), and a grasp's offset taken
from such a TCP carried the object 38 mm too low for a whole carry. ``StampAligner`` keeps the last few seconds of
each arm's stamped TCP poses and gripper states and answers for a stamp: the TCP there (positions interpolated
between the two samples around it, the rotation of the nearer), whether the gripper was closed, and, for a gripper
that closed since the previous image, the TCP at the moment it closed (where the grasp's offset belongs).
``covers`` says whether every arm's samples have reached a stamp yet; the node waits for that, a bounded time.

Pure: stamps in nanoseconds on one clock (the cell's wall clock in the real-time graph).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from robofollow_ros.tracking.grasp import RigidPose

KEEP_NS = 3_000_000_000
"""How far back each arm's samples are kept (an image older than this is answered with the oldest kept)."""


@dataclass
class _Arm:
    tcps: deque[tuple[int, RigidPose]] = field(default_factory=deque)
    grips: deque[tuple[int, bool]] = field(default_factory=deque)


@dataclass(frozen=True)
class Aligned:
    """The arms at one stamp: each arm's TCP, whether its gripper was closed, and the TCP at the closing of each
    gripper that closed since the previous stamp asked (``closing``)."""

    tcps: dict[str, RigidPose]
    closed: dict[str, bool]
    closing: dict[str, RigidPose]


def _trim(samples: deque, newest_ns: int) -> None:
    while len(samples) > 2 and samples[0][0] < newest_ns - KEEP_NS:
        samples.popleft()


class StampAligner:
    """Stamped TCP poses and gripper states of any number of arms (module docstring)."""

    def __init__(self) -> None:
        self.arms: dict[str, _Arm] = {}

    def add_tcp(self, arm: str, stamp_ns: int, pose: RigidPose) -> None:
        """A TCP pose of ``arm`` stamped ``stamp_ns`` (samples may arrive out of order)."""
        samples = self.arms.setdefault(arm, _Arm()).tcps
        _insert(samples, stamp_ns, pose)
        _trim(samples, samples[-1][0])

    def add_grip(self, arm: str, stamp_ns: int, closed: bool) -> None:
        """Whether ``arm``'s gripper was closed at ``stamp_ns``."""
        samples = self.arms.setdefault(arm, _Arm()).grips
        _insert(samples, stamp_ns, closed)
        _trim(samples, samples[-1][0])

    def covers(self, stamp_ns: int) -> bool:
        """Whether every arm heard from has TCP and gripper samples stamped at or after ``stamp_ns``."""
        return all(
            all(samples[-1][0] >= stamp_ns for samples in (arm.tcps, arm.grips) if samples)
            for arm in self.arms.values()
        )

    def closed_at(self, arm: str, stamp_ns: int) -> bool:
        """Whether ``arm``'s gripper was closed at ``stamp_ns`` (False for an arm never heard from)."""
        samples = self.arms.get(arm)
        return bool(samples and samples.grips and _state_at(samples.grips, stamp_ns))

    def at(self, stamp_ns: int, *, since_ns: int | None) -> Aligned:
        """The arms at ``stamp_ns``; ``closing`` for grippers that closed after ``since_ns`` (the previous image's
        stamp; None: none before) and at or before ``stamp_ns``. Past the newest sample, the newest stands."""
        tcps: dict[str, RigidPose] = {}
        closed: dict[str, bool] = {}
        closing: dict[str, RigidPose] = {}
        for name, arm in self.arms.items():
            if arm.tcps:
                tcps[name] = _pose_at(arm.tcps, stamp_ns)
            if not arm.grips:
                continue
            closed[name] = _state_at(arm.grips, stamp_ns)
            if closed[name] and arm.tcps:
                closed_since = _closed_since(arm.grips, since_ns, stamp_ns)
                if closed_since is not None:
                    closing[name] = _pose_at(arm.tcps, closed_since)
        return Aligned(tcps, closed, closing)


def _insert(samples: deque, stamp_ns: int, value: object) -> None:
    if not samples or samples[-1][0] <= stamp_ns:
        samples.append((stamp_ns, value))
        return
    items = list(samples)
    items.insert(bisect_right([s for s, _ in items], stamp_ns), (stamp_ns, value))
    samples.clear()
    samples.extend(items)


def _pose_at(samples: deque[tuple[int, RigidPose]], stamp_ns: int) -> RigidPose:
    stamps = [s for s, _ in samples]
    after = bisect_right(stamps, stamp_ns)
    if after == 0:
        return samples[0][1]
    if after == len(samples):
        return samples[-1][1]
    (t0, p0), (t1, p1) = samples[after - 1], samples[after]
    share = (stamp_ns - t0) / (t1 - t0) if t1 > t0 else 0.0
    rotation = p0.rotation if share < 0.5 else p1.rotation
    return RigidPose(p0.position + share * (p1.position - p0.position), rotation)


def _state_at(samples: Iterable[tuple[int, bool]], stamp_ns: int) -> bool:
    state: bool | None = None
    for stamp, value in samples:
        if stamp > stamp_ns:
            break
        state = value
    return bool(next(iter(samples))[1]) if state is None else state


def _closed_since(samples: deque[tuple[int, bool]], since_ns: int | None, stamp_ns: int) -> int | None:
    """The stamp of the last open -> closed change in (since_ns, stamp_ns], or None."""
    change: int | None = None
    previous: bool | None = None
    for stamp, value in samples:
        if stamp > stamp_ns:
            break
        if value and previous is False and (since_ns is None or stamp > since_ns):
            change = stamp
        previous = value
    return change
