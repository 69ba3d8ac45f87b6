"""What a suite run evaluates, where it writes, and how many simulators run it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robofollow_ros.benchmark.types import Variant
from robofollow_ros.evaluation.episode import EpisodeLimits
from robofollow_ros.evaluation.episode_files import RecordMode
from robofollow_ros.evaluation.guard import DEFAULT_POLICY_MEMORY_MIB, DEFAULT_QUERY_TIMEOUT
from robofollow_ros.policy.isolation.output_log import LOG_FOLDER
from robofollow_ros.policy.isolation.sandbox import SandboxOptions
from robofollow_ros.robot.specs import DEFAULT_ROBOT

DEFAULT_RAY_START_TIMEOUT = 120.0
"""Seconds Ray may take to start (``--ray-start-timeout``): its own 30 s ran out 3 times in 3 on a busy machine."""


@dataclass(frozen=True)
class SuiteOptions:
    """What to evaluate, where to write it, and on how many simulators.

    ``workers`` simulators run the trials at once: worker processes on this machine, or Ray actors when
    ``use_ray`` is set (on the cluster at ``ray_address``, or a Ray instance started for the run when it is
    ``None``; ``workers`` 0 means one actor per CPU of the cluster). One process (the caller) writes every
    file in either case. Ray may take ``ray_start_timeout`` seconds to start its instance, or to let this process
    join the cluster.

    A ``module:function`` policy runs in its own sandboxed process capped at ``policy_memory_limit`` MiB (0: no
    cap), unless ``trusted_policy`` runs it in the simulator's process (``robofollow_ros.evaluation.guard``); it
    may write only to ``policy_scratch`` (a folder outside ``out``; ``None``: a private tmpfs) and reach only
    ``policy_network`` (``host:port``; ``None``: no network). ``policy_python`` runs that process under another
    Python, the one whose environment has the policy's dependencies (``None``: this one; LeRobot's by default for
    ``--policy lerobot``).
    """

    out: Path
    policy: str
    policy_kwargs: dict[str, Any] = field(default_factory=dict)
    scenes: Sequence[int] | None = None
    levels: Sequence[int] | None = None
    pattern: str | None = None
    task_ids: Sequence[str] | None = None
    rounds: int = 1
    first_round: int = 1
    variant: Variant = 'published'
    record: RecordMode = 'none'
    video: bool = False
    limits: EpisodeLimits = field(default_factory=EpisodeLimits)
    query_timeout: float = DEFAULT_QUERY_TIMEOUT
    trusted_policy: bool = False
    policy_memory_limit: int = DEFAULT_POLICY_MEMORY_MIB
    policy_scratch: Path | None = None
    policy_network: str | None = None
    policy_python: str | None = None
    force_new: bool = False
    retry_errors: bool = False
    robot: str = DEFAULT_ROBOT
    workers: int = 1
    ray_address: str | None = None
    use_ray: bool = False
    ray_start_timeout: float = DEFAULT_RAY_START_TIMEOUT

    def sandbox(self) -> SandboxOptions:
        """The sandbox of this suite's policy: its logs in ``out/policy-logs``, ``out`` itself out of its sight."""
        return SandboxOptions(
            log_dir=self.out / LOG_FOLDER, hidden=(self.out,), scratch=self.policy_scratch, network=self.policy_network
        )
