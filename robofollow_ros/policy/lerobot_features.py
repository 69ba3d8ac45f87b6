"""The LeRobot feature names of the 14-D cell: the ones ``robofollow collect --format lerobot`` writes
(``data.lerobot``) and the LeRobot backend maps observations to by default (``policy.lerobot_policy``)."""

from __future__ import annotations

IMAGE_PREFIX = 'observation.images.'
STATE_FEATURE = 'observation.state'
ACTION_FEATURE = 'action'
JOINT_NAMES = (
    *(f'left_joint_{i}' for i in range(6)),
    'left_gripper',
    *(f'right_joint_{i}' for i in range(6)),
    'right_gripper',
)
"""Names of the 14 values, as the published LeRobot conversion names them (protocol §8.3)."""


def image_key(camera: str) -> str:
    """The LeRobot feature key of a camera."""
    return f'{IMAGE_PREFIX}{camera}'
