"""The camera pose source of a whole cell, frame by frame: detect the tags, choose each tag's plane, gate, follow
grasped objects. Pure (OpenCV and numpy); the ``aruco_tracker`` node and ``bench/bench_tracker.py`` run it.

Which plane: a resting object's tag lies at ``height`` above what it stands on: the table, or the top face of
another object of its scene whose own tag is not seen in this frame (a stacked object covers the tag of the one
below it; an object whose tag is seen supports nothing). Each candidate plane gives a pose; the one whose measured
edge is nearest the tag's true size wins (a tag 5 cm higher than assumed measures ~7 % long or short at
cam_high's distance; sub-pixel corners sit ~1.5 % inward, hence ``EXPECTED_EDGE``). Candidates closer than
``PLANE_MERGE`` are one plane. Not handled: an object resting inside a bowl (its tag is the bowl's floor, ~6 mm,
above the table plane: ~6 mm of xy error; docs/real-cell.md).

Every tracked object (all scenes' objects: tag ids are unique across scenes) gets a published pose only when its
tag passed the gates on a chosen plane (``marker``), or while a gripper holds it (``gripper``, ``tracking.grasp``),
or, with ``pnp_fallback``, from 6-DoF PnP when no plane passed (``pnp``, flagged: an order of magnitude coarser).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np

from robofollow_ros.benchmark.types import TABLE_Z, ObjectSpec
from robofollow_ros.tracking.camera import CameraPose, Intrinsics
from robofollow_ros.tracking.grasp import GraspFollower, RigidPose
from robofollow_ros.tracking.markers import MarkerConfig, ObjectMarker, top_height
from robofollow_ros.tracking.pose import Detection, Gates, ObjectPose, PoseResult, Refusal, estimate_pose

EXPECTED_EDGE = 0.985
PLANE_MERGE = 0.01
CONFIRM_FRAMES = 3


@dataclass(frozen=True)
class Published:
    """One object's pose to publish: centre ``position`` (world m), ``quat`` (w, x, y, z), ``source`` (``marker``,
    ``pnp`` or ``gripper``)."""

    name: str
    scene: int
    position: tuple[float, float, float]
    quat: tuple[float, float, float, float]
    source: str


def support_tops(
    scene_objects: Mapping[str, ObjectSpec], name: str, *, covered: Collection[str] | None = None
) -> tuple[float, ...]:
    """Heights above the table an object of a scene can stand on: the table (0) and the flat tops of the scene's
    other boxes and cylinders (stacks); with ``covered``, only of those among them (an object with something on
    its top has its own tag covered, so an object whose tag is seen supports nothing)."""
    tops = [0.0]
    for other, spec in scene_objects.items():
        if other != name and spec.shape in ('box', 'cylinder') and (covered is None or other in covered):
            tops.append(top_height(spec))
    return tuple(sorted(tops))


def tag_planes(marker: ObjectMarker, tops: tuple[float, ...]) -> tuple[float, ...]:
    """World heights of the candidate planes of ``marker``'s tag, one per distinct support (``PLANE_MERGE``)."""
    planes: list[float] = []
    for top in tops:
        z = TABLE_Z + top + marker.height
        if all(abs(z - p) >= PLANE_MERGE for p in planes):
            planes.append(z)
    return tuple(planes)


def estimate_on_planes(
    detection: Detection,
    marker: ObjectMarker,
    intrinsics: Intrinsics,
    camera: CameraPose,
    *,
    planes: tuple[float, ...],
    gates: Gates,
    previous: ObjectPose | None = None,
) -> PoseResult:
    """The pose on the candidate plane whose measured edge is nearest ``EXPECTED_EDGE`` among those passing the
    gates, or the lowest plane's refusal when none passes."""
    best: ObjectPose | None = None
    first: Refusal | None = None
    for z in sorted(planes):
        result = estimate_pose(detection, marker, intrinsics, camera, plane_z=z, gates=gates, previous=previous)
        if isinstance(result, Refusal):
            first = first or result
            continue
        if best is None or abs(result.edge_ratio - EXPECTED_EDGE) < abs(best.edge_ratio - EXPECTED_EDGE):
            best = result
    if best is not None:
        return best
    assert first is not None
    return first


class CellTracker:
    """Tags to published poses for every object of ``config`` (all scenes), frame after frame.

    Args:
        config: the marker configuration.
        scene_objects: each scene's objects (name -> spec), for the support planes and centre heights.
        gates: the pose gates (``max_jump`` is confirmed over ``CONFIRM_FRAMES`` frames as in ``PoseTracker``).
        pnp_fallback: publish a flagged 6-DoF PnP pose when no plane passes (default off: far coarser).
        grasp_radius: see ``tracking.grasp``.
    """

    def __init__(
        self,
        config: MarkerConfig,
        scene_objects: Mapping[int, Mapping[str, ObjectSpec]],
        *,
        gates: Gates | None = None,
        pnp_fallback: bool = False,
        grasp_radius: float = 0.06,
    ) -> None:
        self.gates = gates or Gates()
        self.pnp_fallback = pnp_fallback
        self._entries: list[tuple[str, ObjectMarker, ObjectSpec, int]] = []
        self._scene_objects = {scene: dict(objects) for scene, objects in scene_objects.items()}
        self._markers = {scene: dict(config.scene(scene)) for scene in scene_objects}
        for scene, objects in scene_objects.items():
            for name, marker in config.scene(scene).items():
                spec = objects.get(name)
                if spec is None:
                    continue
                self._entries.append((f'scene{scene}/{name}', marker, spec, scene))
        self._accepted: dict[str, ObjectPose] = {}
        self._pending: dict[str, list[ObjectPose]] = {}
        self.follower = GraspFollower(grasp_radius=grasp_radius)
        self.last_results: dict[str, PoseResult] = {}

    def _gated(
        self, key: str, detection: Detection, marker: ObjectMarker, planes: tuple[float, ...], view: tuple
    ) -> PoseResult:
        intrinsics, camera = view
        unlimited = Gates(self.gates.max_reprojection_px, self.gates.edge_tolerance, None)
        result = estimate_on_planes(detection, marker, intrinsics, camera, planes=planes, gates=unlimited)
        if not isinstance(result, ObjectPose):
            return result
        last = self._accepted.get(key)
        limit = self.gates.max_jump
        if last is None or limit is None or math.hypot(result.x - last.x, result.y - last.y) <= limit:
            self._accepted[key] = result
            self._pending.pop(key, None)
            return result
        # A jump is believed only when CONFIRM_FRAMES consecutive frames agree (a carried object, not an outlier).
        pending = self._pending.setdefault(key, [])
        if pending and math.hypot(result.x - pending[-1].x, result.y - pending[-1].y) > limit:
            pending.clear()
        pending.append(result)
        if len(pending) < CONFIRM_FRAMES:
            jump = math.hypot(result.x - last.x, result.y - last.y)
            return Refusal(marker.name, marker.id, 'jump', f'jumped {jump * 1000:.0f} mm from the last accepted pose')
        self._accepted[key] = result
        del self._pending[key]
        return result

    def update(
        self,
        detections: Mapping[int, Detection],
        intrinsics: Intrinsics,
        camera: CameraPose,
        *,
        tcps: Mapping[str, RigidPose] | None = None,
        closed: Mapping[str, bool] | None = None,
    ) -> list[Published]:
        """This frame's poses to publish, from its detections and the arms' TCP poses and gripper states."""
        seen: dict[str, RigidPose | None] = {}
        fallback: dict[str, ObjectPose] = {}
        centre_offset: dict[str, float] = {}
        self.last_results = {}
        covered = {
            scene: {n for n, m in markers.items() if m.id not in detections} for scene, markers in self._markers.items()
        }
        for key, marker, spec, scene in self._entries:
            planes = tag_planes(marker, support_tops(self._scene_objects[scene], marker.name, covered=covered[scene]))
            # The centre is half the object's height above what it stands on; the tag ``height`` above it.
            centre_offset[key] = spec.half_height - marker.height
            detection = detections.get(marker.id)
            if detection is None:
                result: PoseResult = Refusal(marker.name, marker.id, 'not_detected', 'not detected')
            else:
                result = self._gated(key, detection, marker, planes, (intrinsics, camera))
                if isinstance(result, Refusal) and self.pnp_fallback and result.gate != 'jump':
                    pnp = estimate_pose(detection, marker, intrinsics, camera, plane_z=None, gates=self.gates)
                    if isinstance(pnp, ObjectPose):
                        fallback[key] = pnp
            self.last_results[key] = result
            if isinstance(result, ObjectPose):
                seen[key] = RigidPose.from_yaw(result.x, result.y, result.z + centre_offset[key], result.yaw)
            elif self.follower.last(key) is not None or self.follower.held_by(key) is not None:
                seen[key] = None
        followed = self.follower.update(seen, tcps or {}, closed or {})
        published: list[Published] = []
        for key, _, _, _ in self._entries:
            scene_name, name = key.split('/', 1)
            scene = int(scene_name.removeprefix('scene'))
            item = followed.get(key)
            if item is not None:
                pose = item.pose
                position = (float(pose.position[0]), float(pose.position[1]), float(pose.position[2]))
                quat = tuple(float(v) for v in pose.quaternion())
                published.append(Published(name, scene, position, quat, item.source))  # type: ignore[arg-type]
            elif key in fallback:
                pnp = fallback[key]
                upright = RigidPose.from_yaw(pnp.x, pnp.y, pnp.z + centre_offset[key], pnp.yaw)
                quat = tuple(float(v) for v in upright.quaternion())
                published.append(Published(name, scene, tuple(upright.position.tolist()), quat, 'pnp'))  # type: ignore[arg-type]
        return published


def yaw_of(quat: tuple[float, float, float, float] | np.ndarray) -> float:
    """The yaw (rad) of a (w, x, y, z) quaternion."""
    w, x, y, z = (float(v) for v in quat)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
