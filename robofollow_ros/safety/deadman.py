"""``DeadMan``: the arms hold when the policy has not answered a query within a deadline.

Pure: the clock is passed in (``time.monotonic`` in a node, a fake in tests). The bridge calls ``query_sent`` when
it asks the policy, ``poll`` on every control tick (a hold comes out once, the moment the deadline passes) and
``answer_arrived`` when the chunk comes: an answer after the deadline is late and must be dropped, because the
arms already hold and the observation it answers is old.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from robofollow_ros.errors import SafetyError
from robofollow_ros.safety.command_filter import MeasuredState, SafetyDecision, hold_command
from robofollow_ros.safety.limits import Intervention, SafetyLimits

Clock = Callable[[], float]
"""Seconds on a monotonic clock."""


class DeadMan:
    """Watches one outstanding policy query at a time.

    Args:
        deadline_s: how long the policy may take to answer a query.
        clock: the time source (seconds, monotonic).
    """

    def __init__(self, *, deadline_s: float, clock: Clock) -> None:
        if not (np.isfinite(deadline_s) and deadline_s > 0.0):
            raise SafetyError(f'dead-man deadline must be a positive number of seconds, got {deadline_s}')
        self.deadline_s = float(deadline_s)
        self._clock = clock
        self._sent_at: float | None = None
        self._fired = False

    @property
    def waiting(self) -> bool:
        """Whether a query is outstanding."""
        return self._sent_at is not None

    def query_sent(self) -> None:
        """Start the countdown for a new query (a previous one that never came back is forgotten)."""
        self._sent_at = self._clock()
        self._fired = False

    def waited(self) -> float:
        """Seconds since the outstanding query was sent (0 when none is outstanding)."""
        return 0.0 if self._sent_at is None else self._clock() - self._sent_at

    def overdue(self) -> bool:
        """Whether the outstanding query has passed its deadline."""
        return self._sent_at is not None and self.waited() > self.deadline_s

    def answer_arrived(self) -> bool:
        """Stop the countdown; ``True`` if the answer came in time, ``False`` if it is late (drop it) or answers no
        outstanding query."""
        in_time = self._sent_at is not None and not self.overdue()
        self._sent_at = None
        self._fired = False
        return in_time

    def poll(self, state: MeasuredState, limits: SafetyLimits, *, row_period_s: float) -> SafetyDecision | None:
        """A hold at ``state`` the first time the outstanding query is found overdue; ``None`` otherwise (in time,
        nothing outstanding, or the hold already given for this query).

        The hold reports ``policy_silent`` (value: seconds waited, limit: the deadline).
        """
        if self._fired or not self.overdue():
            return None
        self._fired = True
        silent = Intervention('policy_silent', None, None, self.waited(), self.deadline_s)
        return hold_command(state, limits, row_period_s=row_period_s, reasons=(silent,))
