"""What the real-time bridge may put in an observation (``realcell/environment.py``, ``unusable_parts``).

The joint state, the TCP poses and the images must be fresh (they drive the arms and show the cell now); an object's
pose is the latest known one of this episode however old, since a tracker publishes no pose while the object's tag
is hidden (docs/real-cell.md: the bridge waited for ever while the arm that hid a tag held still).
"""

from __future__ import annotations

from robofollow_ros import topics
from robofollow_ros.realcell.environment import unusable_parts

S = 1_000_000_000
NOW = 100 * S
START = 90 * S
SPHERE = topics.object_pose_topic('red_sphere')
BLOCK = topics.object_pose_topic('yellow_block_2')
TCP = topics.ee_pose_topic('left')
IMAGE = topics.image_topic('cam_high')


def problems(**stamps: int | None) -> dict[str, str]:
    named = {
        'joint state': stamps.get('state', NOW),
        TCP: stamps.get('tcp', NOW),
        IMAGE: stamps.get('image', NOW),
        SPHERE: stamps.get('sphere', NOW),
        BLOCK: stamps.get('block', NOW),
    }
    return unusable_parts(named, now_ns=NOW, max_age=0.5, latest_known={SPHERE, BLOCK}, since_ns=START)


def test_an_occluded_objects_last_pose_of_this_episode_is_used_however_old() -> None:
    assert problems() == {}
    # Hidden under a gripper for 9.9 s (seen once just after the episode started): still its pose.
    assert problems(sphere=START + S // 10, block=NOW - 3 * S) == {}


def test_an_object_not_seen_since_the_episode_started_is_never_used() -> None:
    # A pose from before the reset belongs to the previous layout.
    assert problems(sphere=START - 1) == {SPHERE: 'not seen since the episode started'}
    assert problems(block=None) == {BLOCK: 'not seen since the episode started'}


def test_the_joint_state_tcp_poses_and_images_must_be_fresh() -> None:
    assert problems(state=NOW - S // 2) == {}  # the limit itself is fresh enough
    stale = problems(state=NOW - 6 * S // 10, tcp=NOW - S, image=None, sphere=START)
    assert stale == {
        'joint state': '0.6 s old (limit 0.5 s)',
        TCP: '1 s old (limit 0.5 s)',
        IMAGE: 'never received',
    }
