"""``LimitedPolicy``: the evaluator's ``GuardedPolicy`` plus the bridge's chunk limits and per-query timing."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from robofollow_ros.evaluation.guard import DEFAULT_POLICY_MEMORY_MIB, GuardedPolicy, PolicyFailure
from robofollow_ros.policy.factory import PolicyFactory
from robofollow_ros.policy.isolation.sandbox import SandboxOptions
from robofollow_ros.safety.chunk_limits import ChunkLimits


class LimitedPolicy(GuardedPolicy):
    """A guarded policy (its own process or worker thread, deadline per call, shape and finiteness checked) whose
    chunks must also keep every target inside ``limits``' joint limits and every row within ``limits.max_row_step``
    of the last (in real mode neither is bounded: the safety filter decides by the robot profile), with the grippers
    moved at their speed (``limits.gripper_reach``, real mode).

    Raises:
        PolicyFailure: as ``GuardedPolicy``; kind ``invalid_chunk`` for a chunk outside the limits.
    """

    def __init__(
        self,
        factory: PolicyFactory,
        *,
        limits: ChunkLimits,
        timeout: float,
        memory_limit_mib: int = DEFAULT_POLICY_MEMORY_MIB,
        sandbox: SandboxOptions | None = None,
    ) -> None:
        super().__init__(factory, timeout=timeout, memory_limit_mib=memory_limit_mib, sandbox=sandbox)
        self.limits = limits
        self.predict_seconds: list[float] = []

    def reset(self) -> None:
        """Reset the policy and the per-query timing."""
        self.predict_seconds = []
        super().reset()

    def predict(self, observation: Any, *, max_rows: int | None = None) -> np.ndarray:
        """The checked chunk (its grippers moved at their speed in real mode)."""
        started = time.perf_counter()
        try:
            chunk = super().predict(observation, max_rows=max_rows)
        finally:
            self.predict_seconds.append(time.perf_counter() - started)
        try:
            state = np.asarray(observation.state)
            self.limits.check(chunk, state)
        except PolicyFailure:
            raise
        except Exception as error:
            raise PolicyFailure(str(error), kind='invalid_chunk') from error
        return self.limits.shape(chunk, state)
