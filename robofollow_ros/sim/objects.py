"""Scene items as MuJoCo bodies: spheres, boxes (cubes, slabs), upright cylinders, labels and primitive bowls.

Every item becomes one body named after the object. Movable items get a free joint named ``<name>_free``;
static items (labels, the Scene 4 bowl) are fixed bodies whose pose is set through ``model.body_pos`` on reset.
A body's origin is the item's centre (for bowls: the centre of the bounding box, so a bowl resting on the table
has its origin at table + height / 2).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from robofollow_ros.benchmark.types import ObjectSpec
from robofollow_ros.errors import SimulationError
from robofollow_ros.sim.constants import (
    BOWL_BASE_FRACTION,
    BOWL_BASE_THICKNESS,
    BOWL_WALL_THICKNESS,
    BOWL_WALLS,
    COLLISION,
    OBJECT_CONDIM,
    OBJECT_PRIORITY,
    OBJECT_ROLLING,
    OBJECT_TORSION,
)
from robofollow_ros.sim.rotations import quat_from_matrix


def free_joint_name(name: str) -> str:
    """Name of the free joint of movable object ``name``."""
    return f'{name}_free'


def is_static(spec: ObjectSpec) -> bool:
    """Labels and objects marked static have no joint."""
    return spec.static or spec.shape == 'label'


def _style(geom: mujoco.MjsGeom, spec: ObjectSpec, group: str) -> None:
    geom.rgba = np.asarray(spec.rgba, dtype=np.float64)
    geom.contype, geom.conaffinity = COLLISION[group]
    geom.friction = np.array([spec.friction, OBJECT_TORSION, OBJECT_ROLLING])
    geom.condim = OBJECT_CONDIM
    geom.priority = OBJECT_PRIORITY


def bowl_inner_floor(spec: ObjectSpec) -> float:
    """Height of a bowl's inner floor above its origin (negative: below the bbox centre)."""
    _, height = spec.size[:2]
    return -height / 2.0 + BOWL_BASE_THICKNESS


def bowl_base_radius(spec: ObjectSpec) -> float:
    """Radius of the flat floor disc of a bowl."""
    return BOWL_BASE_FRACTION * spec.size[0]


def _add_bowl(body: mujoco.MjsBody, spec: ObjectSpec, group: str) -> None:
    if len(spec.size) < 2:
        raise SimulationError(f'bowl {spec.name!r} needs size (outer_radius, height), got {spec.size}')
    outer, height = spec.size[:2]
    base_r = bowl_base_radius(spec)
    n_geoms = 1 + BOWL_WALLS
    base = body.add_geom(
        name=f'{spec.name}_base',
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        size=[base_r, BOWL_BASE_THICKNESS / 2.0, 0.0],
        pos=[0.0, 0.0, -height / 2.0 + BOWL_BASE_THICKNESS / 2.0],
    )
    _style(base, spec, group)
    if not is_static(spec):
        base.mass = spec.mass / n_geoms
    bottom = (base_r - BOWL_WALL_THICKNESS / 2.0, -height / 2.0 + BOWL_BASE_THICKNESS / 2.0)
    top = (outer - BOWL_WALL_THICKNESS / 2.0, height / 2.0)
    span = math.hypot(top[0] - bottom[0], top[1] - bottom[1])
    along = np.array([top[0] - bottom[0], top[1] - bottom[1]]) / span
    mid_r = (bottom[0] + top[0]) / 2.0
    half_width = math.pi * top[0] / BOWL_WALLS * 1.08
    for i in range(BOWL_WALLS):
        theta = 2.0 * math.pi * i / BOWL_WALLS
        radial = np.array([math.cos(theta), math.sin(theta), 0.0])
        tangent = np.array([-math.sin(theta), math.cos(theta), 0.0])
        axis = along[0] * radial + along[1] * np.array([0.0, 0.0, 1.0])
        normal = np.cross(tangent, axis)
        wall = body.add_geom(
            name=f'{spec.name}_wall{i}',
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[BOWL_WALL_THICKNESS / 2.0, half_width, span / 2.0],
            pos=[mid_r * radial[0], mid_r * radial[1], (bottom[1] + top[1]) / 2.0],
            quat=quat_from_matrix(np.column_stack([normal, tangent, axis])),
        )
        _style(wall, spec, group)
        if not is_static(spec):
            wall.mass = spec.mass / n_geoms


def add_object(parent: mujoco.MjsBody, spec: ObjectSpec) -> mujoco.MjsBody:
    """Add one scene item below ``parent`` (the world body) and return its body.

    Raises:
        SimulationError: the shape is unknown or its size tuple has the wrong length.
    """
    body = parent.add_body(name=spec.name)
    static = is_static(spec)
    group = 'env' if static else 'object'
    if not static:
        body.add_freejoint(name=free_joint_name(spec.name))
    expected = {'sphere': 1, 'box': 3, 'cylinder': 2, 'label': 3, 'bowl': 2}
    if spec.shape not in expected:
        raise SimulationError(f'object {spec.name!r} has unknown shape {spec.shape!r}')
    if len(spec.size) < expected[spec.shape]:
        raise SimulationError(
            f'object {spec.name!r} ({spec.shape}) needs {expected[spec.shape]} sizes, got {spec.size}'
        )
    if spec.shape == 'bowl':
        _add_bowl(body, spec, group)
        return body
    if spec.shape == 'sphere':
        geom = body.add_geom(name=spec.name, type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[spec.size[0], 0.0, 0.0])
    elif spec.shape == 'cylinder':
        geom = body.add_geom(
            name=spec.name, type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[spec.size[0], spec.size[1], 0.0]
        )
    else:
        geom = body.add_geom(name=spec.name, type=mujoco.mjtGeom.mjGEOM_BOX, size=list(spec.size[:3]))
    _style(geom, spec, 'none' if spec.shape == 'label' else group)
    if not static:
        geom.mass = spec.mass
    return body
