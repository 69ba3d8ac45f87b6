"""``replay``: a policy that plays the joint positions of a recorded episode back as action chunks.

Sources: an episode bag whose ``/joint_states`` carries all 14 joints (``load_episode``), or a
``robofollow-trajectory/1`` JSON file whose frames carry a ``joints`` list of 14 values in the state
layout. Bags recorded over the ROS graph (``robofollow eval --record bag`` without ``--in-process``) or
by ``robofollow collect --format bag`` carry the arm joints; an in-process eval bag holds the grippers
only and is refused. Each ``predict`` returns the next ``rows`` recorded positions; once the recording is
used up the last position is held.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from robofollow_ros.bags.reader import load_episode
from robofollow_ros.benchmark.constants import ACTIONS_PER_QUERY
from robofollow_ros.errors import PolicyError, RoboFollowError
from robofollow_ros.state_layout import ACTION_DIM


def _json_joints(path: Path) -> np.ndarray:
    try:
        document = json.loads(path.read_text(encoding='utf-8'))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PolicyError(f'cannot read the replay file {path}: {error}') from error
    frames = document.get('frames') if isinstance(document, dict) else None
    if not isinstance(frames, list) or not frames:
        raise PolicyError(f'{path}: not a trajectory document with frames')
    if not all(isinstance(frame, dict) and 'joints' in frame for frame in frames):
        raise PolicyError(f'{path}: its frames have no "joints" (14 joint positions) to replay')
    try:
        return np.asarray([frame['joints'] for frame in frames], dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise PolicyError(f'{path}: "joints" are not numbers: {error}') from error


def _bag_joints(path: Path) -> np.ndarray:
    try:
        return load_episode(path).joint_positions
    except RoboFollowError as error:
        raise PolicyError(f'cannot replay {path}: {error}') from error


def load_joint_rows(path: str | Path) -> np.ndarray:
    """The (n, 14) recorded joint positions of an episode bag or trajectory JSON file.

    Raises:
        PolicyError: the source is missing, unreadable, or has no frame with all 14 joints.
    """
    source = Path(path)
    if not source.exists():
        raise PolicyError(f'replay source {source} does not exist')
    joints = _json_joints(source) if source.suffix == '.json' else _bag_joints(source)
    if joints.ndim != 2 or joints.shape[1] != ACTION_DIM:
        raise PolicyError(f'{source}: expected {ACTION_DIM} joint positions per frame, got shape {list(joints.shape)}')
    complete = np.isfinite(joints).all(axis=1)
    if not complete.any():
        raise PolicyError(
            f'{source}: no frame has all {ACTION_DIM} joint positions (the recording lacks arm joints; in-process '
            'bags hold only the grippers: record the episode over the ROS graph, without --in-process)'
        )
    return joints[complete].astype(np.float32)


def check_replay_options(kwargs: Mapping[str, Any]) -> None:
    """Refuse replay options no trial could run with (``policy.preflight``): no path, or a source without joints.

    Raises:
        PolicyError: what is wrong.
    """
    path = kwargs.get('path')
    if not isinstance(path, str) or not path:
        raise PolicyError('--policy replay needs --policy-kwargs \'{"path": "<episode bag or trajectory JSON>"}\'')
    load_joint_rows(path)


class ReplayPolicy:
    """Replays a recording, ``rows`` joint positions per query.

    Args:
        path: episode bag (directory, ``.mcap`` or ``.db3``) or trajectory JSON with per-frame ``joints``.
        rows: recorded positions per returned chunk.
        stride: keep every ``stride``-th recorded position.
    """

    needs_images = False

    def __init__(self, path: str, *, rows: int = ACTIONS_PER_QUERY, stride: int = 1) -> None:
        if rows < 1 or stride < 1:
            raise PolicyError('replay: rows and stride must be at least 1')
        self.rows = rows
        self.positions = load_joint_rows(path)[::stride]
        self._cursor = 0

    def reset(self) -> None:
        """Start again from the first recorded position."""
        self._cursor = 0

    def set_instruction(self, text: str) -> None:
        """Ignored: a replay does what was recorded."""

    def predict(self, observation: Any) -> np.ndarray:
        """The next ``rows`` recorded positions, or the last one once the recording is used up."""
        chunk = self.positions[self._cursor : self._cursor + self.rows]
        if chunk.shape[0] == 0:
            return self.positions[-1:].copy()
        self._cursor += chunk.shape[0]
        return chunk.copy()
