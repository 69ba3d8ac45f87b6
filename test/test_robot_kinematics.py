"""Forward kinematics from the URDF (robot/kinematics.py) against MuJoCo's own TCP site, per robot."""

from __future__ import annotations

import numpy as np
import pytest

from robofollow_ros.errors import SimulationError
from robofollow_ros.robot.description import load_robot
from robofollow_ros.robot.kinematics import forward_kinematics, quaternion_from_matrix
from robofollow_ros.robot.specs import robot_names
from robofollow_ros.sim.kinematics import Kinematics
from robofollow_ros.sim.model import CellModel
from robofollow_ros.state_layout import ARM_SLICE, ARMS

pytestmark = pytest.mark.sim

CONFIGURATIONS = 1000
POSITION_TOLERANCE = 1e-3
"""m (issue 20: FK within 1 mm of the simulator's TCP)."""
ORIENTATION_TOLERANCE = 0.5
"""degrees."""


def rotation_angle_deg(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.degrees(np.arccos(np.clip((np.trace(a.T @ b) - 1.0) / 2.0, -1.0, 1.0))))


@pytest.mark.parametrize('robot', robot_names())
def test_fk_matches_mujoco_tcp_on_random_configurations(robot: str) -> None:
    description = load_robot(robot)
    mujoco_kin = Kinematics(CellModel.build([], robot=description))
    fk = forward_kinematics(robot)
    rng = np.random.default_rng(20)
    worst_position = worst_angle = 0.0
    for _ in range(CONFIGURATIONS):
        state = rng.uniform(description.state_lower(), description.state_upper())
        poses = fk.tcp_poses(state)
        for arm in ARMS:
            position, rotation = mujoco_kin.fk_matrix(arm, state[ARM_SLICE[arm]])
            worst_position = max(worst_position, float(np.linalg.norm(poses[arm].position - position)))
            worst_angle = max(worst_angle, rotation_angle_deg(poses[arm].rotation, rotation))
    print(f'{robot}: max TCP position error {worst_position:.3g} m, orientation {worst_angle:.3g} deg')
    assert worst_position <= POSITION_TOLERANCE
    assert worst_angle <= ORIENTATION_TOLERANCE


def test_home_pose_is_the_documented_top_down_tcp() -> None:
    # docs/cell.md: the primitive robot's home TCP at (-/+0.28, -0.270, 0.949), quaternion (0.5, -0.5, 0.5, 0.5).
    fk = forward_kinematics('primitive')
    poses = fk.tcp_poses(load_robot('primitive').home_state())
    np.testing.assert_allclose(poses['left'].position, [-0.28, -0.270, 0.949], atol=1e-3)
    np.testing.assert_allclose(poses['right'].position, [0.28, -0.270, 0.949], atol=1e-3)
    np.testing.assert_allclose(poses['left'].quaternion, [0.5, -0.5, 0.5, 0.5], atol=1e-3)
    # The TCP's +x (fingertips) points down.
    np.testing.assert_allclose(poses['left'].rotation[:, 0], [0.0, 0.0, -1.0], atol=1e-3)


def test_fk_from_joint_state_names_matches_the_state() -> None:
    description = load_robot('aloha')
    fk = forward_kinematics('aloha')
    state = description.home_state() + 0.1
    layout = description.joint_layout
    names = [*layout.arm_joints['right'], *layout.arm_joints['left'], 'left_left_finger']
    positions = [*state[ARM_SLICE['right']], *state[ARM_SLICE['left']], 0.02]
    poses = fk.tcp_poses_from_joints(names, positions)
    expected = fk.tcp_poses(state)
    for arm in ARMS:
        np.testing.assert_allclose(poses[arm].position, expected[arm].position)
    only_left = fk.tcp_poses_from_joints(list(layout.arm_joints['left']), list(state[ARM_SLICE['left']]))
    assert set(only_left) == {'left'}


@pytest.mark.parametrize('bad', [[0.0] * 5, [0.0] * 5 + [float('inf')]])
def test_fk_refuses_malformed_joints(bad: list[float]) -> None:
    with pytest.raises(SimulationError, match='left arm: forward kinematics needs 6 finite joint positions'):
        forward_kinematics('aloha').tcp_pose('left', bad)


def test_quaternion_from_matrix_round_trips_every_branch() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        w, x, y, z = q
        rot = np.array(
            [
                [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
            ]
        )
        np.testing.assert_allclose(quaternion_from_matrix(rot), q if w >= 0 else -q, atol=1e-9)


@pytest.mark.parametrize('robot', robot_names())
def test_the_batched_tcp_positions_are_the_single_state_poses(robot: str) -> None:
    fk = forward_kinematics(robot)
    states = np.random.default_rng(5).uniform(-3.0, 3.0, (200, 14))
    batched = fk.tcp_positions(states)
    single = np.array([[fk.tcp_poses(state)[arm].position for arm in ARMS] for state in states])
    assert batched.shape == (200, 2, 3)
    np.testing.assert_allclose(batched, single, rtol=0.0, atol=1e-12)
    bad = states[:3].copy()
    bad[1, 8] = np.nan
    with pytest.raises(SimulationError, match='right arm'):
        fk.tcp_positions(bad)
    with pytest.raises(SimulationError, match=r'\(N, 14\)'):
        fk.tcp_positions(states[0])


@pytest.mark.parametrize('robot', robot_names())
def test_the_joint_reach_bounds_every_tcp_move_and_is_not_loose_at_the_first_joint(robot: str) -> None:
    """``joint_reach`` lets the bridge skip forward kinematics while a late state's commanded motion cannot have taken
    a TCP far: it must bound every move, and be near what the arm can do (else the exact check runs every time)."""
    fk = forward_kinematics(robot)
    rng = np.random.default_rng(11)
    states = rng.uniform(-3.0, 3.0, (500, 14))
    turned = states + rng.uniform(-0.2, 0.2, states.shape)
    moved = np.linalg.norm(fk.tcp_positions(turned) - fk.tcp_positions(states), axis=-1)
    for index, arm in enumerate(ARMS):
        reach = fk.joint_reach(arm)
        assert reach.shape == (6,) and np.all(reach > 0.0) and np.all(np.diff(reach) <= 0.0)  # shorter towards the TCP
        bound = np.abs(turned - states)[:, ARM_SLICE[arm]] @ reach
        assert np.all(moved[:, index] <= bound + 1e-12), robot
        # A turn of the first joint alone: the TCP moves on a circle about its axis, at most the reach away.
        alone = states.copy()
        alone[:, ARM_SLICE[arm].start] += 0.01
        first = np.linalg.norm(fk.tcp_positions(alone)[:, index] - fk.tcp_positions(states)[:, index], axis=-1)
        assert first.max() <= 0.01 * reach[0] + 1e-12 and first.max() >= 0.01 * reach[0] / 2, (first.max(), reach[0])
