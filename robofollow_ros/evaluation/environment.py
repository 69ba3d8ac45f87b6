"""The environment an episode runs in: the protocol ``run_episode`` drives, simulated or real.

An environment is reset for a trial, executes action chunks and keeps the trajectory the referee scores.
``robofollow_ros.sim.env.CellEnv`` implements it in-process; a ROS-backed environment (topics in, trajectory
out) implements the same three methods, so one episode loop serves both.

Both return a ``robofollow_ros.cell_observation.CellObservation``. Observations returned by an environment carry
at least ``images`` and ``state`` (see
``robofollow_ros.policy.observation.Observation``). ``run_episode`` strips everything else before a user
policy sees it. The privileged channel is the rest of that observation: an environment that can serve the
built-in reference policies (expert, blind) also fills the scene's ground-truth poses
(``PrivilegedObservation``); only policies the factory marks privileged receive the full observation and
the task itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from robofollow_ros.benchmark.types import Layout, Task
from robofollow_ros.referee.trajectory import Trajectory


@runtime_checkable
class EnvironmentObservation(Protocol):
    """What an environment reports after a reset or an executed chunk: at least the images and the state."""

    @property
    def images(self) -> Mapping[str, np.ndarray]:
        """Camera name -> (H, W, 3) uint8 RGB (empty when images were not requested)."""

    @property
    def state(self) -> np.ndarray:
        """The 14-D joint state."""


@runtime_checkable
class PrivilegedObservation(EnvironmentObservation, Protocol):
    """An observation that also carries ground-truth poses (the privileged channel; world frame, w-x-y-z)."""

    @property
    def object_pos(self) -> Mapping[str, np.ndarray]:
        """Scene item -> position (3,)."""

    @property
    def object_quat(self) -> Mapping[str, np.ndarray]:
        """Scene item -> orientation (4,)."""

    @property
    def ee_pos(self) -> Mapping[Any, np.ndarray]:
        """Arm -> TCP position (3,)."""

    @property
    def ee_quat(self) -> Mapping[Any, np.ndarray]:
        """Arm -> TCP orientation (4,)."""


@runtime_checkable
class Environment(Protocol):
    """A cell an episode runs in (simulated or real)."""

    def reset(self, task: Task, *, seed: int, layout: Layout, images: bool) -> EnvironmentObservation:
        """Set the cell up for one trial of ``task`` (layout, seeded perturbation) and observe it.

        Args:
            task: the trial's task.
            seed: the trial seed (protocol §1.7).
            layout: the layout to set up.
            images: whether observations of this episode must carry camera images.
        """

    def execute(self, actions: np.ndarray, *, images: bool) -> EnvironmentObservation:
        """Execute every row of a validated float32 (T, 14) chunk of joint targets, then observe."""

    def trajectory(self) -> Trajectory:
        """The frames recorded since the last reset, for the referee."""
