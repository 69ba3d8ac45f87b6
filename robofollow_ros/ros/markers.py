"""The scene objects as a ``visualization_msgs/MarkerArray`` for RViz and Foxglove."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from visualization_msgs.msg import Marker, MarkerArray

from robofollow_ros import topics
from robofollow_ros.benchmark.types import Layout, ObjectSpec
from robofollow_ros.ros.messages import to_time

NAMESPACE = 'robofollow_objects'


def _shape(spec: ObjectSpec) -> tuple[int, tuple[float, float, float]]:
    size = spec.size
    if spec.shape == 'sphere':
        return Marker.SPHERE, (2 * size[0],) * 3
    if spec.shape == 'cylinder':
        return Marker.CYLINDER, (2 * size[0], 2 * size[0], 2 * size[1])
    if spec.shape == 'bowl':
        return Marker.CYLINDER, (2 * size[0], 2 * size[0], size[1])
    return Marker.CUBE, (2 * size[0], 2 * size[1], 2 * size[2])


def scene_markers(
    layout: Layout,
    positions: Mapping[str, np.ndarray],
    quats: Mapping[str, np.ndarray],
    *,
    stamp_ns: int,
) -> MarkerArray:
    """One marker per scene item at its current pose, coloured and sized from its spec."""
    markers = MarkerArray()
    for index, name in enumerate(layout.object_names):
        if name not in positions:
            continue
        spec = layout.spec(name)
        kind, scale = _shape(spec)
        marker = Marker(ns=NAMESPACE, id=index, type=kind, action=Marker.ADD, text=name)
        marker.header.stamp = to_time(stamp_ns)
        marker.header.frame_id = topics.WORLD_FRAME
        p, o = marker.pose.position, marker.pose.orientation
        p.x, p.y, p.z = (float(v) for v in positions[name])
        o.w, o.x, o.y, o.z = (float(v) for v in quats[name])
        marker.scale.x, marker.scale.y, marker.scale.z = scale
        marker.color.r, marker.color.g, marker.color.b, marker.color.a = (float(v) for v in spec.rgba)
        markers.markers.append(marker)
    return markers


def scene_markers_cdr(
    layout: Layout, positions: Mapping[str, np.ndarray], quats: Mapping[str, np.ndarray], *, stamp_ns: int
) -> bytes:
    """``scene_markers`` serialised (CDR), as a bag stores it."""
    from rclpy.serialization import serialize_message

    return serialize_message(scene_markers(layout, positions, quats, stamp_ns=stamp_ns))
