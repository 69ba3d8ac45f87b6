"""CellEnv: determinism, executor timing, chunk validation, recorded frames, observations and images."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robofollow_ros.benchmark import registry
from robofollow_ros.errors import PolicyError, SimulationError
from robofollow_ros.robot.specs import robot_names
from robofollow_ros.sim.constants import TIMESTEP
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.motion import MotionPlanner, Plan
from robofollow_ros.sim.rotations import matrix_from_quat, quat_from_matrix, top_down

pytestmark = pytest.mark.sim
TASK_ID = 'L0_place_yellow_block_3_behind_red_cylinder'


@pytest.fixture(scope='module', params=robot_names())
def env(request: pytest.FixtureRequest) -> CellEnv:
    cell_env = CellEnv(render=False, robot=request.param)
    yield cell_env
    cell_env.close()


def _scripted_rows(env: CellEnv, obs) -> np.ndarray:
    planner = MotionPlanner(env.kinematics)
    centre = obs.object_pos['yellow_block_3']
    plan = Plan(obs.state)
    plan.add(planner.grasp(plan.state, 'right', np.array([*centre[:2], planner.grasp_height(centre[2])]), lift=0.06))
    plan.add(planner.place(plan.state, 'right', np.array([0.10, 0.02, planner.grasp_height(centre[2])])))
    plan.add(planner.home(plan.state, 'right'))
    return plan.rows()


def _run(env: CellEnv, seed: int) -> tuple[object, np.ndarray]:
    task = registry.get_task(TASK_ID)
    obs = env.reset(task, seed=seed)
    rows = _scripted_rows(env, obs)
    for start in range(0, len(rows), 50):
        env.execute(rows[start : start + 50])
    return env.trajectory(), rows


def _assert_same(a, b) -> None:
    assert np.array_equal(a.t, b.t)
    for arm in ('left', 'right'):
        assert np.array_equal(a.ee[arm], b.ee[arm])
        assert np.array_equal(a.ee_quat[arm], b.ee_quat[arm])
        assert np.array_equal(a.grip[arm], b.grip[arm])
    assert a.obj_pos.keys() == b.obj_pos.keys()
    for name in a.obj_pos:
        assert np.array_equal(a.obj_pos[name], b.obj_pos[name])
        assert np.array_equal(a.obj_quat[name], b.obj_quat[name])


def test_same_task_and_seed_give_identical_trajectories(env: CellEnv) -> None:
    first, rows = _run(env, seed=42)
    registry_env = CellEnv(render=False, robot=env.robot.name)
    try:
        other_layout = registry.get_layout(4, 'scene4_1')
        registry_env.reset(registry.training_labels(scene=4)[0], seed=1, layout=other_layout)
        second, _ = _run(registry_env, seed=42)
    finally:
        registry_env.close()
    third, _ = _run(env, seed=42)
    _assert_same(first, second)
    _assert_same(first, third)
    assert len(first) == len(rows) + 1
    lifted = first.obj_pos['yellow_block_3'][:, 2].max() - first.obj_pos['yellow_block_3'][0, 2]
    assert lifted > 0.03


def test_different_seeds_perturb_the_initial_layout(env: CellEnv) -> None:
    task = registry.get_task(TASK_ID)
    a = env.reset(task, seed=1).object_pos['yellow_block_3']
    b = env.reset(task, seed=2).object_pos['yellow_block_3']
    assert not np.allclose(a, b)


def test_model_is_reused_when_the_object_set_is_unchanged(env: CellEnv) -> None:
    task = registry.get_task(TASK_ID)
    env.reset(task, seed=1, layout=registry.get_layout(1, 'default'))
    model = env.cell.model
    env.reset(task, seed=1, layout=registry.get_layout(1, 'scene1_2'))
    assert env.cell.model is model
    env.reset(registry.training_labels(scene=3)[0], seed=1)
    assert env.cell.model is not model


def test_row_duration_follows_nominal_time_and_velocity_limits(env: CellEnv) -> None:
    obs = env.reset(registry.get_task(TASK_ID), seed=5)
    steps_of = lambda seconds: math.ceil(seconds / TIMESTEP - 1e-9) * TIMESTEP  # noqa: E731
    small = obs.state.copy()
    small[0] += 0.01
    after_small = env.execute(small[None])
    assert after_small.time == pytest.approx(steps_of(0.06))
    big = after_small.state.copy()
    big[7] += 0.5
    speed = env.robot.arms['right'].velocity[0]
    expected = steps_of(0.5 / speed)
    after_big = env.execute(big[None])
    assert after_big.time - after_small.time == pytest.approx(expected, abs=1e-9)
    # The servo ends a full-speed row up to one physics step ahead of its target (measured 6.8 mrad at the
    # primitive's 2 rad/s, 10.0 mrad at the Piper's 3 rad/s).
    assert after_big.state[7] == pytest.approx(big[7], abs=max(0.01, speed * TIMESTEP))
    grip = after_big.state.copy()
    grip[6] = 0.0
    after_grip = env.execute(grip[None])
    assert after_grip.time - after_big.time == pytest.approx(steps_of(0.2))
    assert after_grip.state[6] == 0.0
    traj = env.trajectory()
    assert len(traj) == 4
    assert traj.t[0] == 0.0
    assert np.allclose(np.diff(traj.t), [after_small.time, after_big.time - after_small.time, 0.2])


@pytest.mark.parametrize(
    'chunk',
    [np.zeros((3, 13)), np.zeros((0, 14)), np.zeros((2, 2, 14)), np.full((2, 14), np.nan), np.full((1, 14), np.inf)],
    ids=['thirteen-columns', 'empty', 'three-dimensional', 'nan', 'inf'],
)
def test_bad_chunks_raise_policy_error_before_moving(env: CellEnv, chunk: np.ndarray) -> None:
    obs = env.reset(registry.get_task(TASK_ID), seed=5)
    with pytest.raises(PolicyError):
        env.execute(chunk)
    assert env.observe(images=False).time == obs.time
    assert len(env.trajectory()) == 1


def test_execute_before_reset_is_a_simulation_error() -> None:
    fresh = CellEnv(render=False)
    with pytest.raises(SimulationError):
        fresh.execute(np.tile(fresh.robot.home_state(), (1, 1)))


def test_unknown_robot_is_a_simulation_error() -> None:
    with pytest.raises(SimulationError, match='unknown robot'):
        CellEnv(render=False, robot='ur5')


HOME_YAW = {'piper': {'left': 1.1442, 'right': -1.1442}}
"""Yaw of the home TCP where it is not the protocol's top-down (the Piper's bases stand near the middle and its arms
fold outward at home, each wrist roll at 0, so the grippers turn with the waists)."""


def test_observation_tcp_frame_convention(env: CellEnv) -> None:
    obs = env.reset(registry.get_task(TASK_ID), seed=5)
    for arm in ('left', 'right'):
        rot = matrix_from_quat(obs.ee_quat[arm])
        fingertip = obs.ee_pos[arm] + rot @ np.array([0.04, 0.0, 0.0])
        assert fingertip == pytest.approx(obs.ee_pos[arm] + np.array([0.0, 0.0, -0.04]), abs=1e-3)
        yaw = HOME_YAW.get(env.robot.name, {}).get(arm, 0.0)
        protocol_top_down = np.array([-0.5, 0.5, -0.5, -0.5])
        expected = protocol_top_down if yaw == 0.0 else quat_from_matrix(top_down(yaw))
        assert abs(float(obs.ee_quat[arm] @ expected)) == pytest.approx(1.0, abs=1e-5)
    assert obs.state == pytest.approx(env.robot.home_state(), abs=2e-3)
    assert obs.images == {}


@pytest.mark.parametrize('robot', robot_names())
def test_images_are_rendered_only_when_requested(robot: str) -> None:
    rendering = CellEnv(render=True, robot=robot)
    try:
        obs = rendering.reset(registry.get_task(TASK_ID), seed=5)
        assert set(obs.images) == {'cam_high', 'cam_left_wrist', 'cam_right_wrist'}
        for image in obs.images.values():
            assert image.shape == (240, 320, 3) and image.dtype == np.uint8
            assert image.std() > 5.0, 'a blank image'
        assert rendering.execute(rendering.robot.home_state()[None], images=False).images == {}
    finally:
        rendering.close()


def test_visual_hulls_change_only_how_meshes_are_drawn() -> None:
    images = {}
    for hulls in (False, True):
        with CellEnv(render=True, robot='aloha', visual_hulls=hulls) as cell:
            images[hulls] = cell.reset(registry.get_task(TASK_ID), seed=5).images['cam_high']
    differ = np.any(images[False] != images[True], axis=2)
    assert 0 < differ.mean() < 0.15, 'only the arms (a small part of cam_high) may look different'
