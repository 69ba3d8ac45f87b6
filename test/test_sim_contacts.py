"""Contacts between objects: releases onto stacks and into bowls stay shallow and disturb nothing else."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from robofollow_ros.benchmark import registry
from robofollow_ros.robot.specs import robot_names
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.physics import set_object_pose

pytestmark = pytest.mark.sim
MAX_PENETRATION = 0.003
MAX_DISTURBANCE = 0.0005
"""Items nobody touched may move at most this much while another one lands."""
SETTLE_STEPS = 375
"""1.5 simulated seconds."""

RELEASES = [
    (4, 'scene4_2', 'green_cylinder_top', 'yellow_cylinder', 0.004, 0.0),
    (4, 'scene4_2', 'green_cylinder_top', 'yellow_cylinder', 0.004, 0.008),
    (2, 'default', 'small_blue_cylinder', 'large_red_cylinder', 0.004, 0.006),
    (4, 'scene4_3', 'red_sphere', 'bowl', 0.005, 0.0),
    (4, 'scene4_2', 'yellow_cylinder', 'bowl', 0.005, 0.008),
    (2, 'default', 'small_blue_cylinder', 'yellow_bowl', 0.005, 0.0),
    (2, 'default', 'small_blue_cylinder', 'yellow_bowl', 0.005, 0.008),
    (2, 'default', 'small_red_cube', 'green_bowl', 0.005, 0.008),
]
"""(scene, layout, dropped item, support, gap under its bottom, off-centre offset): the expert's releases."""


@pytest.fixture(scope='module', params=robot_names())
def env(request: pytest.FixtureRequest) -> CellEnv:
    with CellEnv(render=False, robot=request.param) as cell:
        yield cell


def _top(layout, support: str, centre_z: float) -> float:
    spec = layout.spec(support)
    return centre_z + (spec.size[1] / 2.0 if spec.shape == 'bowl' else spec.half_height)


@pytest.mark.parametrize(('scene', 'name', 'item', 'support', 'gap', 'offset'), RELEASES)
def test_release_lands_shallow_and_disturbs_nothing(
    env: CellEnv, scene: int, name: str, item: str, support: str, gap: float, offset: float
) -> None:
    layout = registry.get_layout(scene, name)
    start = env.reset(registry.training_labels(scene=scene)[0], seed=1, layout=layout)
    cell, data = env.cell, env.data
    below = start.object_pos[support]
    bottom = _top(layout, support, below[2]) + gap
    drop = np.array([below[0] + offset, below[1], bottom + layout.spec(item).half_height])
    set_object_pose(cell, data, item, drop)
    mujoco.mj_forward(cell.model, data)
    others = [n for n in cell.object_names if n != item]
    before = {n: data.xpos[cell.object_index[n].body].copy() for n in others}
    object_geoms = {g for index in cell.object_index.values() for g in index.geoms}
    deepest = 0.0
    for _ in range(SETTLE_STEPS):
        mujoco.mj_step(cell.model, data)
        for contact in data.contact[: data.ncon]:
            if contact.geom1 in object_geoms or contact.geom2 in object_geoms:
                deepest = max(deepest, -float(contact.dist))
    assert deepest <= MAX_PENETRATION, f'{item} sank {deepest * 1000:.2f} mm into something'
    for n in others:
        moved = float(np.linalg.norm(data.xpos[cell.object_index[n].body] - before[n]))
        assert moved <= MAX_DISTURBANCE, f'{n} moved {moved * 1000:.2f} mm while {item} landed'
    dof = cell.object_index[item].dof
    assert float(np.linalg.norm(data.qvel[dof : dof + 3])) < 0.005, f'{item} is still sliding'
    if layout.spec(item).shape == 'cylinder' and layout.spec(support).shape == 'cylinder':
        axis = data.xmat[cell.object_index[item].body].reshape(3, 3)[:, 2]
        assert axis[2] > 0.999, f'{item} tipped over on {support}'
