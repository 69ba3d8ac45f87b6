"""The scene objects as a ``visualization_msgs/MarkerArray`` for RViz and Foxglove (``bags.markers`` describes
them; a bag stores the same markers)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from visualization_msgs.msg import Marker, MarkerArray

from robofollow_ros import topics
from robofollow_ros.bags.markers import NAMESPACE
from robofollow_ros.bags.markers import scene_markers as describe_markers
from robofollow_ros.benchmark.types import Layout
from robofollow_ros.ros.messages import to_time


def scene_markers(
    layout: Layout,
    positions: Mapping[str, np.ndarray],
    quats: Mapping[str, np.ndarray],
    *,
    stamp_ns: int,
) -> MarkerArray:
    """One marker per scene item at its current pose, coloured and sized from its spec."""
    markers = MarkerArray()
    for described in describe_markers(layout, positions, quats):
        marker = Marker(ns=NAMESPACE, id=described.id, type=described.type, action=Marker.ADD, text=described.text)
        marker.header.stamp = to_time(stamp_ns)
        marker.header.frame_id = topics.WORLD_FRAME
        p, o = marker.pose.position, marker.pose.orientation
        p.x, p.y, p.z = described.position
        o.w, o.x, o.y, o.z = described.quat_wxyz
        marker.scale.x, marker.scale.y, marker.scale.z = described.scale
        marker.color.r, marker.color.g, marker.color.b, marker.color.a = described.rgba
        markers.markers.append(marker)
    return markers
