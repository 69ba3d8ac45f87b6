"""What an episode bag holds: message types, joint names, frames and reading thresholds, in one place.

Joint convention: ``/joint_states`` carries the robot's URDF joint names (``state_layout.JointLayout``, built per
robot by ``robot.description.joint_layout``): six revolute joints per arm in radians, and each gripper as its finger
joints' position in metres, the normalised opening (1 = fully open, 0 = closed, protocol §1.3) times the finger
travel of the URDF. Readers map names to the 14-D layout through the layout of the robot the episode names, and
still read bags recorded before joints were named after the robot (``state_layout.GENERIC_LAYOUT``: ``left_joint1`` ..
``left_gripper``, grippers normalised).
"""

from __future__ import annotations

from typing import Literal

from robofollow_ros.referee.timeline import MAX_GAP_S
from robofollow_ros.units import NS_PER_S

__all__ = ['MAX_GAP_S', 'NS_PER_S']

Storage = Literal['mcap', 'sqlite3']
STORAGES: tuple[Storage, ...] = ('mcap', 'sqlite3')
STORAGE_SUFFIXES: dict[str, Storage] = {'.mcap': 'mcap', '.db3': 'sqlite3'}
ROSBAG2_VERSION: Literal[9] = 9

STRING = 'std_msgs/msg/String'
JOINT_STATE = 'sensor_msgs/msg/JointState'
POSE_STAMPED = 'geometry_msgs/msg/PoseStamped'
IMAGE = 'sensor_msgs/msg/Image'
MARKER_ARRAY = 'visualization_msgs/msg/MarkerArray'


EPISODE_KEYS: tuple[str, ...] = (
    'task_id',
    'level',
    'layout',
    'seed',
    'round',
    'arm',
    'instruction',
    'variant',
    'robot',
    'frames_are_rows',
)
"""Keys of the meta data the evaluator records with an episode (its spec fields on /robofollow/episode, ``robot`` and
``frames_are_rows`` on /robofollow/episode_meta: ``bags/episode_meta.py``; the reader returns whatever is there)."""

IMAGE_ENCODING = 'rgb8'
