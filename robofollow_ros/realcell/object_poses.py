"""Where the objects on a real cell are now: the latest pose of each ``/robofollow/objects/<name>/pose``, for the
evaluator's layout check before a trial (``realcell/operator.py``).

A pose counts only if it arrived after a given moment (the check's start: after the cell was reset or the operator
said ready) and, when it is stamped, was stamped after that moment too, so an object the pose source stopped
reporting, or a pose from before the objects were placed, is not taken for where the object is now (a tracker
answers an image some time after it was taken: the image of the cell before its reset can be answered after the
check began). The reader is best effort, volatile, depth 1: it matches any publisher
(fake hardware's and the tracker's reliable, transient-local writers as well as a motion-capture driver's best-effort
ones) and is never handed old samples.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Collection

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from robofollow_ros import topics
from robofollow_ros.ros.messages import from_time

READER_QOS = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.BEST_EFFORT,
    durability=DurabilityPolicy.VOLATILE,
)
"""Only the newest pose matters, and none from before the reader matched."""


def yaw_of_orientation(w: float, x: float, y: float, z: float) -> float:
    """Yaw about world z (radians) of a unit quaternion."""
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


class ObjectPoses:
    """Subscribes to every scene item's pose topic and keeps, per object, its newest (x, y, yaw) and when it arrived
    (``time.monotonic``). Callbacks run on the node's executor; reading is thread-safe.

    Args:
        node: the node that subscribes (its executor spins the callbacks).
        names: the objects to follow (default: every scene item of the registry).
    """

    def __init__(self, node: Node, *, names: Collection[str] | None = None) -> None:
        self.lock = threading.Lock()
        self.latest: dict[str, tuple[float, PoseStamped]] = {}
        self.refused: set[str] = set()
        self.node = node
        for name in sorted(names if names is not None else topics.all_object_names()):
            node.create_subscription(
                PoseStamped, topics.object_pose_topic(name), lambda m, n=name: self.on_pose(n, m), READER_QOS
            )

    def on_pose(self, name: str, message: PoseStamped) -> None:
        """Keep the message (converted only when a check reads it: the source may publish at 50 Hz)."""
        with self.lock:
            self.latest[name] = (time.monotonic(), message)

    def since(self, moment: float, *, stamp_ns: int = 0) -> dict[str, tuple[float, float, float]]:
        """Each object's (x, y, yaw) from the newest pose that arrived after ``moment`` (``time.monotonic``) and is
        stamped at or after ``stamp_ns`` (ROS time; a pose with a zero stamp counts by its arrival alone); a pose
        that is not finite is left out (and logged once per object)."""
        with self.lock:
            fresh = {
                name: message
                for name, (arrived, message) in self.latest.items()
                if arrived > moment and ((stamped := from_time(message.header.stamp)) == 0 or stamped >= stamp_ns)
            }
        poses: dict[str, tuple[float, float, float]] = {}
        for name, message in fresh.items():
            p, q = message.pose.position, message.pose.orientation
            pose = (float(p.x), float(p.y), yaw_of_orientation(q.w, q.x, q.y, q.z))
            if all(math.isfinite(value) for value in pose):
                poses[name] = pose
            elif name not in self.refused:
                self.refused.add(name)
                self.node.get_logger().warning(f'{topics.object_pose_topic(name)}: a pose that is not finite ignored')
        return poses
