"""Friction grasps with the motion primitives: every object kind is lifted >= 3 cm and held for 1 s, no welds."""

from __future__ import annotations

import numpy as np
import pytest

from robofollow_ros.benchmark import registry
from robofollow_ros.robot.specs import robot_names
from robofollow_ros.sim import physics
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.motion import MotionPlanner, Plan

pytestmark = pytest.mark.sim
HOLD_ROWS = 17
"""17 rows of 0.06 s: just over one simulated second."""
CREEP_ROWS = 50
MAX_CREEP = 0.00025
"""Grasp creep bound (m/s) relative to the TCP; measured 0.19 mm/s for spheres, 0.14 cylinders, 0.07 boxes."""

CASES = [
    (1, 'default', 'red_sphere', 'left'),
    (1, 'default', 'yellow_block_1', 'right'),
    (1, 'default', 'red_cylinder', 'right'),
    (3, 'default', 'red_bar_2', 'right'),
    (3, 'scene3.2', 'yellow_bar_4', 'left'),
    (4, 'scene4_1', 'blue_sphere', 'left'),
    (4, 'scene4_1', 'yellow_cylinder', 'left'),
    (4, 'scene4_1', 'green_cylinder_top', 'right'),
    (4, 'scene4_1', 'red_cube_in_bowl', 'left'),
    (2, 'default', 'large_blue_cube', 'left'),
]


@pytest.fixture(scope='module', params=robot_names())
def env(request: pytest.FixtureRequest) -> CellEnv:
    cell_env = CellEnv(render=False, robot=request.param)
    yield cell_env
    cell_env.close()


@pytest.mark.parametrize(('scene', 'layout_name', 'item', 'arm'), CASES)
def test_grasp_lift_and_hold(env: CellEnv, scene: int, layout_name: str, item: str, arm: str) -> None:
    layout = registry.get_layout(scene, layout_name)
    start = env.reset(registry.training_labels(scene=scene)[0], seed=3, layout=layout)
    assert env.cell.model.neq == 0, 'no equality constraints (welds) may exist'
    assert env.cell.object_index[item].qpos >= 0, 'the object must be a free body'
    planner = MotionPlanner(env.kinematics)
    spec = layout.spec(item)
    centre = start.object_pos[item]
    top = centre[2] + spec.half_height
    in_bowl = layout.placement(item).inside is not None
    height = top - 0.012 if in_bowl else planner.grasp_height(centre[2], top_z=top)
    plan = Plan(start.state)
    plan.add(planner.grasp(plan.state, arm, np.array([centre[0], centre[1], height]), yaw=0.0, lift=0.10))
    lifted = env.execute(plan.rows())
    held = env.execute(planner.hold(plan.state, HOLD_ROWS))
    z0 = start.object_pos[item][2]
    assert lifted.object_pos[item][2] - z0 >= 0.03
    assert held.object_pos[item][2] - z0 >= 0.03
    assert held.time - lifted.time >= 1.0
    assert lifted.object_pos[item][2] - held.object_pos[item][2] < 0.002, 'the object slips out of the grasp'
    assert physics.fingers_touching(env.cell, env.data, arm, item) == 2
    assert 'table' not in physics.contacts_of(env.cell, env.data, item)
    assert held.state[6 if arm == 'left' else 13] == 0.0
    assert held.finger_opening[arm] > 0.2, 'fingers stopped by the object, not closed on nothing'
    later = env.execute(planner.hold(plan.state, CREEP_ROWS))
    creep = np.linalg.norm((later.object_pos[item] - later.ee_pos[arm]) - (held.object_pos[item] - held.ee_pos[arm]))
    assert creep / (later.time - held.time) < MAX_CREEP, f'{item} creeps {creep * 1000:.2f} mm in the grasp'


def test_released_object_falls_back_to_the_table(env: CellEnv) -> None:
    layout = registry.get_layout(1, 'default')
    start = env.reset(registry.training_labels(scene=1)[0], seed=3, layout=layout)
    planner = MotionPlanner(env.kinematics)
    centre = start.object_pos['yellow_block_3']
    plan = Plan(start.state)
    plan.add(planner.grasp(plan.state, 'right', np.array([*centre[:2], planner.grasp_height(centre[2])]), lift=0.05))
    plan.add(planner.place(plan.state, 'right', np.array([centre[0], centre[1] + 0.05, planner.grasp_height(0.76)])))
    end = env.execute(plan.rows())
    assert end.object_pos['yellow_block_3'][1] == pytest.approx(centre[1] + 0.05, abs=0.01)
    assert end.object_pos['yellow_block_3'][2] == pytest.approx(centre[2], abs=0.003)
    assert physics.fingers_touching(env.cell, env.data, 'right', 'yellow_block_3') == 0
