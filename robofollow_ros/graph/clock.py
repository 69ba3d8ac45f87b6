"""``SimClock``: simulated time for ``/clock`` and header stamps, monotonic over a whole run.

Every episode restarts the simulation at its own time zero; the clock maps episode time onto a run time line that
continues after the previous episode, so that ``/clock`` and every stamp only ever move forward.
"""

from __future__ import annotations

from robofollow_ros.units import NS_PER_S

START_NS = NS_PER_S
EPISODE_GAP_NS = NS_PER_S


class SimClock:
    """Run time in nanoseconds; ``start_episode`` opens a new episode after everything stamped so far."""

    def __init__(self, *, start_ns: int = START_NS, gap_ns: int = EPISODE_GAP_NS) -> None:
        self.gap_ns = gap_ns
        self.origin_ns = start_ns
        self.last_ns = start_ns - gap_ns

    def start_episode(self) -> int:
        """Begin an episode; returns its origin (the stamp of its time zero)."""
        self.origin_ns = self.last_ns + self.gap_ns
        self.last_ns = self.origin_ns
        return self.origin_ns

    def stamp(self, episode_seconds: float) -> int:
        """The run stamp of ``episode_seconds`` after the episode's time zero (never behind the last stamp)."""
        stamp = self.origin_ns + round(episode_seconds * NS_PER_S)
        self.last_ns = max(self.last_ns, stamp)
        return self.last_ns
