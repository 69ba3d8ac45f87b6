"""``ExpertPolicy``: the scripted, privileged expert that performs a task's ground truth.

It is told the task and layout (``bind_task``), plans each phase of the behaviour from the current
privileged observation (object poses, commanded joints) and streams the rows, at most 50 per query.
When the plan is done it returns one-row hold chunks so the episode ends quickly.
"""

from __future__ import annotations

from collections import deque
from functools import cache
from typing import Any

import numpy as np

from robofollow_ros.benchmark.constants import ACTIONS_PER_QUERY
from robofollow_ros.benchmark.types import Layout, Task
from robofollow_ros.errors import PolicyError
from robofollow_ros.robot.description import load_robot
from robofollow_ros.robot.specs import DEFAULT_ROBOT
from robofollow_ros.sim.expert.constants import IDLE_ROWS
from robofollow_ros.sim.expert.phases import Phase, PhaseContext
from robofollow_ros.sim.expert.planners import Assignment, phases_for
from robofollow_ros.sim.expert.routes import route_objects
from robofollow_ros.sim.expert.scene import SceneView
from robofollow_ros.sim.kinematics import Kinematics, UnreachablePoseError
from robofollow_ros.sim.model import CellModel
from robofollow_ros.sim.motion import MotionPlanner


@cache
def robot_motion_planner(robot: str = DEFAULT_ROBOT) -> MotionPlanner:
    """A motion planner on a robot-only model of the cell (kinematics do not depend on the objects)."""
    return MotionPlanner(Kinematics(CellModel.build([], robot=load_robot(robot))))


class ExpertPolicy:
    """Scripted expert: performs the bound task's ground truth from privileged poses.

    Args:
        rows_per_query: maximum rows returned per ``predict`` (the evaluator executes at most ``ACTIONS_PER_QUERY``).
    """

    needs_images = False

    def __init__(self, *, rows_per_query: int = ACTIONS_PER_QUERY) -> None:
        if rows_per_query < 1:
            raise PolicyError('rows_per_query must be at least 1')
        self.rows_per_query = rows_per_query
        self.instruction = ''
        self.assignment: Assignment | None = None
        self._phases: deque[Phase] = deque()
        self._pending = np.zeros((0, 14))
        self._command: np.ndarray | None = None

    def reset(self) -> None:
        """Forget the previous episode."""
        self.instruction = ''
        self.assignment = None
        self._phases = deque()
        self._pending = np.zeros((0, 14))
        self._command = None

    def set_instruction(self, text: str) -> None:
        """Kept for the record; the expert acts on the bound ground truth."""
        self.instruction = text

    def assignment_for(self, task: Task, layout: Layout) -> Assignment:
        """What to do in this episode: the task's own ground truth."""
        truth = task.resolved_truth
        return Assignment(truth=truth, layout=layout, route_objects=route_objects(truth, layout))

    def bind_task(self, task: Task, layout: Layout) -> None:
        """Receive the episode's task and layout (before the first ``predict``) and plan its phases."""
        self.assignment = self.assignment_for(task, layout)
        self._phases = deque(phases_for(self.assignment))
        self._pending = np.zeros((0, 14))
        self._command = None

    def predict(self, observation: Any) -> np.ndarray:
        """The next chunk: the rest of the current phase (at most ``rows_per_query`` rows), or a short hold.

        Raises:
            PolicyError: no task is bound, or a phase cannot be planned (unreachable pose).
        """
        if self.assignment is None:
            raise PolicyError('the expert needs bind_task(task, layout) before predict')
        if self._command is None:
            self._command = np.asarray(observation.state, dtype=np.float64).copy()
        while not self._pending.shape[0] and self._phases:
            phase = self._phases.popleft()
            context = PhaseContext(
                view=SceneView.from_observation(observation, self.assignment.layout),
                command=self._command,
                motion=robot_motion_planner(getattr(observation, 'robot', DEFAULT_ROBOT)),
            )
            try:
                self._pending = np.asarray(phase(context), dtype=np.float64).reshape(-1, 14)
            except UnreachablePoseError as error:
                raise PolicyError(f'expert cannot plan {self.assignment.truth.action}: {error}') from error
        if not self._pending.shape[0]:
            return np.tile(self._command, (IDLE_ROWS, 1)).astype(np.float32)
        chunk, self._pending = self._pending[: self.rows_per_query], self._pending[self.rows_per_query :]
        self._command = chunk[-1].copy()
        return chunk.astype(np.float32)
