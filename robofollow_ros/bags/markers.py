"""The scene objects as ``visualization_msgs/MarkerArray`` for RViz and Foxglove, described without ROS.

``scene_markers`` says what each marker shows; ``encode_scene_markers`` serialises them through the rosbags
typestore (what a bag stores, no rclpy) and ``ros.markers`` builds the rclpy messages the sim node publishes from
the same description, so a recorded bag and the live graph show the same markers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from rosbags.typesys.store import Typestore

from robofollow_ros import topics
from robofollow_ros.bags.conventions import MARKER_ARRAY
from robofollow_ros.benchmark.types import Layout, ObjectSpec
from robofollow_ros.units import NS_PER_S

NAMESPACE = 'robofollow_objects'
CUBE, SPHERE, CYLINDER = 1, 2, 3
"""``visualization_msgs/Marker`` type constants."""
ADD = 0
"""``visualization_msgs/Marker.ADD``."""


@dataclass(frozen=True)
class SceneMarker:
    """One scene item's marker: ``id`` is its index in the layout, ``text`` its name, poses in the world frame."""

    id: int
    text: str
    type: int
    scale: tuple[float, float, float]
    position: tuple[float, float, float]
    quat_wxyz: tuple[float, float, float, float]
    rgba: tuple[float, float, float, float]


def _shape(spec: ObjectSpec) -> tuple[int, tuple[float, float, float]]:
    size = spec.size
    if spec.shape == 'sphere':
        return SPHERE, (2 * size[0],) * 3
    if spec.shape == 'cylinder':
        return CYLINDER, (2 * size[0], 2 * size[0], 2 * size[1])
    if spec.shape == 'bowl':
        return CYLINDER, (2 * size[0], 2 * size[0], size[1])
    return CUBE, (2 * size[0], 2 * size[1], 2 * size[2])


def scene_markers(
    layout: Layout, positions: Mapping[str, np.ndarray], quats: Mapping[str, np.ndarray]
) -> list[SceneMarker]:
    """One marker per scene item that has a pose, coloured and sized from its spec."""
    markers = []
    for index, name in enumerate(layout.object_names):
        if name not in positions:
            continue
        spec = layout.spec(name)
        kind, scale = _shape(spec)
        x, y, z = (float(v) for v in positions[name])
        w, qx, qy, qz = (float(v) for v in quats[name])
        r, g, b, a = (float(v) for v in spec.rgba)
        markers.append(SceneMarker(index, name, kind, scale, (x, y, z), (w, qx, qy, qz), (r, g, b, a)))
    return markers


def encode_scene_markers(
    typestore: Typestore,
    layout: Layout,
    positions: Mapping[str, np.ndarray],
    quats: Mapping[str, np.ndarray],
    *,
    stamp_ns: int,
) -> memoryview:
    """CDR of the ``scene_markers`` MarkerArray at ``stamp_ns``, as a bag stores it."""
    t = typestore.types
    sec, nanosec = divmod(int(stamp_ns), NS_PER_S)
    stamp = t['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec)
    header = t['std_msgs/msg/Header'](stamp=stamp, frame_id=topics.WORLD_FRAME)
    no_header = t['std_msgs/msg/Header'](stamp=t['builtin_interfaces/msg/Time'](sec=0, nanosec=0), frame_id='')
    empty = np.zeros(0, dtype=np.uint8)
    messages = []
    for marker in scene_markers(layout, positions, quats):
        w, qx, qy, qz = marker.quat_wxyz
        pose = t['geometry_msgs/msg/Pose'](
            position=t['geometry_msgs/msg/Point'](*marker.position),
            orientation=t['geometry_msgs/msg/Quaternion'](x=qx, y=qy, z=qz, w=w),
        )
        messages.append(
            t['visualization_msgs/msg/Marker'](
                header=header,
                ns=NAMESPACE,
                id=marker.id,
                type=marker.type,
                action=ADD,
                pose=pose,
                scale=t['geometry_msgs/msg/Vector3'](*marker.scale),
                color=t['std_msgs/msg/ColorRGBA'](*marker.rgba),
                lifetime=t['builtin_interfaces/msg/Duration'](sec=0, nanosec=0),
                frame_locked=False,
                points=[],
                colors=[],
                texture_resource='',
                texture=t['sensor_msgs/msg/CompressedImage'](header=no_header, format='', data=empty),
                uv_coordinates=[],
                text=marker.text,
                mesh_resource='',
                mesh_file=t['visualization_msgs/msg/MeshFile'](filename='', data=empty),
                mesh_use_embedded_materials=False,
            )
        )
    return typestore.serialize_cdr(t[MARKER_ARRAY](markers=messages), MARKER_ARRAY)
