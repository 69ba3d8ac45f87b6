"""The camera pose source of a whole cell, frame by frame: detect the tags, choose each tag's plane, gate, follow
grasped objects. Pure (OpenCV and numpy); the ``aruco_tracker`` node and ``bench/bench_tracker.py`` run it.

Which plane: a resting object's tag lies at ``height`` above what it stands on: the table, or the top face of
another object of its scene whose own tag is not seen in this frame (a stacked object covers the tag of the one
below it; an object whose tag is seen supports nothing; a support whose place is known must be under the object,
``Plane``). Each candidate plane gives a pose; a higher one wins only when its measured edge is clearly nearer the
tag's true size (a tag 5 cm higher than assumed measures ~7 % long or short at cam_high's distance; sub-pixel
corners sit ~1.5 % inward, hence ``EXPECTED_EDGE``). Candidates closer than ``PLANE_MERGE`` are one plane.
Inside a bowl: an object whose pose on a bowl's floor (``BOWL_FLOOR`` above the table) lies within the floor of a
bowl whose place is known stands on that floor (6 mm cannot be told from the table by the tag's edge; a bowl never
seen offers no floor, and the object is then tracked on the table plane, ~6 mm off, unless the episode's layout put
it in that bowl). A stacked object's tag that the edge puts on another plane than the layout's is withheld.

Every tracked object (all scenes' objects: tag ids are unique across scenes) gets a published pose only when its
tag passed the gates on a chosen plane (``marker``), or while a gripper holds it (``gripper``, ``tracking.grasp``),
once where it lands when that gripper lets go (``released``: straight down onto the highest known surface under it),
while a closed gripper pushes it unseen (``pushed``: out of the fingers' way), or, with ``pnp_fallback``, from
6-DoF PnP when no plane passed (``pnp``, flagged: an order of magnitude coarser).
A support whose tag the object stacked on it covers (``start_episode``: the episode's layout says what stands on what;
Scene 4's cylinder on a cube) is published under the object on top (``support``) while that object's tag is seen on
the support's top plane: it is measured there, and the support is what holds it up; its xy is the top object's.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np

from robofollow_ros.benchmark.types import TABLE_Z, Layout, ObjectSpec
from robofollow_ros.tracking.camera import CameraPose, Intrinsics
from robofollow_ros.tracking.grasp import GraspFollower, RigidPose
from robofollow_ros.tracking.markers import MarkerConfig, ObjectMarker, top_height
from robofollow_ros.tracking.pose import Detection, Gates, ObjectPose, PoseResult, Refusal, estimate_pose

EXPECTED_EDGE = 0.985
PLANE_MERGE = 0.01
EDGE_EVIDENCE = 0.02
"""How much nearer ``EXPECTED_EDGE`` a higher plane's edge must measure to be chosen over a lower one (a true
stack of 2.6-5 cm differs by 4-7 %)."""
CONFIRM_FRAMES = 3
LIFTED_SIGHTING = 0.02
"""A held object's tag seen from above while it is lifted: its plane pose (which assumes the object rests) lies
where the camera's ray through the lifted tag meets that plane. A sighting within this distance (m) of that point is
the held object seen lifted, and the grasp goes on; one elsewhere ends it (the object slipped out or was set down)."""


@dataclass(frozen=True)
class Published:
    """One object's pose to publish: centre ``position`` (world m), ``quat`` (w, x, y, z), ``source`` (``marker``,
    ``pnp``, ``gripper``, ``released``, ``pushed`` or ``support``)."""

    name: str
    scene: int
    position: tuple[float, float, float]
    quat: tuple[float, float, float, float]
    source: str

    @classmethod
    def at(cls, name: str, scene: int, pose: RigidPose, source: str) -> Published:
        """``name``'s ``pose`` to publish."""
        x, y, z = (float(v) for v in pose.position)
        w, qx, qy, qz = (float(v) for v in pose.quaternion())
        return cls(name, scene, (x, y, z), (w, qx, qy, qz), source)


@dataclass(frozen=True)
class Plane:
    """A candidate plane of a tag: world height ``z``; ``footprints`` (x, y, radius) where the object's centre must
    lie to stand on it (a support whose place is known), or None (the table, or a support never seen);
    ``inside_bowl``: a bowl's floor (a pose within a known bowl's floor stands on it, not on the table)."""

    z: float
    footprints: tuple[tuple[float, float, float], ...] | None = None
    inside_bowl: bool = False

    def holds(self, x: float, y: float) -> bool:
        """Whether an object centred at (x, y) can stand on this plane."""
        return self.footprints is None or any(math.hypot(x - fx, y - fy) <= r for fx, fy, r in self.footprints)


def support_tops(
    scene_objects: Mapping[str, ObjectSpec], name: str, *, covered: Collection[str] | None = None
) -> tuple[tuple[float, str | None], ...]:
    """What an object of a scene can stand on, as (height of the top above the table, support name): the table
    (0, None) and the flat tops of the scene's other boxes and cylinders (stacks); with ``covered``, only of those
    among them (an object with something on its top has its own tag covered, so one whose tag is seen supports
    nothing)."""
    tops: list[tuple[float, str | None]] = [(0.0, None)]
    for other, spec in scene_objects.items():
        if other != name and spec.shape in ('box', 'cylinder') and (covered is None or other in covered):
            tops.append((top_height(spec), other))
    return tuple(sorted(tops, key=lambda item: item[0]))


def bowl_floors(scene_objects: Mapping[str, ObjectSpec], name: str) -> tuple[str, ...]:
    """The scene's bowls an object of it (not a bowl or label itself) can rest inside."""
    spec = scene_objects.get(name)
    if spec is None or spec.shape in ('bowl', 'label'):
        return ()
    return tuple(other for other, s in scene_objects.items() if s.shape == 'bowl' and other != name)


BOWL_FLOOR = 0.006
"""The benchmark bowls' floor above the table (m): ``sim.constants.BOWL_BASE_THICKNESS``, which
``test/test_tracking_cell.py`` checks it equals (a real bowl: measure it)."""
BOWL_FLOOR_FRACTION = 0.6
"""The bowls' flat floor radius as a fraction of the outer radius (``sim.constants.BOWL_BASE_FRACTION``)."""


PUSHER_REACH = 0.01
"""Metres closed fingers reach around the TCP, horizontally: a closed gripper touches an object whose footprint
comes this near its TCP (the simulated ALOHA fingers' front face, ``sim.expert.constants.PUSH_FINGER_REACH``, which
``test/test_tracking_cell.py`` checks it equals; another gripper: measure it)."""
PUSHER_ABOVE_TOP = 0.01
"""A closed gripper whose TCP is higher than this above an object's top passes over it."""
FOOTPRINT_MARGIN = 0.01
"""Metres beyond a support's top edge an object on it may still be centred (a place's tolerance)."""


def footprint_radius(spec: ObjectSpec) -> float:
    """How far from a support's centre an object standing on it can be centred (its top's half-diagonal +
    ``FOOTPRINT_MARGIN``)."""
    reach = spec.size[0] if spec.shape == 'cylinder' else math.hypot(spec.size[0], spec.size[1])
    return reach + FOOTPRINT_MARGIN


def footprint_extent(spec: ObjectSpec, direction: np.ndarray, yaw: float) -> float:
    """How far an object's footprint reaches from its centre along the horizontal unit ``direction`` (a box turned by
    ``yaw``: its support function; a round object: its radius)."""
    if spec.shape != 'box':
        return spec.size[0]
    c, s = math.cos(yaw), math.sin(yaw)
    along_x = c * float(direction[0]) + s * float(direction[1])
    along_y = -s * float(direction[0]) + c * float(direction[1])
    return abs(along_x) * spec.size[0] + abs(along_y) * spec.size[1]


def tag_planes(
    marker: ObjectMarker,
    tops: tuple[tuple[float, str | None], ...],
    *,
    footprints: Mapping[str, tuple[float, float, float] | None] | None = None,
) -> tuple[Plane, ...]:
    """The candidate planes of ``marker``'s tag, one per distinct height (``PLANE_MERGE``). ``footprints`` gives a
    support's known place (x, y, radius), None for a support it must not be (held), and nothing for one never
    seen (no constraint)."""
    planes: list[Plane] = []
    for top, support in tops:
        z = TABLE_Z + top + marker.height
        if support is not None and footprints is not None and support in footprints:
            place = footprints[support]
            if place is None:
                continue
            area: tuple[tuple[float, float, float], ...] | None = (place,)
        else:
            area = None
        for index, plane in enumerate(planes):
            if abs(z - plane.z) < PLANE_MERGE:
                merged = None if plane.footprints is None or area is None else plane.footprints + area
                planes[index] = Plane(plane.z, merged)
                break
        else:
            planes.append(Plane(z, area))
    return tuple(planes)


def estimate_on_planes(
    detection: Detection,
    marker: ObjectMarker,
    intrinsics: Intrinsics,
    camera: CameraPose,
    *,
    planes: tuple[Plane, ...],
    gates: Gates,
    previous: ObjectPose | None = None,
    preferred_z: float | None = None,
) -> PoseResult:
    """The pose on a known bowl's floor when it lies within the floor; else the pose on the lowest candidate plane
    passing the gates and holding the pose (``Plane.holds``), unless a
    higher one's measured edge is nearer ``EXPECTED_EDGE`` by more than ``EDGE_EVIDENCE`` (objects rest on the
    table far more often than on each other; a close tag measured 1.3 % long on its right plane); the lowest
    plane's refusal when none passes. With ``preferred_z`` (the top of the support the trial's layout stacks the
    object on) that plane is the default instead, and when another plane's edge evidence contradicts it the pose is
    withheld (``ambiguous_plane``): blur and low resolution shorten a small tag's measured edge by up to 10 %, which
    is what a stacked object's tag seen on the table plane measures, so the edge cannot tell a blurred stack from an
    object set down beside its hidden support (it put the stacked cylinder on the table, 5 cm low and 3 cm off)."""

    def on(plane: Plane) -> PoseResult:
        return estimate_pose(detection, marker, intrinsics, camera, plane_z=plane.z, gates=gates, previous=previous)

    for plane in (p for p in planes if p.inside_bowl):
        result = on(plane)
        if isinstance(result, ObjectPose) and plane.holds(result.x, result.y):
            # Within a known bowl's floor an object cannot stand on the table.
            return result

    def order(plane: Plane) -> tuple[bool, float]:
        return (preferred_z is None or abs(plane.z - preferred_z) >= PLANE_MERGE, plane.z)

    results = [(plane, on(plane)) for plane in sorted(planes, key=order) if not plane.inside_bowl]
    standing = [(plane, r) for plane, r in results if isinstance(r, ObjectPose) and plane.holds(r.x, r.y)]
    best: ObjectPose | None = None
    for _, result in standing:
        margin = abs(best.edge_ratio - EXPECTED_EDGE) - abs(result.edge_ratio - EXPECTED_EDGE) if best else math.inf
        if margin > EDGE_EVIDENCE:
            best = result
    preferred = next(
        (r for plane, r in standing if preferred_z is not None and abs(plane.z - preferred_z) < PLANE_MERGE), None
    )
    if best is not None and preferred is not None and best is not preferred:
        return Refusal(
            marker.name,
            marker.id,
            'ambiguous_plane',
            f'stacked by the layout (tag plane z {preferred.z:.3f} m) but its edge says z {best.z:.3f} m',
        )
    if best is not None:
        return best
    refusals = [r for _, r in results if isinstance(r, Refusal)]
    return refusals[0] if refusals else Refusal(marker.name, marker.id, 'off_plane', 'on no plane it can stand on')


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
        # Bowls first: an object inside one is placed on its floor from the bowl's pose of the same frame.
        self._entries.sort(key=lambda entry: entry[2].shape != 'bowl')
        self._all_entries = tuple(self._entries)
        self._accepted: dict[str, ObjectPose] = {}
        self._pending: dict[str, list[ObjectPose]] = {}
        self.follower = GraspFollower(grasp_radius=grasp_radius, landing=self._landing, push=self._push)
        self.last_results: dict[str, PoseResult] = {}
        self._stacks: dict[str, str] = {}
        self._inside: dict[str, str] = {}

    def start_layout(self, layout: Layout) -> None:
        """A new episode laid out as ``layout``: ``start_episode`` with its objects, what it stacks and what it puts
        inside bowls."""
        self.start_episode(
            layout.scene,
            {p.name: p.on for p in layout.placements if p.on is not None},
            inside={p.name: p.inside for p in layout.placements if p.inside is not None},
            objects=[p.name for p in layout.placements],
        )

    def start_episode(
        self,
        scene: int,
        stacks: Mapping[str, str],
        *,
        inside: Mapping[str, str] | None = None,
        objects: Collection[str] | None = None,
    ) -> None:
        """A new episode in ``scene``: the cell was laid out anew, so every pose known so far is forgotten (a grasp
        would otherwise take an object of the previous layout remembered where the gripper closes, and the jump
        gate would hold back every object that moved); ``stacks`` says what stands on what (object name -> its
        support's name, the episode's layout; objects of another scene or without a tag are ignored), ``inside``
        which object lies in which bowl (its floor is then a plane of the object even while the bowl is unseen).
        From now on only ``objects`` of ``scene`` (default: all of its objects) are tracked: the arms go home and the
        cell is reset after the announcement, and what the camera sees of the previous layout meanwhile must not be
        remembered into the episode (a closed gripper would push it, and the episode's record would hold it)."""
        self._entries = [
            entry
            for entry in self._all_entries
            if entry[3] == scene and (objects is None or entry[0].split('/', 1)[1] in objects)
        ]
        self._accepted.clear()
        self._pending.clear()
        self.follower = GraspFollower(grasp_radius=self.follower.grasp_radius, landing=self._landing, push=self._push)
        self.last_results = {}
        tagged = self._markers.get(scene, {})
        self._stacks = {
            f'scene{scene}/{top}': f'scene{scene}/{support}'
            for top, support in stacks.items()
            if top in tagged and support in tagged
        }
        self._inside = {f'scene{scene}/{name}': bowl for name, bowl in (inside or {}).items() if name in tagged}

    def _supports(self, scene_of: Mapping[str, int]) -> dict[str, RigidPose]:
        """The covered supports under objects whose tags are seen on their top plane this frame."""
        inferred: dict[str, RigidPose] = {}
        for top, support in self._stacks.items():
            above, below = self.last_results.get(top), self.last_results.get(support)
            if not isinstance(above, ObjectPose) or not (isinstance(below, Refusal) and below.gate == 'not_detected'):
                continue
            if self.follower.held_by(support) is not None:
                continue
            spec = self._scene_objects[scene_of[support]][support.split('/', 1)[1]]
            if abs(above.z - self._plane_on(top, support)) >= PLANE_MERGE:
                continue  # the object on top was moved off it
            last = self.follower.last(support)
            yaw = above.yaw if last is None else yaw_of(last.quaternion())
            inferred[support] = RigidPose.from_yaw(above.x, above.y, TABLE_Z + spec.half_height, yaw)
        return inferred

    def _gated(
        self, key: str, detection: Detection, marker: ObjectMarker, planes: tuple[Plane, ...], view: tuple
    ) -> PoseResult:
        intrinsics, camera = view
        unlimited = Gates(self.gates.max_reprojection_px, self.gates.edge_tolerance, None)
        result = estimate_on_planes(
            detection, marker, intrinsics, camera, planes=planes, gates=unlimited, preferred_z=self._stacked_z(key)
        )
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

    def _stacked_z(self, key: str) -> float | None:
        """The tag plane of ``key`` (``scene<N>/<name>``) on the support the trial's layout stacks it on, or None."""
        support = self._stacks.get(key)
        return None if support is None else self._plane_on(key, support)

    def _plane_on(self, top: str, support: str) -> float:
        """The height of ``top``'s tag plane (keys ``scene<N>/<name>``) when it stands on ``support``."""
        scene_name, name = top.split('/', 1)
        scene = int(scene_name.removeprefix('scene'))
        spec = self._scene_objects[scene][support.split('/', 1)[1]]
        return TABLE_Z + top_height(spec) + self._markers[scene][name].height

    def _footprints(
        self, scene: int, tops: tuple[tuple[float, str | None], ...]
    ) -> dict[str, tuple[float, float, float] | None]:
        """Known places of the supports (an object held by a gripper supports nothing; one never seen: no entry)."""
        places: dict[str, tuple[float, float, float] | None] = {}
        for _, support in tops:
            if support is None:
                continue
            key = f'scene{scene}/{support}'
            if self.follower.held_by(key) is not None:
                places[support] = None
                continue
            last = self.follower.last(key)
            if last is not None:
                radius = footprint_radius(self._scene_objects[scene][support])
                places[support] = (float(last.position[0]), float(last.position[1]), radius)
        return places

    def _landing(self, key: str, released: RigidPose) -> RigidPose:
        """Where ``key`` (``scene<N>/<name>``), let go at ``released``, comes to rest: straight below, upright with its
        yaw, on the highest surface known under it: a support's top (a place on a stack), a bowl's floor, or the
        table."""
        scene_name, name = key.split('/', 1)
        scene = int(scene_name.removeprefix('scene'))
        objects = self._scene_objects[scene]
        x, y = float(released.position[0]), float(released.position[1])
        surface = 0.0
        for bowl in bowl_floors(objects, name):
            if self._within(f'{scene_name}/{bowl}', x, y, objects[bowl].size[0]):
                surface = max(surface, BOWL_FLOOR)
        for top, support in support_tops(objects, name):
            if support is not None and self._within(
                f'{scene_name}/{support}', x, y, footprint_radius(objects[support]) - FOOTPRINT_MARGIN
            ):
                surface = max(surface, top)
        return RigidPose.from_yaw(x, y, TABLE_Z + surface + objects[name].half_height, yaw_of(released.quaternion()))

    def _push(self, key: str, pose: RigidPose, tcp: RigidPose, step: np.ndarray) -> RigidPose | None:
        """Where closed fingers around ``tcp``, moved by ``step`` (xy), put ``key`` at ``pose`` when they reach into
        its footprint: ahead of them along their motion (a flat push carries the object the way the fingers go, not
        along the line through its centre) to where its footprint just touches them; straight out of their way when
        they did not move towards it. None when they do not reach it."""
        scene_name, name = key.split('/', 1)
        spec = self._scene_objects[int(scene_name.removeprefix('scene'))][name]
        if spec.shape == 'label' or tcp.position[2] > pose.position[2] + spec.half_height + PUSHER_ABOVE_TOP:
            return None
        away = np.asarray(pose.position[:2] - tcp.position[:2], dtype=np.float64)
        distance = float(np.linalg.norm(away))
        if distance < 1e-9:
            return None
        reach = footprint_extent(spec, away / distance, yaw_of(pose.quaternion())) + PUSHER_REACH
        if distance >= reach:
            return None
        length = float(np.linalg.norm(step))
        direction = step / length if length > 1e-9 and float(step @ away) > 0.0 else away / distance
        along = float(away @ direction)
        shift = -along + math.sqrt(max(along * along - distance * distance + reach * reach, 0.0))
        position = pose.position.copy()
        position[:2] += shift * direction
        return RigidPose(position, pose.rotation)

    def _within(self, key: str, x: float, y: float, radius: float) -> bool:
        """Whether (x, y) lies within ``radius`` of where ``key`` is known to stand (not held, seen before)."""
        last = self.follower.last(key)
        if last is None or self.follower.held_by(key) is not None:
            return False
        return math.hypot(x - float(last.position[0]), y - float(last.position[1])) <= radius

    def _bowl_planes(self, scene: int, marker: ObjectMarker) -> tuple[Plane, ...]:
        """The floors of the scene's bowls whose place is known (a bowl never seen offers no floor: 6 mm above the
        table cannot be told from the table by the tag alone), and of the bowl the layout put the object in."""
        planes = []
        objects = self._scene_objects[scene]
        for bowl in bowl_floors(objects, marker.name):
            key = f'scene{scene}/{bowl}'
            now = self.last_results.get(key)
            last = self.follower.last(key)
            radius = BOWL_FLOOR_FRACTION * objects[bowl].size[0]
            footprint: tuple[tuple[float, float, float], ...] | None
            if isinstance(now, ObjectPose):
                footprint = ((now.x, now.y, radius),)
            elif last is not None and self.follower.held_by(key) is None:
                footprint = ((float(last.position[0]), float(last.position[1]), radius),)
            elif self._inside.get(f'scene{scene}/{marker.name}') == bowl:
                # Unseen, but the layout put the object in it: on the table plane it would be ~8 mm low and 5 off.
                footprint = None
            else:
                continue
            planes.append(Plane(TABLE_Z + BOWL_FLOOR + marker.height, footprint, inside_bowl=True))
        return tuple(planes)

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
        fallback: dict[str, RigidPose] = {}
        self.last_results = {}
        covered = {
            scene: {n for n, m in markers.items() if m.id not in detections} for scene, markers in self._markers.items()
        }
        for key, marker, spec, scene in self._entries:
            result, pnp = self._measure(
                key, marker, scene, detections.get(marker.id), covered[scene], intrinsics, camera
            )
            self.last_results[key] = result
            # The centre is half the object's height above what it stands on; the tag ``height`` above it.
            offset = spec.half_height - marker.height
            if pnp is not None:
                fallback[key] = RigidPose.from_yaw(pnp.x, pnp.y, pnp.z + offset, pnp.yaw)
            if isinstance(result, ObjectPose):
                held = self.follower.followed(key, tcps or {})
                lifted = held is not None and lifted_sighting(result, held, camera, centre_offset=offset)
                seen[key] = None if lifted else RigidPose.from_yaw(result.x, result.y, result.z + offset, result.yaw)
            elif self.follower.last(key) is not None or self.follower.held_by(key) is not None:
                seen[key] = None
        supports = self._supports({key: scene for key, _, _, scene in self._entries})
        seen.update(supports)
        followed = self.follower.update(seen, tcps or {}, closed or {})
        published: list[Published] = []
        for key, _, _, scene in self._entries:
            name = key.split('/', 1)[1]
            item = followed.get(key)
            if item is not None:
                source = 'support' if key in supports and item.source == 'marker' else item.source
                published.append(Published.at(name, scene, item.pose, source))
            elif key in fallback:
                published.append(Published.at(name, scene, fallback[key], 'pnp'))
        return published

    def _measure(
        self,
        key: str,
        marker: ObjectMarker,
        scene: int,
        detection: Detection | None,
        covered: set[str],
        intrinsics: Intrinsics,
        camera: CameraPose,
    ) -> tuple[PoseResult, ObjectPose | None]:
        """``key``'s tag this frame on its candidate planes, gated; and, with ``pnp_fallback``, the PnP pose of a
        tag no plane passed (a jump excepted)."""
        if detection is None:
            return Refusal(marker.name, marker.id, 'not_detected', 'not detected'), None
        tops = support_tops(self._scene_objects[scene], marker.name, covered=covered)
        planes = tag_planes(marker, tops, footprints=self._footprints(scene, tops)) + self._bowl_planes(scene, marker)
        result = self._gated(key, detection, marker, planes, (intrinsics, camera))
        if not isinstance(result, Refusal) or not self.pnp_fallback or result.gate == 'jump':
            return result, None
        pnp = estimate_pose(detection, marker, intrinsics, camera, plane_z=None, gates=self.gates)
        return result, pnp if isinstance(pnp, ObjectPose) else None

    def carried(self, arm: str, tcp: RigidPose) -> list[Published]:
        """The objects ``arm`` holds or pushes (as of the last ``update``) where its TCP at ``tcp`` puts them:
        between two images a carried or pushed object follows every TCP pose, not only the image's."""
        pushed = self.follower.pushed(arm, tcp)
        carried: list[Published] = []
        for key, _, _, scene in self._entries:
            name = key.split('/', 1)[1]
            if key in pushed:
                carried.append(Published.at(name, scene, pushed[key].pose, 'pushed'))
            elif self.follower.held_by(key) == arm:
                held = self.follower.followed(key, {arm: tcp})
                if held is not None:
                    carried.append(Published.at(name, scene, held, 'gripper'))
        return carried


def lifted_sighting(result: ObjectPose, held: RigidPose, camera: CameraPose, *, centre_offset: float) -> bool:
    """Whether ``result`` (a plane pose) is the tag of the object held at ``held`` (its centre; the tag
    ``-centre_offset`` above it) seen where its plane puts it (``LIFTED_SIGHTING``)."""
    tag = np.asarray(held.position, dtype=np.float64) - np.array([0.0, 0.0, centre_offset])
    eye = np.asarray(camera.position, dtype=np.float64)
    if abs(tag[2] - eye[2]) < 1e-9 or abs(tag[2] - result.z) < PLANE_MERGE:
        return False  # not lifted off the plane: a sighting there is the object itself
    on_plane = eye + (tag - eye) * (result.z - eye[2]) / (tag[2] - eye[2])
    return math.hypot(on_plane[0] - result.x, on_plane[1] - result.y) <= LIFTED_SIGHTING


def yaw_of(quat: tuple[float, float, float, float] | np.ndarray) -> float:
    """The yaw (rad) of a (w, x, y, z) quaternion."""
    w, x, y, z = (float(v) for v in quat)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
