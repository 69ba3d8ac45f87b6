"""One evaluation episode (protocol §1.6): reset, instruction, up to 10 queries of up to 50 executed rows."""

from __future__ import annotations

import time
from dataclasses import dataclass

from robofollow_ros.benchmark.constants import ACTIONS_PER_QUERY, MAX_QUERIES
from robofollow_ros.benchmark.types import Layout, Task
from robofollow_ros.evaluation.environment import Environment, EnvironmentObservation
from robofollow_ros.evaluation.guard import FailureKind, GuardedPolicy, PolicyFailure
from robofollow_ros.policy.observation import Observation
from robofollow_ros.referee.trajectory import Trajectory


@dataclass(frozen=True)
class EpisodeLimits:
    """How many times the policy is queried and how many rows of each chunk are executed."""

    max_queries: int = MAX_QUERIES
    actions_per_query: int = ACTIONS_PER_QUERY


@dataclass(frozen=True)
class EpisodeOutcome:
    """What an episode produced: its trajectory, and the policy failure that ended it early, if any."""

    trajectory: Trajectory
    queries: int
    executed_rows: int
    policy_error: str | None
    error_kind: FailureKind | None
    wall_seconds: float


def policy_view(observation: EnvironmentObservation, *, privileged: bool) -> object:
    """What the policy is shown: the full environment observation if privileged, else images and state only."""
    return observation if privileged else Observation.from_environment(observation)


def run_episode(
    env: Environment,
    policy: GuardedPolicy,
    task: Task,
    *,
    seed: int,
    layout: Layout,
    limits: EpisodeLimits | None = None,
) -> EpisodeOutcome:
    """Run ``policy`` on ``task`` in ``env`` and return the recorded trajectory.

    A privileged policy (``policy.privileged``) is told the task and layout and sees the environment's full
    observation; any other policy sees only ``Observation`` (images, state) and the instruction. A policy
    that fails (raises, times out, returns an invalid chunk) stops being queried; the arms hold where they
    are and the episode is scored over what was recorded, with the failure reported in the outcome.
    """
    limits = limits or EpisodeLimits()
    started = time.perf_counter()
    images = policy.needs_images
    observation = env.reset(task, seed=seed, layout=layout, images=images)
    queries = executed = 0
    failure: PolicyFailure | None = None
    try:
        policy.reset()
        if policy.privileged:
            policy.bind_task(task, layout)
        policy.set_instruction(task.instruction)
        for _ in range(limits.max_queries):
            view = policy_view(observation, privileged=policy.privileged)
            chunk = policy.predict(view, max_rows=limits.actions_per_query)
            queries += 1
            observation = env.execute(chunk, images=images)
            executed += chunk.shape[0]
    except PolicyFailure as error:
        failure = error
    return EpisodeOutcome(
        trajectory=env.trajectory(),
        queries=queries,
        executed_rows=executed,
        policy_error=None if failure is None else str(failure),
        error_kind=None if failure is None else failure.kind,
        wall_seconds=time.perf_counter() - started,
    )
