"""One evaluation episode (protocol §1.6): reset, instruction, up to 10 queries of up to 50 executed rows."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from robofollow_ros.benchmark.types import Layout, Task
from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.base import validate_chunk
from robofollow_ros.referee.trajectory import Trajectory


@dataclass(frozen=True)
class EpisodeLimits:
    """How many times the policy is queried and how many rows of each chunk are executed."""

    max_queries: int = 10
    actions_per_query: int = 50


@dataclass(frozen=True)
class EpisodeOutcome:
    """What an episode produced: its trajectory, and the policy failure that ended it early, if any."""

    trajectory: Trajectory
    queries: int
    executed_rows: int
    policy_error: str | None
    wall_seconds: float


def run_episode(
    env: Any,
    policy: Any,
    task: Task,
    *,
    seed: int,
    layout: Layout,
    limits: EpisodeLimits | None = None,
) -> EpisodeOutcome:
    """Run ``policy`` on ``task`` in ``env`` and return the recorded trajectory.

    A policy that raises or returns an invalid chunk stops being queried; the arms hold where they are
    and the episode is scored over what was recorded, with the error reported in the outcome.
    """
    limits = limits or EpisodeLimits()
    started = time.perf_counter()
    observation = env.reset(task, seed=seed, layout=layout)
    policy.reset()
    bind = getattr(policy, 'bind_task', None)
    if bind is not None:
        bind(task, layout)
    policy.set_instruction(task.instruction)
    queries = executed = 0
    policy_error: str | None = None
    for _ in range(limits.max_queries):
        try:
            chunk = validate_chunk(policy.predict(observation), max_rows=limits.actions_per_query)
        except PolicyError as error:
            policy_error = str(error)
            break
        except Exception as error:  # a policy is user code: any failure is reported, never fatal to the run
            policy_error = f'policy raised {type(error).__name__}: {error}'
            break
        queries += 1
        observation = env.execute(chunk)
        executed += chunk.shape[0]
    return EpisodeOutcome(
        trajectory=env.trajectory(),
        queries=queries,
        executed_rows=executed,
        policy_error=policy_error,
        wall_seconds=time.perf_counter() - started,
    )
