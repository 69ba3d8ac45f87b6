"""What local worker processes and Ray actors share: the queue of trials and a simulator's endpoint binding."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from robofollow_ros.errors import WorkerLostError
from robofollow_ros.evaluation.endpoints import EndpointPool
from robofollow_ros.evaluation.options import SuiteOptions
from robofollow_ros.evaluation.records import Trial
from robofollow_ros.evaluation.results import TrialKey

MAX_LOSSES = 3
"""A trial whose simulator dies this many times stops the run (it is what kills them)."""


class TrialQueue:
    """Trials waiting for a simulator; a trial that lost its simulator goes back to the front."""

    def __init__(self, todo: Sequence[Trial], *, max_losses: int = MAX_LOSSES) -> None:
        self.pending: deque[Trial] = deque(todo)
        self.losses: Counter[TrialKey] = Counter()
        self.max_losses = max_losses

    def __len__(self) -> int:
        return len(self.pending)

    def take(self) -> Trial:
        """The next trial to hand out."""
        return self.pending.popleft()

    def put_back(self, trial: Trial, *, reason: str, lost_simulator: bool = True) -> None:
        """Queue ``trial`` again, first in line.

        Raises:
            WorkerLostError: the trial has now lost its simulator ``max_losses`` times.
        """
        if lost_simulator:
            self.losses[trial.key] += 1
            if self.losses[trial.key] >= self.max_losses:
                raise WorkerLostError(
                    f'trial {trial.key[0]} round {trial.key[1]} lost its simulator {self.losses[trial.key]} times '
                    f'({reason}); the run stops (resume it once the cause is fixed)'
                )
        self.pending.appendleft(trial)


@dataclass(frozen=True)
class Binding:
    """The policy a new simulator builds: the run's, or one endpoint of the run's pool."""

    endpoint: str | None
    policy_kwargs: dict[str, Any] | None


def new_binding(options: SuiteOptions, pool: EndpointPool | None) -> Binding:
    """The binding of the next simulator to start (raises ``PolicyPoolError`` when the pool is empty)."""
    if pool is None:
        return Binding(endpoint=None, policy_kwargs=None)
    endpoint = pool.next_endpoint()
    return Binding(endpoint=endpoint, policy_kwargs=pool.kwargs_for(endpoint))


def run_pool(options: SuiteOptions) -> EndpointPool | None:
    """The run's policy-server pool, if its policy keyword arguments name ``endpoints``."""
    return EndpointPool.from_kwargs(options.policy_kwargs)
