"""What an episode bag holds: message types, joint names, frames and reading thresholds, in one place.

Gripper convention: the ``left_gripper`` / ``right_gripper`` entries of ``/joint_states`` are NORMALISED
opening values, 1 = fully open and 0 = closed (DESIGN §3), not metres or radians. A real-cell driver that
publishes physical gripper positions must be rescaled (per-cell profile) before it is recorded for scoring.
"""

from __future__ import annotations

from typing import Literal

from robofollow_ros.referee.timeline import MAX_GAP_S, NS_PER_S

__all__ = ['MAX_GAP_S', 'NS_PER_S']

Storage = Literal['mcap', 'sqlite3']
STORAGES: tuple[Storage, ...] = ('mcap', 'sqlite3')
STORAGE_SUFFIXES: dict[str, Storage] = {'.mcap': 'mcap', '.db3': 'sqlite3'}
ROSBAG2_VERSION = 9

STRING = 'std_msgs/msg/String'
JOINT_STATE = 'sensor_msgs/msg/JointState'
POSE_STAMPED = 'geometry_msgs/msg/PoseStamped'
IMAGE = 'sensor_msgs/msg/Image'


EPISODE_KEYS: tuple[str, ...] = (
    'task_id',
    'level',
    'layout',
    'seed',
    'round',
    'arm',
    'instruction',
    'variant',
    'frames_are_rows',
)
"""Keys of the /robofollow/episode JSON written by the evaluator (the reader returns whatever is there)."""

IMAGE_ENCODING = 'rgb8'


def camera_frame(camera: str) -> str:
    """Optical frame id stamped on the images of ``camera``."""
    return f'{camera}_optical_frame'
