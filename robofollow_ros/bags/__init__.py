"""rosbag2 recording and reading of evaluation episodes through ``rosbags`` (no ROS installation needed).

An episode bag holds /robofollow/episode (JSON meta data), /joint_states (the robot's URDF joint names; each gripper as
its first finger's position, normalised opening x finger travel), /robofollow/ee/<arm>/pose,
/robofollow/objects/<name>/pose, optionally /<camera>/image_raw, and /robofollow/result at the end. See docs/bags.md.
"""

from __future__ import annotations

from robofollow_ros.bags.conventions import MAX_GAP_S
from robofollow_ros.bags.reader import (
    CameraStream,
    EpisodeRecording,
    load_episode,
    read_episode_bag,
    read_episode_meta,
    read_episode_result,
)
from robofollow_ros.bags.writer import write_episode_bag
from robofollow_ros.state_layout import GENERIC_LAYOUT, JointLayout

__all__ = [
    'GENERIC_LAYOUT',
    'MAX_GAP_S',
    'CameraStream',
    'EpisodeRecording',
    'JointLayout',
    'load_episode',
    'read_episode_bag',
    'read_episode_meta',
    'read_episode_result',
    'write_episode_bag',
]
