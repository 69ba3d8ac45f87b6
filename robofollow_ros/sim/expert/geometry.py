"""Pure target geometry of the expert: where to grasp, where each action puts the object, how to push.

Nothing here generates motion; every function maps object poses (a ``SceneView``) and sizes to poses.
Positions are object *centres* unless a name says TCP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robofollow_ros.benchmark.types import TABLE_Z, ObjectSpec
from robofollow_ros.errors import PolicyError
from robofollow_ros.sim.expert import constants as c
from robofollow_ros.sim.expert.scene import SceneView, footprint_radius
from robofollow_ros.sim.rotations import rot_z, wrap_angle

RELATION_DIRECTIONS: dict[str, tuple[float, float]] = {
    'behind': (0.0, 1.0),
    'in_front': (0.0, -1.0),
    'left_of': (-1.0, 0.0),
    'right_of': (1.0, 0.0),
}
"""Unit xy direction of each Scene 1 relation (protocol §2.1: +x right, +y behind)."""

PLACE_MODE_YAW: dict[str, float] = {
    'short_front': 0.0,
    'long_right': 0.0,
    'long_front': math.pi / 2.0,
    'short_right': math.pi / 2.0,
}
"""Scene 3 target yaw of the slab per place mode (protocol §2.3; the slab's long axis is y at yaw 0)."""


@dataclass(frozen=True)
class GraspPose:
    """A top-down grasp: TCP position, gripper yaw and the opening commanded on the approach."""

    tcp: np.ndarray
    yaw: float
    opening: float


@dataclass(frozen=True)
class PushPath:
    """A straight push: TCP positions (same height) of the run-up start, the contact and the end of the push."""

    start: np.ndarray
    contact: np.ndarray
    end: np.ndarray
    back_off: np.ndarray
    yaw: float
    direction: np.ndarray


def symmetry_period(spec: ObjectSpec) -> float:
    """Yaw period of a top-down grasp of ``spec``: boxes with a square footprint pi/2, other boxes pi, round 0."""
    if spec.shape != 'box':
        return 0.0
    return math.pi / 2.0 if math.isclose(spec.size[0], spec.size[1]) else math.pi


def nearest_equivalent(angle: float, period: float, *, reference: float = 0.0) -> float:
    """The angle equivalent to ``angle`` modulo ``period`` that is nearest to ``reference`` (period 0: reference)."""
    if period <= 0.0:
        return reference
    return reference + (angle - reference + period / 2.0) % period - period / 2.0


def finger_clearance(view: SceneView, name: str, centre: np.ndarray, yaw: float, reach: float) -> float:
    """Smallest gap between the two open fingertips of a grasp of ``name`` and any other item's footprint.

    The fingers stand ``reach`` from ``centre`` along the closing axis (world x turned by ``yaw``).
    """
    axis = np.array([math.cos(yaw), math.sin(yaw)])
    fingers = (centre[:2] + axis * reach, centre[:2] - axis * reach)
    gaps = [
        float(np.linalg.norm(finger - view.xy(other))) - footprint_radius(view.spec(other))
        for other in view.layout.object_names
        if other != name and view.spec(other).kind != 'label'
        for finger in fingers
    ]
    return min(gaps, default=math.inf)


def grasp_yaw(view: SceneView, name: str, centre: np.ndarray, reach: float) -> float:
    """Gripper yaw for grasping ``name``: square across a face, turned where the open fingers have more room.

    Candidates are the object's equivalent grasp yaws (a square box: two, a round object: four, a slab
    only across its short side); the one nearest 0 wins unless another clears neighbouring items
    (e.g. a bowl's rim) by ``YAW_SWITCH_GAIN`` more while the default is tighter than ``FINGER_ROOM``.
    """
    spec = view.spec(name)
    period = symmetry_period(spec)
    base = nearest_equivalent(view.yaw(name), period)
    step = period if period > 0.0 else math.pi / 4.0
    candidates = [nearest_equivalent(base + k * step, math.pi) for k in range(round(math.pi / step))]
    room = [finger_clearance(view, name, centre, yaw, reach) for yaw in candidates]
    best = int(np.argmax(room))
    if room[0] < c.FINGER_ROOM and room[best] > room[0] + c.YAW_SWITCH_GAIN:
        return candidates[best]
    return candidates[0]


def grasp_pose(
    view: SceneView, name: str, *, fingertip_offset: float, min_tcp_z: float, finger_travel: float
) -> GraspPose:
    """Where to put the TCP to grasp ``name`` from above.

    Cubes and cylinders are grasped slightly above their centre. An object resting on another is grasped
    high enough that the fingertips stay above its support; an object inside a bowl with a narrower
    opening so the fingers fit between it and the bowl wall. Boxes are grasped across a face (a slab
    across its short side); the yaw avoids neighbours where it can (``grasp_yaw``).
    """
    spec = view.spec(name)
    centre = view.pos(name)
    raise_by = {'box': c.CUBE_GRASP_RAISE, 'cylinder': c.CYLINDER_GRASP_RAISE}.get(spec.shape, 0.0)
    if spec.shape == 'box' and not math.isclose(spec.size[0], spec.size[1]):
        raise_by = 0.0
    z = centre[2] + raise_by
    support = view.support_of(name)
    if support is not None:
        z = max(z, view.top_of(support) + c.FINGER_CLEARANCE + fingertip_offset)
        z = min(z, centre[2] + c.STACKED_RAISE_FRACTION * spec.half_height)
    opening = c.GRASP_OPENING if view.container_of(name) is None else c.BOWL_GRASP_OPENING
    yaw = grasp_yaw(view, name, centre, opening * finger_travel + c.FINGER_PAD)
    return GraspPose(tcp=np.array([centre[0], centre[1], max(z, min_tcp_z)]), yaw=yaw, opening=opening)


def grasp_width(spec: ObjectSpec) -> float:
    """Width of an object between the fingers of a top-down grasp (boxes are held across their narrower side)."""
    if spec.shape == 'box':
        return 2.0 * min(spec.size[0], spec.size[1])
    return 2.0 * spec.size[0]


def table_centre_z(spec: ObjectSpec) -> float:
    """Centre height of ``spec`` standing on the table (protocol §8.1: table + half-height + 0.001)."""
    return TABLE_Z + spec.half_height + c.TABLE_PLACE_CLEARANCE


def relation_target(view: SceneView, source: str, anchor: str, relation: str) -> np.ndarray:
    """Scene 1: where to put ``source`` so that it is ``relation`` of ``anchor`` (protocol §8.1 offsets).

    Raises:
        PolicyError: unknown relation word.
    """
    if relation not in RELATION_DIRECTIONS:
        raise PolicyError(f'unknown Scene 1 relation {relation!r}')
    direction = np.asarray(RELATION_DIRECTIONS[relation])
    anchor_xy = view.xy(anchor)
    reach = footprint_radius(view.spec(anchor), direction) + footprint_radius(view.spec(source), direction)
    offset = {
        'right_of': reach + c.RELATION_RIGHT_GAP,
        'left_of': reach + c.RELATION_LEFT_GAP,
        'behind': max(c.RELATION_BEHIND_OFFSET, reach + c.RELATION_MIN_GAP),
        'in_front': max(c.RELATION_FRONT_OFFSET, reach + c.RELATION_MIN_GAP),
    }[relation]
    xy = anchor_xy + direction * offset
    return np.array([xy[0], xy[1], table_centre_z(view.spec(source))])


def s2_stack_target(view: SceneView, source: str, target: str) -> np.ndarray:
    """Scene 2 stack: ``source`` centred over ``target``, its bottom just above the target's top."""
    xy = view.xy(target)
    z = view.top_of(target) + view.spec(source).half_height + c.STACK_CLEARANCE
    return np.array([xy[0], xy[1], z])


def s4_stack_target(view: SceneView, source: str, target: str) -> np.ndarray:
    """Scene 4 stack: the referee's expected centre, target z + both half-heights + gap (protocol §4.5)."""
    xy = view.xy(target)
    z = float(view.pos(target)[2]) + view.spec(source).half_height + view.spec(target).half_height + c.S4_STACK_GAP
    return np.array([xy[0], xy[1], z])


def unstack_target(view: SceneView, source: str, slot_xy: tuple[float, float]) -> np.ndarray:
    """Scene 4 unstack: standing on the table at the nominal slot centre."""
    return np.array([slot_xy[0], slot_xy[1], TABLE_Z + view.spec(source).half_height + c.UNSTACK_CLEARANCE])


def bowl_target(view: SceneView, source: str, bowl: str) -> np.ndarray:
    """Scene 2 bowl: over the bowl's centre, the object's bottom ``BOWL_RIM_CLEARANCE`` above the rim.

    Released there, the object drops into the bowl while the open fingers stay outside it (fingers
    opening inside a bowl catch its walls and can lift it).
    """
    centre = view.pos(bowl)
    z = view.top_of(bowl) + view.spec(source).half_height + c.BOWL_RIM_CLEARANCE
    return np.array([centre[0], centre[1], z])


def label_target(view: SceneView, source: str, label: str) -> np.ndarray:
    """Scene 3: the slab centred on the label, its bottom just above the label's top."""
    centre = view.pos(label)
    z = view.top_of(label) + view.spec(source).half_height + c.LABEL_PLACE_CLEARANCE
    return np.array([centre[0], centre[1], z])


def route_point(view: SceneView, route_object: str, *, carry_z: float) -> np.ndarray:
    """Scene 3: the carried slab's centre right above ``route_object`` at the transit height."""
    xy = view.xy(route_object)
    return np.array([xy[0], xy[1], carry_z])


def push_path(view: SceneView, source: str, target: str, *, tcp_z: float) -> PushPath:
    """Scene 2 push: approach from the side opposite ``target`` and push ``source`` towards it.

    The fingers touch the source when the TCP is the source's extent along the push plus
    ``PUSH_FINGER_REACH`` behind its centre. From there the source is pushed protocol §8.1's 0.05 m, shortened so it
    stops ``PUSH_TARGET_GAP`` short of the target, but never below ``PUSH_MIN_DISTANCE``. The closed
    fingers face the push with the closing axis across it.
    """
    s0, t0 = view.xy(source), view.xy(target)
    delta = t0 - s0
    distance = float(np.linalg.norm(delta))
    if distance < 1e-6:
        raise PolicyError(f'cannot push {source} towards {target}: they share a position')
    u = delta / distance
    extent = footprint_radius(view.spec(source), u, yaw=view.yaw(source))
    gap = distance - extent - footprint_radius(view.spec(target), -u, yaw=view.yaw(target))
    length = min(c.PUSH_DISTANCE, max(c.PUSH_MIN_DISTANCE, gap - c.PUSH_TARGET_GAP))

    def at(xy: np.ndarray) -> np.ndarray:
        return np.array([xy[0], xy[1], tcp_z])

    contact = s0 - u * (extent + c.PUSH_FINGER_REACH)
    end = contact + u * length
    yaw = math.atan2(float(u[1]), float(u[0])) + math.pi / 2.0
    return PushPath(
        start=at(contact - u * c.PUSH_RUN_UP),
        contact=at(contact),
        end=at(end),
        back_off=at(end - u * c.PUSH_BACK_OFF),
        yaw=nearest_equivalent(yaw, math.pi),
        direction=u,
    )


def tcp_for_object(goal: np.ndarray, held_offset: np.ndarray, turn: float) -> np.ndarray:
    """TCP position that puts a held object's centre at ``goal`` after the hand turns by ``turn`` about z.

    ``held_offset`` is object centre minus TCP, measured now; it turns with the hand.
    """
    return np.asarray(goal, dtype=np.float64) - rot_z(turn) @ np.asarray(held_offset, dtype=np.float64)


def hand_turn(object_yaw: float, goal_yaw: float, period: float) -> float:
    """Smallest hand rotation that brings a held object from ``object_yaw`` to ``goal_yaw`` modulo ``period``."""
    if period <= 0.0:
        return 0.0
    return nearest_equivalent(wrap_angle(goal_yaw - object_yaw), period)
