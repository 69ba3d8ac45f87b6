"""``FrameCapture``: an episode environment that keeps what a demonstration needs from every recorded frame.

It wraps the simulated cell (``CellEnv``) and executes each action chunk one row at a time, so that the three
camera images and the 14-D state of every trajectory frame are kept, together with the absolute 14-D row that was
commanded from it.

Frames are exactly ``ROW_SECONDS`` apart. The executor gives a row more time when its joints or gripper cannot
get there in ``ROW_SECONDS`` (a full gripper stroke takes 0.2 s, a long joint move up to ~0.17 s), which would make
the frame period uneven (a 0.2 s step at every grasp). Such a row is executed as several rows along the same
straight line, each short enough to take exactly ``ROW_SECONDS``; each is recorded as its own frame and action, so
the demonstration's actions replay at the same speed in the executor. The referee scores the captured trajectory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from robofollow_ros.benchmark.types import Layout, Task
from robofollow_ros.errors import SimulationError
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.sim.constants import ROW_SECONDS, TIMESTEP

ROW_STEPS = round(ROW_SECONDS / TIMESTEP)
"""Physics steps of a row that takes exactly ``ROW_SECONDS`` (the executor's shortest row)."""
PIECE_SHARE = 0.9
"""A split row's piece asks for at most this share of ``ROW_STEPS``, so that rounding up still gives ``ROW_STEPS``."""
MAX_PIECES = 200


@dataclass(frozen=True)
class CapturedFrames:
    """Frames of one episode.

    Attributes:
        states: (N, 14) float32 observed state of every recorded frame.
        actions: (N - 1, 14) float32 absolute target commanded from frame t (the row that led to frame t + 1).
        images: camera name -> (N, H, W, 3) uint8 RGB; empty when images were not captured.
        times: (N,) simulated seconds of every frame since the reset.
    """

    states: np.ndarray
    actions: np.ndarray
    images: dict[str, np.ndarray]
    times: np.ndarray

    def __len__(self) -> int:
        return int(self.states.shape[0])


class FrameCapture:
    """Wraps a ``CellEnv`` (an evaluation ``Environment``: reset / execute / trajectory) and captures every frame.

    Args:
        env: the simulated cell.
        images: capture the camera images of every frame (otherwise only states and actions).
    """

    def __init__(self, env: Any, *, images: bool = True) -> None:
        self.env = env
        self.images = images
        self._states: list[np.ndarray] = []
        self._actions: list[np.ndarray] = []
        self._images: dict[str, list[np.ndarray]] = {}
        self._times: list[float] = []

    def _keep(self, observation: Any) -> None:
        self._states.append(np.asarray(observation.state, dtype=np.float32).copy())
        self._times.append(float(observation.time))
        for name, image in observation.images.items():
            self._images.setdefault(name, []).append(image)

    def reset(self, task: Task, *, seed: int, layout: Layout | None = None, images: bool = False) -> Any:
        """Reset the cell and keep frame 0 (with images when capturing them or when ``images`` asks)."""
        self._states, self._actions, self._images, self._times = [], [], {}, []
        observation = self.env.reset(task, seed=seed, layout=layout, images=self.images or images)
        self._keep(observation)
        return observation

    def execute(self, actions: np.ndarray, *, images: bool = False) -> Any:
        """Execute ``actions`` row by row, keeping each commanded row and the frame it led to."""
        from robofollow_ros.policy.base import validate_chunk

        observation = None
        for row in validate_chunk(actions):
            for piece in self._pieces(row):
                observation = self.env.execute(piece[None, :], images=self.images or images)
                self._actions.append(piece)
                self._keep(observation)
        return observation

    def _pieces(self, row: np.ndarray) -> list[np.ndarray]:
        """``row`` split into targets along its line that each take exactly ``ROW_SECONDS`` (``row`` last)."""
        executor = getattr(self.env, 'executor', None)
        if executor is None:
            return [row.copy()]
        steps = executor.row_steps(row)
        if steps <= ROW_STEPS:
            return [row.copy()]
        # The executor's line starts from the measured joints and the commanded grip (its ``state``), so the pieces
        # divide that line; ``ceil`` pieces of at most PIECE_SHARE of a row each.
        start = executor.state()
        count = int(np.ceil(steps / (ROW_STEPS * PIECE_SHARE)))
        if count > MAX_PIECES:
            raise SimulationError(f'a row needs {steps} physics steps; the executor allows rows of any length')
        return [start + (row - start) * (k / count) for k in range(1, count)] + [row.copy()]

    def trajectory(self) -> Trajectory:
        """The wrapped environment's trajectory (what the referee scores)."""
        return self.env.trajectory()

    def frames(self) -> CapturedFrames:
        """Everything kept since the last reset."""
        return CapturedFrames(
            states=np.asarray(self._states, dtype=np.float32).reshape(-1, 14),
            actions=np.asarray(self._actions, dtype=np.float32).reshape(-1, 14),
            images={name: np.stack(frames) for name, frames in self._images.items()},
            times=np.asarray(self._times, dtype=np.float64),
        )

    def close(self) -> None:
        """Close the wrapped environment."""
        self.env.close()
