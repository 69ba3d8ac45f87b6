"""Cameras: a held object is drawn whole in the wrist camera (no near-plane clipping) where the intrinsics put it."""

from __future__ import annotations

import itertools

import cv2
import mujoco
import numpy as np
import pytest

from robofollow_ros.benchmark import registry
from robofollow_ros.robot.specs import robot_names
from robofollow_ros.sim.constants import IMAGE_HEIGHT, IMAGE_WIDTH
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.motion import MotionPlanner, Plan
from robofollow_ros.sim.render import camera_matrix, project

pytestmark = pytest.mark.sim
ITEM = 'large_blue_cube'
"""A 6 cm cube: held, its near corners are ~5 cm from the wrist camera (MuJoCo's default near plane was 6.7 cm)."""


@pytest.fixture(scope='module', params=robot_names())
def held(request: pytest.FixtureRequest) -> CellEnv:
    env = CellEnv(render=False, robot=request.param)
    layout = registry.get_layout(2, 'default')
    start = env.reset(registry.training_labels(scene=2)[0], seed=3, layout=layout)
    planner = MotionPlanner(env.kinematics)
    centre = start.object_pos[ITEM]
    top = centre[2] + layout.spec(ITEM).half_height
    plan = Plan(start.state)
    plan.add(
        planner.grasp(
            plan.state, 'right', np.array([*centre[:2], planner.grasp_height(centre[2], top_z=top)]), lift=0.10
        )
    )
    env.execute(plan.rows())
    yield env
    env.close()


def _segmentation(env: CellEnv, camera: str) -> np.ndarray:
    with mujoco.Renderer(env.cell.model, height=IMAGE_HEIGHT, width=IMAGE_WIDTH) as renderer:
        renderer.enable_segmentation_rendering()
        renderer.update_scene(env.data, camera=camera)
        seg = renderer.render()
    ids = seg[..., 0].astype(np.int64)
    ids[seg[..., 1] != int(mujoco.mjtObj.mjOBJ_GEOM)] = -1
    return ids


def _silhouette(env: CellEnv, camera: str, item: str) -> np.ndarray:
    """Pixels inside the convex hull of the projected corners of the item's box."""
    model, data = env.cell.model, env.data
    body = env.cell.object_index[item].body
    half = env.layout.spec(item).size
    corners = np.array(
        [
            data.xpos[body] + data.xmat[body].reshape(3, 3) @ (np.array(s) * half)
            for s in itertools.product((-1.0, 1.0), repeat=3)
        ]
    )
    pixels = project(data, model.camera(camera).id, camera_matrix(model, camera), corners)
    mask = np.zeros((IMAGE_HEIGHT, IMAGE_WIDTH), np.uint8)
    cv2.fillConvexPoly(mask, cv2.convexHull(np.round(pixels).astype(np.int32)), 1)
    return mask.astype(bool)


def test_held_cube_covers_its_silhouette_in_the_wrist_camera(held: CellEnv) -> None:
    seg = _segmentation(held, 'cam_right_wrist')
    inside = _silhouette(held, 'cam_right_wrist', ITEM)
    assert inside.sum() > 500, 'the held cube must fill a good part of the wrist image'
    cube = np.isin(seg, held.cell.object_index[ITEM].geoms)
    arm_bodies = [b for b in range(held.cell.model.nbody) if (held.cell.model.body(b).name or '').startswith('right_')]
    arm = np.isin(seg, np.flatnonzero(np.isin(held.cell.model.geom_bodyid, arm_bodies)))
    behind = inside & ~cube & ~arm
    assert behind.sum() <= 0.02 * inside.sum(), f'{behind.sum()} of {inside.sum()} silhouette pixels are background'
    assert (inside & cube).sum() >= 0.5 * inside.sum()
    assert (cube & ~inside).sum() <= 0.05 * cube.sum(), 'the intrinsics put the cube where it is drawn'


def test_near_plane_is_a_few_millimetres(held: CellEnv) -> None:
    model = held.cell.model
    assert model.vis.map.znear * model.stat.extent == pytest.approx(0.005)
