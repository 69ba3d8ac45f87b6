"""One simulator and one guarded policy that turn trials into result records, wherever they run.

A ``TrialRunner`` is what every way of running a suite shares: this process (``InProcessTrials``), local
worker processes (``robofollow_ros.evaluation.workers``) and Ray actors (``robofollow_ros.evaluation.ray_workers``)
each hold one and call ``run`` per trial, so a record never depends on where its trial ran. Writing (results,
episodes) stays with the single writer that consumes the ``TrialResult`` values.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from robofollow_ros.benchmark import registry
from robofollow_ros.evaluation.dispatch import TrialQueue, new_binding, run_pool
from robofollow_ros.evaluation.episode import run_episode
from robofollow_ros.evaluation.guard import GuardedPolicy, PolicyFailure
from robofollow_ros.evaluation.identity import RunIdentity
from robofollow_ros.evaluation.limited_policy import LimitedPolicy
from robofollow_ros.evaluation.options import SuiteOptions
from robofollow_ros.evaluation.records import Trial, build_failure_record, make_record
from robofollow_ros.policy.factory import PolicyFactory, resolve_policy
from robofollow_ros.policy.isolation.sandbox import SandboxOptions, protect_this_process
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.safety.chunk_limits import DEFAULT_MAX_ROW_STEP, ChunkLimits

WALL_CLOCK_FIELDS = frozenset({'wall_seconds'})
"""Record fields that measure wall-clock time; every other field is the same wherever a trial runs."""


@dataclass(frozen=True)
class TrialResult:
    """A finished trial: its record, its trajectory when the run saves episodes, its frames for a video."""

    key: tuple[str, int]
    record: dict[str, Any]
    trajectory: Trajectory | None = None
    video_frames: dict[str, np.ndarray] | None = None


class PolicySlot:
    """Holds the current policy instance; builds a fresh one when there is none or it was abandoned. Its chunks are
    checked against ``limits`` as the graph's policy bridge checks them (``LimitedPolicy``)."""

    def __init__(
        self,
        factory: PolicyFactory,
        *,
        limits: ChunkLimits,
        timeout: float,
        memory_limit_mib: int,
        sandbox: SandboxOptions | None = None,
    ) -> None:
        self.factory = factory
        self.limits = limits
        self.timeout = timeout
        self.memory_limit_mib = memory_limit_mib
        self.sandbox = sandbox
        self.policy: GuardedPolicy | None = None

    def get(self) -> GuardedPolicy:
        """The live instance, built on first use or after the previous one was abandoned."""
        if self.policy is None or self.policy.abandoned:
            self.close()
            self.policy = LimitedPolicy(
                self.factory,
                limits=self.limits,
                timeout=self.timeout,
                memory_limit_mib=self.memory_limit_mib,
                sandbox=self.sandbox,
            )
        return self.policy

    def close(self) -> str | None:
        """Close the instance, if any; returns what went wrong while closing it."""
        policy, self.policy = self.policy, None
        return None if policy is None else policy.close()


class TrialRunner:
    """A simulator and a policy slot; ``run`` plays and scores one trial.

    Args:
        options: the suite's options (policy, limits, variant, record mode).
        identity: the run identity stamped on every record.
        policy_kwargs: keyword arguments for this runner's policy instead of ``options.policy_kwargs``
            (a policy-server pool gives each runner its own endpoint).
    """

    def __init__(
        self, options: SuiteOptions, *, identity: RunIdentity, policy_kwargs: dict[str, Any] | None = None
    ) -> None:
        from robofollow_ros.sim.env import CellEnv

        protect_this_process()
        self.options = options
        self.identity = identity
        self.slot = self._slot(policy_kwargs)
        self.cell = CellEnv(render=False, robot=options.robot)
        self.cell.preload()
        self.env: Any = self.cell
        if options.video:
            from robofollow_ros.sim.capture import FrameCapture

            self.env = FrameCapture(self.cell)

    def _slot(self, policy_kwargs: dict[str, Any] | None) -> PolicySlot:
        kwargs = self.options.policy_kwargs if policy_kwargs is None else policy_kwargs
        factory = resolve_policy(
            self.options.policy, kwargs=kwargs, trusted=self.options.trusted_policy, python=self.options.policy_python
        )
        return PolicySlot(
            factory,
            timeout=self.options.query_timeout,
            memory_limit_mib=self.options.policy_memory_limit,
            sandbox=self.options.sandbox(),
            limits=ChunkLimits.for_robot(self.options.robot, max_row_step=DEFAULT_MAX_ROW_STEP),
        )

    def rebind(self, policy_kwargs: dict[str, Any] | None) -> str | None:
        """Use a policy built from ``policy_kwargs`` from now on; returns a problem met closing the old one."""
        problem = self.slot.close()
        self.slot = self._slot(policy_kwargs)
        return problem

    def run(self, trial: Trial) -> TrialResult:
        """Play ``trial`` and score it (a policy that cannot be built gives an unscored record)."""
        layout = registry.layout_of(trial.task)
        try:
            policy = self.slot.get()
        except PolicyFailure as failure:
            return TrialResult(trial.key, build_failure_record(trial, failure, identity=self.identity))
        outcome = run_episode(self.env, policy, trial.task, seed=trial.seed, layout=layout, limits=self.options.limits)
        record = make_record(trial, outcome, layout=layout, options=self.options, identity=self.identity)
        trajectory = outcome.trajectory if self.options.record != 'none' else None
        frames = self.env.frames().images if self.options.video else None
        return TrialResult(trial.key, record, trajectory, frames)

    def close(self) -> str | None:
        """Close the simulator and the policy; returns a problem met while closing the policy."""
        problem = self.slot.close()
        self.cell.close()
        return problem

    def __enter__(self) -> TrialRunner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class InProcessTrials:
    """Runs trials one after another in this process (the one-process run)."""

    def __init__(self, options: SuiteOptions, *, identity: RunIdentity) -> None:
        self.options = options
        self.identity = identity
        self.problems: list[str] = []

    def results(self, todo: Sequence[Trial]) -> Generator[TrialResult, None, None]:
        """Each trial's result as soon as it is finished."""
        queue = TrialQueue(todo)
        pool = run_pool(self.options)
        binding = new_binding(self.options, pool)
        runner = TrialRunner(self.options, identity=self.identity, policy_kwargs=binding.policy_kwargs)
        try:
            while queue:
                trial = queue.take()
                result = runner.run(trial)
                if pool is not None and binding.endpoint is not None and pool.lost(binding.endpoint, result.record):
                    queue.put_back(trial, reason=f'policy server {binding.endpoint} is down', lost_simulator=False)
                    binding = new_binding(self.options, pool)
                    self._note(runner.rebind(binding.policy_kwargs))
                    continue
                yield result
        finally:
            self._note(runner.close())

    def _note(self, problem: str | None) -> None:
        if problem:
            self.problems.append(problem)
