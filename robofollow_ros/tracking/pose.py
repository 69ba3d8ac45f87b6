"""Object poses from ArUco detections: the plane constraint for resting objects, PnP only where no plane is known
(flagged), and the gates every pose passes (reprojection error, edge length, jump from the last accepted pose).

A pose that could not be computed or failed a gate is never returned as a pose: the result is a ``Refusal`` with
the reason. Why the plane: full 6-DoF PnP of a 3 cm tag is off by 4-12 mm (median) at 640x480, because sub-pixel
corners sit slightly inward and the short edge biases the depth; a resting object's tag lies on a known horizontal
plane, so each corner's ray meets it at one point and only xy and yaw are left to fit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from robofollow_ros.tracking.camera import CameraPose, Intrinsics, intersect_plane, project
from robofollow_ros.tracking.markers import ObjectMarker, corners_local

Method = Literal['plane', 'pnp']
Gate = Literal['not_detected', 'off_plane', 'ambiguous_plane', 'pnp', 'reprojection', 'edge', 'jump']


@dataclass(frozen=True)
class Gates:
    """Limits a pose must meet to be published.

    ``max_reprojection_px``: RMS distance between the detected corners and the reprojected square fitted to them
    (scaled to the measured edge): the shape check, which a corner moved by a finger fails. ``edge_tolerance``:
    the mean measured edge within this fraction of the configured size: a tag of another size fails it (sub-pixel
    corners sit inward, so edges measure 2-15 % short on small, far or low-resolution tags; the centre and yaw are
    not biased by that). ``max_jump``: metres from the last accepted pose of the same object (None: no limit).
    """

    max_reprojection_px: float = 1.2
    edge_tolerance: float = 0.15
    max_jump: float | None = 0.05


@dataclass(frozen=True)
class Detection:
    """One detected tag: its id and its four corners (4, 2) in OpenCV's order, in pixels."""

    id: int
    corners: np.ndarray


@dataclass(frozen=True)
class ObjectPose:
    """An object's pose from its tag: centre x, y (world metres), the tag's plane z, yaw (rad, (-pi, pi]).

    ``method`` is ``plane`` (resting object, tag plane known) or ``pnp`` (no plane known: 6-DoF PnP, far coarser;
    ``z`` is then measured, not assumed). ``reprojection_px`` and ``edge_ratio`` (mean measured edge / size) are
    what the gates saw.
    """

    name: str
    marker_id: int
    x: float
    y: float
    z: float
    yaw: float
    method: Method
    reprojection_px: float
    edge_ratio: float


@dataclass(frozen=True)
class Refusal:
    """No pose for ``name``: ``gate`` is what refused it, ``reason`` says why in one line."""

    name: str
    marker_id: int
    gate: Gate
    reason: str


PoseResult = ObjectPose | Refusal


def make_detector(*, corner_window: float = 0.7) -> Any:
    """An ArUco detector for DICT_4X4_50 with sub-pixel corner refinement (OpenCV's default refines nothing,
    which roughly doubles the error); ``corner_window`` is the refinement window in modules (at most 6 px)."""
    import cv2

    params = cv2.aruco.DetectorParameters()
    params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
    # The window scales with the tag's module (0.7 of a module, at most 6 px): OpenCV's default (0.3) lets the
    # inner bits pull corners sideways (0.36 px tangential, 1.6 degrees yaw median on a 3 cm tag at 640x480,
    # against 0.18 px here; measured on bench_tracker's synthetic images).
    params.cornerRefinementWinSize = 6
    params.relativeCornerRefinmentWinSize = corner_window
    params.cornerRefinementMaxIterations = 50
    params.cornerRefinementMinAccuracy = 0.01
    # Reading the bits from 8 px per cell instead of 4 doubles detections of 3 cm tags at 320x240 (17 % -> 33 %).
    params.perspectiveRemovePixelPerCell = 8
    dictionary = cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50)
    return cv2.aruco.ArucoDetector(dictionary, params)


def detect(detector: Any, image: np.ndarray) -> dict[int, Detection]:
    """The tags seen in ``image`` (grey or BGR) by id; an id seen twice is dropped (it cannot be told apart)."""
    import cv2

    grey = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    corners, ids, _ = detector.detectMarkers(grey)
    found: dict[int, Detection] = {}
    twice: set[int] = set()
    if ids is None:
        return found
    for tag, quad in zip(ids.reshape(-1), corners, strict=True):
        key = int(tag)
        if key in found:
            twice.add(key)
        found[key] = Detection(id=key, corners=np.asarray(quad, dtype=np.float64).reshape(4, 2))
    for key in twice:
        del found[key]
    return found


def fit_rigid_2d(local: np.ndarray, world: np.ndarray) -> tuple[np.ndarray, float]:
    """The rotation-and-translation (no scale) taking ``local`` points (N, 2) closest to ``world`` (N, 2) in least
    squares: (translation (2,), angle)."""
    local_mean = local.mean(axis=0)
    world_mean = world.mean(axis=0)
    a = local - local_mean
    b = world - world_mean
    angle = math.atan2(float(np.sum(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])), float(np.sum(a * b)))
    c, s = math.cos(angle), math.sin(angle)
    rotation = np.array([[c, -s], [s, c]])
    return world_mean - rotation @ local_mean, angle


def _edge_ratio(points: np.ndarray, size: float) -> float:
    return float(np.mean(np.linalg.norm(points - np.roll(points, -1, axis=0), axis=1)) / size)


def _wrap(angle: float) -> float:
    return math.atan2(math.sin(angle), math.cos(angle))


def estimate_pose(
    detection: Detection,
    marker: ObjectMarker,
    intrinsics: Intrinsics,
    camera: CameraPose,
    *,
    plane_z: float | None,
    gates: Gates = Gates(),
    previous: ObjectPose | None = None,
) -> PoseResult:
    """The object's pose from its tag's detection.

    ``plane_z`` is the world height of the tag's plane (for an object resting on the table: table top +
    ``marker.height``); None when unknown, which falls back to PnP and flags the pose ``pnp``. ``previous`` is
    the object's last accepted pose, for the jump gate.
    """
    corners = np.asarray(detection.corners, dtype=np.float64).reshape(4, 2)
    local = corners_local(marker.size)
    if plane_z is None:
        result = _pnp(detection, marker, intrinsics, camera, local)
        if isinstance(result, Refusal):
            return result
        centre, yaw, z, tag_points = result
        method: Method = 'pnp'
    else:
        hits = intersect_plane(intrinsics, camera, corners, z=plane_z)
        if hits is None:
            return Refusal(marker.name, marker.id, 'off_plane', 'the corner rays do not meet the tag plane')
        tag_points = hits[:, :2]
        centre, yaw = fit_rigid_2d(local, tag_points)
        z = plane_z
        method = 'plane'
    c, s = math.cos(yaw), math.sin(yaw)
    rotation = np.array([[c, -s], [s, c]])
    ratio = _edge_ratio(tag_points, marker.size)
    # The shape check: the fitted square, scaled to the measured edge (the size is the edge gate's), reprojected
    # onto the detected corners. A corner moved by a finger or a bad refinement leaves a residual here.
    fitted = (local * ratio) @ rotation.T + centre
    reprojected = project(intrinsics, camera, np.column_stack([fitted, np.full(4, z)]))
    reprojection = float(np.sqrt(np.mean(np.sum((reprojected - corners) ** 2, axis=1))))
    if reprojection > gates.max_reprojection_px:
        return Refusal(
            marker.name,
            marker.id,
            'reprojection',
            f'reprojection error {reprojection:.2f} px > {gates.max_reprojection_px} px',
        )
    if abs(ratio - 1.0) > gates.edge_tolerance:
        return Refusal(
            marker.name,
            marker.id,
            'edge',
            f'edges measure {ratio:.0%} of the tag size {marker.size} m (tolerance {gates.edge_tolerance:.0%})',
        )
    # The object's centre: the tag sits at ``offset`` in the object's frame, which turns with the object.
    object_xy = centre - rotation @ np.asarray(marker.offset)
    pose = ObjectPose(
        name=marker.name,
        marker_id=marker.id,
        x=float(object_xy[0]),
        y=float(object_xy[1]),
        z=float(z),
        yaw=_wrap(yaw),
        method=method,
        reprojection_px=reprojection,
        edge_ratio=ratio,
    )
    if previous is not None and gates.max_jump is not None:
        jump = math.hypot(pose.x - previous.x, pose.y - previous.y)
        if jump > gates.max_jump:
            return Refusal(marker.name, marker.id, 'jump', f'jumped {jump * 1000:.0f} mm from the last accepted pose')
    return pose


def _pnp(
    detection: Detection, marker: ObjectMarker, intrinsics: Intrinsics, camera: CameraPose, local: np.ndarray
) -> tuple[np.ndarray, float, float, np.ndarray] | Refusal:
    import cv2

    object_points = np.column_stack([local, np.zeros(4)])
    ok, rvec, tvec = cv2.solvePnP(
        object_points,
        np.asarray(detection.corners, dtype=np.float64).reshape(4, 1, 2),
        intrinsics.matrix,
        intrinsics.dist,
        flags=cv2.SOLVEPNP_IPPE_SQUARE,
    )
    if not ok:
        return Refusal(marker.name, marker.id, 'pnp', 'PnP found no pose')
    r_tag, _ = cv2.Rodrigues(rvec)
    world_rotation = camera.rotation @ r_tag
    corners_world = (object_points @ r_tag.T + tvec.reshape(3)) @ camera.rotation.T + camera.position
    normal = world_rotation[:, 2]
    if normal[2] < math.cos(math.radians(30.0)):
        # Not lying flat (or a flipped solution): no yaw about the world's vertical can be read from it.
        tilt = math.degrees(math.acos(max(-1.0, min(1.0, float(normal[2])))))
        return Refusal(marker.name, marker.id, 'pnp', f'PnP tag is tilted {tilt:.0f} degrees from horizontal')
    centre = corners_world[:, :2].mean(axis=0)
    yaw = math.atan2(float(world_rotation[1, 0]), float(world_rotation[0, 0]))
    return centre, yaw, float(corners_world[:, 2].mean()), corners_world[:, :2]


def estimate_scene(
    detections: Mapping[int, Detection],
    markers: Mapping[str, ObjectMarker],
    intrinsics: Intrinsics,
    camera: CameraPose,
    *,
    plane_z: Mapping[str, float | None],
    gates: Gates = Gates(),
    previous: Mapping[str, ObjectPose] | None = None,
) -> dict[str, PoseResult]:
    """A result for every object of ``markers``: its pose, or why there is none (``not detected`` included).
    ``plane_z`` gives each object's tag plane (a missing name means unknown: PnP)."""
    results: dict[str, PoseResult] = {}
    for name, marker in markers.items():
        detection = detections.get(marker.id)
        if detection is None:
            results[name] = Refusal(name, marker.id, 'not_detected', 'not detected')
            continue
        results[name] = estimate_pose(
            detection,
            marker,
            intrinsics,
            camera,
            plane_z=plane_z.get(name),
            gates=gates,
            previous=(previous or {}).get(name),
        )
    return results


class PoseTracker:
    """Each object's last accepted pose, for the jump gate over a stream of frames.

    A pose far from the last accepted one is refused (``jump``) until ``confirm_frames`` consecutive frames show
    the object at the new place (each within the jump limit of the one before): then it is accepted, so a real
    move the camera missed (the object carried while occluded) is followed after a few frames, and a one-frame
    outlier never is.
    """

    def __init__(
        self,
        markers: Mapping[str, ObjectMarker],
        intrinsics: Intrinsics,
        camera: CameraPose,
        *,
        gates: Gates = Gates(),
        confirm_frames: int = 3,
    ) -> None:
        self._markers = dict(markers)
        self._intrinsics = intrinsics
        self._camera = camera
        self._gates = gates
        self._confirm = confirm_frames
        self._accepted: dict[str, ObjectPose] = {}
        self._pending: dict[str, list[ObjectPose]] = {}

    def last(self, name: str) -> ObjectPose | None:
        """The last accepted pose of ``name``, or None."""
        return self._accepted.get(name)

    def update(self, detections: Mapping[int, Detection], plane_z: Mapping[str, float | None]) -> dict[str, PoseResult]:
        """This frame's result for every object (see ``estimate_scene``), jump-gated against the accepted poses."""
        results = estimate_scene(
            detections,
            self._markers,
            self._intrinsics,
            self._camera,
            plane_z=plane_z,
            gates=self._gates,
            previous=self._accepted,
        )
        for name, result in results.items():
            if isinstance(result, ObjectPose):
                self._accepted[name] = result
                self._pending.pop(name, None)
            elif result.gate == 'jump':
                results[name] = self._confirm_jump(name, detections, plane_z, result)
        return results

    def _confirm_jump(
        self, name: str, detections: Mapping[int, Detection], plane_z: Mapping[str, float | None], refusal: Refusal
    ) -> PoseResult:
        marker = self._markers[name]
        unlimited = Gates(
            max_reprojection_px=self._gates.max_reprojection_px,
            edge_tolerance=self._gates.edge_tolerance,
            max_jump=None,
        )
        candidate = estimate_pose(
            detections[marker.id], marker, self._intrinsics, self._camera, plane_z=plane_z.get(name), gates=unlimited
        )
        if not isinstance(candidate, ObjectPose):
            return candidate
        pending = self._pending.setdefault(name, [])
        limit = self._gates.max_jump if self._gates.max_jump is not None else math.inf
        if pending and math.hypot(candidate.x - pending[-1].x, candidate.y - pending[-1].y) > limit:
            pending.clear()
        pending.append(candidate)
        if len(pending) < self._confirm:
            return refusal
        self._accepted[name] = candidate
        del self._pending[name]
        return candidate
