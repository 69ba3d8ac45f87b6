"""``RoboFollowEnv``: one RoboFollow task as a Gymnasium environment, in LeRobot's simulated-env conventions.

Observation: ``pixels`` (camera name -> (H, W, 3) uint8 RGB), ``agent_pos`` (the 14-D state) and ``instruction``.
Action: one absolute 14-D joint target per step (protocol §1.5), executed as one action row. An episode ends
(``terminated``) when the referee's completion rule is met by the frames so far, and is truncated by the protocol
budget of 10 x 50 rows (the registered ``max_episode_steps``). Reward is 1 on the completing step, else 0 (the
success convention of gym-aloha). At the end ``info`` carries the referee's record: stages, IS, ES, completion.
"""

from __future__ import annotations

import inspect
import string
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.parsing import parse_variant
from robofollow_ros.benchmark.types import Task
from robofollow_ros.errors import PolicyError, RoboFollowError, TrajectoryError
from robofollow_ros.robot.description import load_robot
from robofollow_ros.sim.constants import IMAGE_HEIGHT, IMAGE_WIDTH
from robofollow_ros.state_layout import CAMERAS

MAX_INSTRUCTION = 400
INSTRUCTION_CHARSET = frozenset(string.printable)


class RoboFollowEnv(gym.Env):
    """One RoboFollow task (or a random task of a scene and level at every reset) in the simulated cell.

    Args:
        task_id: an evaluation task or training label; ``None`` picks one of ``scene``/``level`` at each reset.
        round: protocol round (1-10); the layout seed is the protocol's seed of (task, round).
        robot: robot of the cell, when the simulator offers a choice (default: the simulator's default).
        scene, level: the task pool when ``task_id`` is ``None``.
        variant: ground-truth variant of the evaluation tasks.
        terminate_on_completion: end the episode as soon as the referee counts it complete.
        width, height: camera image size.
        render_mode: ``rgb_array`` (the three cameras side by side) or ``None``.
    """

    # gymnasium declares metadata per instance but reads it off the class (gymnasium.make), so it is a class variable
    metadata: ClassVar[dict[str, Any]] = {'render_modes': ['rgb_array'], 'render_fps': 17}  # type: ignore[misc]

    def __init__(
        self,
        task_id: str | None = None,
        round: int = 1,
        robot: str | None = None,
        *,
        scene: int | None = None,
        level: int | None = None,
        variant: str = 'published',
        terminate_on_completion: bool = True,
        width: int = IMAGE_WIDTH,
        height: int = IMAGE_HEIGHT,
        render_mode: str | None = 'rgb_array',
    ) -> None:
        from robofollow_ros.sim.env import CellEnv

        self.variant = parse_variant(variant)
        if task_id is not None:
            self.pool = [registry.get_task(task_id, variant=self.variant)]
        else:
            self.pool = registry.eval_tasks(scene=scene, level=level, variant=self.variant)
            if not self.pool:
                raise RoboFollowError('no evaluation task matches the given scene and level')
        if round < 1:
            raise RoboFollowError('round must be at least 1')
        self.round = round
        self.terminate_on_completion = terminate_on_completion
        self.render_mode = render_mode
        cell_options: dict[str, Any] = {'render': True, 'width': width, 'height': height}
        if robot is not None:
            if 'robot' not in inspect.signature(CellEnv).parameters:
                raise RoboFollowError(f'this simulator has one robot; robot={robot!r} cannot be chosen')
            cell_options['robot'] = robot
        self.cell = CellEnv(**cell_options)
        description = getattr(self.cell, 'robot', None) or load_robot()
        image = spaces.Box(0, 255, (height, width, 3), dtype=np.uint8)
        self.observation_space = spaces.Dict(
            {
                'pixels': spaces.Dict(dict.fromkeys(CAMERAS, image)),
                'agent_pos': spaces.Box(-2 * np.pi, 2 * np.pi, (14,), dtype=np.float64),
                'instruction': spaces.Text(max_length=MAX_INSTRUCTION, charset=INSTRUCTION_CHARSET),
            }
        )
        self.action_space = spaces.Box(
            description.state_lower().astype(np.float32), description.state_upper().astype(np.float32), dtype=np.float32
        )
        self.task: Task | None = None
        self.layout: Any = None
        self.trial_seed: int | None = None
        self._observation: Any = None
        self.record: dict[str, Any] | None = None
        self.privileged = False

    def _obs(self, observation: Any) -> dict[str, Any]:
        assert self.task is not None
        return {
            'pixels': {camera: observation.images[camera] for camera in CAMERAS},
            'agent_pos': np.asarray(observation.state, dtype=np.float64),
            'instruction': self.task.instruction,
        }

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Lay out the task's scene for its (task, round) seed and return the first observation.

        ``options`` may name ``task_id`` and ``round`` for this episode; ``seed`` seeds the choice of task
        from a scene/level pool.
        """
        super().reset(seed=seed)
        options = options or {}
        if 'task_id' in options:
            task = registry.get_task(options['task_id'], variant=self.variant)
        else:
            task = self.pool[int(self.np_random.integers(len(self.pool)))]
        round_ = int(options.get('round', self.round))
        self.task = task
        self.layout = registry.layout_of(task)
        self.trial_seed = registry.trial_seed(task.task_id, round_)
        self.round_ = round_
        self.record = None
        self.privileged = False
        self._observation = self.cell.reset(task, seed=self.trial_seed, layout=self.layout, images=True)
        return self._obs(self._observation), {'task_id': task.task_id, 'round': round_, 'seed': self.trial_seed}

    def score(self) -> dict[str, Any]:
        """The referee's record of the frames so far."""
        from robofollow_ros.referee.score import score_episode

        assert self.task is not None
        meta = {'seed': self.trial_seed, 'round': self.round_, 'variant': self.variant}
        record = score_episode(self.task, self.cell.trajectory(), layout=self.layout, meta=meta).to_record()
        record['privileged'] = self.privileged
        return record

    def step(self, action: np.ndarray) -> tuple[dict, float, bool, bool, dict]:
        """Execute one absolute 14-D target.

        Raises:
            PolicyError: the action is not 14 finite numbers (nothing moves).
        """
        if self.task is None:
            raise RoboFollowError('call reset() before step()')
        row = np.asarray(action, dtype=np.float32).reshape(-1)
        if row.shape != (14,):
            raise PolicyError(f'an action is one row of 14 values, got shape {list(np.shape(action))}')
        self._observation = self.cell.execute(row[None, :], images=True)
        try:
            self.record = self.score()
        except TrajectoryError:
            self.record = None
        complete = bool(self.record and self.record['completion_ok'])
        terminated = complete and self.terminate_on_completion
        info: dict[str, Any] = {'is_success': complete}
        if self.record is not None:
            info.update(
                intent_score=self.record['intent_score'], exec_score=self.record['exec_score'], record=self.record
            )
        return self._obs(self._observation), float(complete), terminated, False, info

    def privileged_observation(self) -> Any:
        """The simulator's full observation (object and TCP poses): for reference policies such as the expert.

        Records of an episode in which it was called say ``privileged: true``.
        """
        self.privileged = True
        return self._observation

    def render(self) -> np.ndarray | None:
        """The three cameras side by side (``rgb_array``)."""
        if self.render_mode != 'rgb_array' or self._observation is None:
            return None
        return np.concatenate([self._observation.images[camera] for camera in CAMERAS], axis=1)

    def close(self) -> None:
        """Release the simulator."""
        self.cell.close()
