"""The LeRobot feature names of the 14-D cell: the ones ``robofollow collect --format lerobot`` writes
(``data.lerobot``) and the LeRobot backend maps observations to by default (``policy.lerobot_policy``)."""

from __future__ import annotations

IMAGE_PREFIX = 'observation.images.'
STATE_FEATURE = 'observation.state'
ACTION_FEATURE = 'action'


def image_key(camera: str) -> str:
    """The LeRobot feature key of a camera."""
    return f'{IMAGE_PREFIX}{camera}'
