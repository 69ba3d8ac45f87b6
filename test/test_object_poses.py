"""``realcell.object_poses.ObjectPoses`` over real DDS (private domain): the layout check counts a pose only if it
arrived after the check began and, when stamped, was stamped after it too (a tracker's answer to an image taken
before the cell's reset arrives after the check began)."""

from __future__ import annotations

import time

import pytest
from geometry_msgs.msg import PoseStamped
from graph_helpers import private_node, wait_until

from robofollow_ros import topics
from robofollow_ros.realcell.object_poses import ObjectPoses
from robofollow_ros.ros.messages import to_time

pytestmark = pytest.mark.ros
NOMINAL_DOMAIN = 58
NS = 1_000_000_000


def _pose(x: float, stamp_ns: int) -> PoseStamped:
    message = PoseStamped()
    message.header.stamp = to_time(stamp_ns)
    message.header.frame_id = topics.WORLD_FRAME
    message.pose.position.x = x
    message.pose.orientation.w = 1.0
    return message


def test_a_pose_stamped_before_the_check_began_does_not_count_even_when_it_arrives_after() -> None:
    with private_node(NOMINAL_DOMAIN, 'object_poses_test', spin=True) as (node, _executor):
        poses = ObjectPoses(node, names=('red_sphere', 'green_sphere'))
        red = node.create_publisher(PoseStamped, topics.object_pose_topic('red_sphere'), 10)
        green = node.create_publisher(PoseStamped, topics.object_pose_topic('green_sphere'), 10)
        wait_until(lambda: red.get_subscription_count() and green.get_subscription_count(), timeout=20, what='match')
        start, stamp_ns = time.monotonic(), node.get_clock().now().nanoseconds

        def heard(name: str, x: float) -> bool:
            with poses.lock:
                return name in poses.latest and poses.latest[name][1].pose.position.x == x

        red.publish(_pose(0.10, stamp_ns - NS // 2))  # the image of the cell before its reset
        green.publish(_pose(0.20, 0))  # a source that does not stamp: its arrival counts
        wait_until(lambda: heard('red_sphere', 0.10) and heard('green_sphere', 0.20), timeout=20, what='the poses')
        assert poses.since(start) == {'red_sphere': (0.10, 0.0, 0.0), 'green_sphere': (0.20, 0.0, 0.0)}
        assert poses.since(start, stamp_ns=stamp_ns) == {'green_sphere': (0.20, 0.0, 0.0)}
        red.publish(_pose(0.11, stamp_ns + NS // 10))  # the first image after the reset
        wait_until(lambda: heard('red_sphere', 0.11), timeout=20, what='the fresh pose')
        assert poses.since(start, stamp_ns=stamp_ns)['red_sphere'] == (0.11, 0.0, 0.0)
        assert poses.since(time.monotonic(), stamp_ns=stamp_ns) == {}, 'nothing arrived since'
