"""ArUco tags in the simulated cell (``markers`` option, issue 21): the tags of ``config/markers/<name>.yaml`` drawn
on the objects and on the table, so that the cameras see what a tracker on a real cell would.

Each tag is a thin box textured with the printed tag (quiet zone included) on all faces: on an object's top face
for ``top`` mounts, a 3 mm plate for ``plate`` mounts (on a sphere's top, a tab at a bowl's foot at ``offset``),
flat on the table for the board. The boxes are drawn only: no collision (contype and conaffinity 0) and no mass
(density 0), so the physics of a cell with tags is the physics without them (``test/test_sim_markers.py``).

Heights: a tag's face sits at the configured ``height`` above what the object stands on, except that a tag
printed on a top face (and a board tag on the table) is lifted by ``FACE_LIFT`` (0.2 mm) so the renderer does not
mix the two coplanar faces; a tracker assuming the configured plane is off by less than 0.15 mm for it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import mujoco
import numpy as np

from robofollow_ros.benchmark.types import TABLE_Z, ObjectSpec
from robofollow_ros.errors import SimulationError
from robofollow_ros.tracking.camera import CameraPose, Intrinsics
from robofollow_ros.tracking.markers import BoardTag, MarkerConfig, ObjectMarker, load_markers, printed_side, tag_image

FACE_LIFT = 0.0002
"""How far a tag printed on a face stands above it (m): enough for the depth buffer, far below the tracker's error."""
PLATE_THICKNESS = 0.003
"""A ``plate`` mount's plate (m), as the marker configuration's heights assume."""
PIXELS_PER_MODULE = 16
"""Texture resolution: 128 px across a tag with its quiet zone, finer than any camera of the cell sees it."""


@dataclass(frozen=True)
class CellMarkers:
    """The tags drawn in one cell: the objects' (by object name) and the board's."""

    objects: Mapping[str, ObjectMarker]
    board: tuple[BoardTag, ...]


def cell_markers(config: MarkerConfig | str, *, scene: int, objects: Iterable[str]) -> CellMarkers:
    """The tags of ``objects`` (names of one ``scene``'s layout) and the board, from a configuration (or its name).

    Raises:
        SimulationError: an object has no tag in the configuration.
        MarkerConfigError: the configuration cannot be loaded.
    """
    loaded = load_markers(config) if isinstance(config, str) else config
    markers = loaded.scene(scene)
    chosen: dict[str, ObjectMarker] = {}
    for name in objects:
        marker = markers.get(name)
        if marker is None:
            raise SimulationError(f'marker configuration {loaded.path} has no tag for scene {scene} object {name!r}')
        chosen[name] = marker
    return CellMarkers(objects=chosen, board=loaded.board)


def _material(spec: mujoco.MjSpec, tag_id: int) -> str:
    name = f'aruco_{tag_id}'
    if spec.material(name) is not None:
        return name
    grey = tag_image(tag_id, pixels_per_module=PIXELS_PER_MODULE)
    rgb = np.repeat(grey[:, :, None], 3, axis=2)
    texture = spec.add_texture(
        name=name, type=mujoco.mjtTexture.mjTEXTURE_2D, width=rgb.shape[1], height=rgb.shape[0], nchannel=3
    )
    texture.data = np.ascontiguousarray(rgb).tobytes()
    material = spec.add_material(name=name)
    material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = name
    material.specular = 0.0
    material.shininess = 0.0
    return name


def _tag_geom(
    body: mujoco.MjsBody,
    spec: mujoco.MjSpec,
    *,
    name: str,
    tag_id: int,
    size: float,
    centre: tuple[float, float, float],
    yaw: float,
    thickness: float,
) -> None:
    half = printed_side(size) / 2.0
    geom = body.add_geom(
        name=name,
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[half, half, thickness / 2.0],
        pos=[centre[0], centre[1], centre[2] - thickness / 2.0],
        quat=[math.cos(yaw / 2.0), 0.0, 0.0, math.sin(yaw / 2.0)],
        material=_material(spec, tag_id),
    )
    geom.contype, geom.conaffinity = 0, 0
    geom.density = 0.0
    geom.rgba = [1.0, 1.0, 1.0, 1.0]


def add_markers(spec: mujoco.MjSpec, objects: Iterable[ObjectSpec], markers: CellMarkers) -> None:
    """Add the tags of ``markers`` to the composed cell ``spec``: each object's to its body (added before, by
    ``objects.add_object``), the board's to the world body.

    Raises:
        SimulationError: an object of ``objects`` has no tag in ``markers``.
    """
    for obj in objects:
        marker = markers.objects.get(obj.name)
        if marker is None:
            raise SimulationError(f'object {obj.name!r} has no marker')
        # The body's origin stands ``half_height`` above what the object stands on (a bowl's: its bbox centre).
        face = marker.height - obj.half_height
        if marker.mount == 'top':
            centre = (marker.offset[0], marker.offset[1], face + FACE_LIFT)
            thickness = 2.0 * FACE_LIFT
        else:
            centre = (marker.offset[0], marker.offset[1], face)
            thickness = PLATE_THICKNESS
        _tag_geom(
            spec.body(obj.name),
            spec,
            name=f'{obj.name}_marker',
            tag_id=marker.id,
            size=marker.size,
            centre=centre,
            yaw=0.0,
            thickness=thickness,
        )
    for tag in markers.board:
        _tag_geom(
            spec.worldbody,
            spec,
            name=f'board_tag_{tag.id}',
            tag_id=tag.id,
            size=tag.size,
            centre=(tag.x, tag.y, TABLE_Z + FACE_LIFT),
            yaw=tag.yaw,
            thickness=2.0 * FACE_LIFT,
        )


def camera_view(
    model: mujoco.MjModel, data: mujoco.MjData, camera: str, *, width: int, height: int
) -> tuple[Intrinsics, CameraPose]:
    """A simulated camera as the tracker models it: intrinsics in OpenCV's pixel-centre convention (the sim's
    CameraInfo writes cx = W / 2, the corner convention) and its true pose in the world (OpenCV axes: MuJoCo's
    cameras look along their -z with +y up). ``data`` must be posed (``mj_forward`` or ``mj_kinematics``)."""
    from robofollow_ros.sim.render import camera_matrix

    camera_id = model.camera(camera).id
    intrinsics = Intrinsics.from_corner_convention(
        camera_matrix(model, camera, width=width, height=height), width=width, height=height
    )
    rotation = data.cam_xmat[camera_id].reshape(3, 3) @ np.diag([1.0, -1.0, -1.0])
    return intrinsics, CameraPose(rotation=rotation, position=data.cam_xpos[camera_id].copy())
