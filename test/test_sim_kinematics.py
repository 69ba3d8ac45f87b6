"""Forward/inverse kinematics and the motion primitives built on them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robofollow_ros.robot.description import load_robot
from robofollow_ros.robot.specs import robot_names
from robofollow_ros.sim.kinematics import Kinematics, UnreachablePoseError
from robofollow_ros.sim.model import CellModel
from robofollow_ros.sim.motion import MotionPlanner, Plan, nearest_equivalent_turn
from robofollow_ros.sim.rotations import top_down
from robofollow_ros.state_layout import ARM_SLICE

pytestmark = pytest.mark.sim


ZERO_POSE_TCP = {
    'primitive': [-0.28, -0.44 + 0.15 + 0.20 + 0.06 + 0.065, 0.74 + 0.05 + 0.07 + 0.35],
    'aloha': [-0.25, -0.35 + 0.05955 + 0.2 + 0.1 + 0.069744 + 0.1287, 0.74 + 0.079 + 0.04805 + 0.3],
    'piper': [-0.08 + 0.0000012, -0.34 + 0.1657245, 0.74 + 0.22 + 0.2227733],
}
"""Left TCP at the zero pose: base + every link offset along the arm's reach (world +y) and up (URDF geometry; the
Piper's zero pose is folded, its chain ends 0.166 m in front of and 0.223 m above the base on its pedestal, and
piper_description's 1.5708 for pi/2 leaves it 1.2 um to the side)."""
ZERO_POSE_REACH = {'piper': [0.0000102, 0.9962002, 0.0870932]}
"""The TCP's +x at the zero pose where it is not world +y (the Piper's tool axis points 5 degrees up there)."""
TOP_DOWN_BOX = {
    'primitive': ((-0.2, 0.2), (-0.22, 0.0), (0.77, 0.95)),
    'aloha': ((-0.2, 0.2), (-0.22, 0.0), (0.77, 0.90)),
    'piper': ((-0.2, 0.2), (-0.22, 0.0), (0.77, 0.90)),
}
"""Random top-down IK targets (x, y, z ranges): the operation area up to 0.16 m (ALOHA, Piper) / 0.21 m above the
table; a ViperX reaching across to the far side cannot point straight down higher than that."""


@pytest.fixture(scope='module', params=robot_names())
def kin(request: pytest.FixtureRequest) -> Kinematics:
    return Kinematics(CellModel.build([], robot=load_robot(request.param)))


def home_state(kin: Kinematics) -> np.ndarray:
    return kin.cell.robot.home_state()


@pytest.fixture(scope='module')
def planner(kin: Kinematics) -> MotionPlanner:
    return MotionPlanner(kin)


def test_top_down_yaw_convention() -> None:
    assert top_down(0.0)[:, 0] == pytest.approx([0.0, 0.0, -1.0])
    assert top_down(0.0)[:, 1] == pytest.approx([-1.0, 0.0, 0.0])
    assert top_down(math.pi / 2.0)[:, 1] == pytest.approx([0.0, -1.0, 0.0])


def test_fk_of_zero_pose_matches_the_urdf_geometry(kin: Kinematics) -> None:
    pos, rot = kin.fk_matrix('left', np.zeros(6))
    assert pos == pytest.approx(ZERO_POSE_TCP[kin.cell.robot.name], abs=1e-6)
    assert rot[:, 0] == pytest.approx(ZERO_POSE_REACH.get(kin.cell.robot.name, [0.0, 1.0, 0.0]), abs=1e-7)


@pytest.mark.parametrize('arm', ['left', 'right'])
def test_ik_recovers_random_top_down_poses(kin: Kinematics, arm: str) -> None:
    rng = np.random.default_rng(0)
    box = TOP_DOWN_BOX[kin.cell.robot.name]
    for _ in range(25):
        target = np.array([rng.uniform(*box[0]), rng.uniform(*box[1]), rng.uniform(*box[2])])
        yaw = rng.uniform(-math.pi / 2.0, math.pi / 2.0)
        solution = kin.solve(arm, target, yaw=yaw, symmetric=False)
        assert solution.success, (target, yaw)
        desc = kin.cell.robot.arms[arm]
        assert np.all(solution.q >= desc.lower - 1e-9) and np.all(solution.q <= desc.upper + 1e-9)
        pos, rot = kin.fk_matrix(arm, solution.q)
        assert pos == pytest.approx(target, abs=3e-4)
        assert np.abs(rot - top_down(yaw)).max() < 5e-3


def test_ik_of_one_arm_does_not_depend_on_what_was_solved_for_the_other(kin: Kinematics) -> None:
    target = np.array([-0.05, -0.1, 0.82])
    fresh = Kinematics(kin.cell).solve('left', target, yaw=0.3, symmetric=False).q
    used = Kinematics(kin.cell)
    used.solve('right', np.array([0.1, -0.05, 0.8]), yaw=-0.4, symmetric=False)
    np.testing.assert_array_equal(used.solve('left', target, yaw=0.3, symmetric=False).q, fresh)


def test_unreachable_pose_is_reported(kin: Kinematics) -> None:
    far = np.array([0.9, 0.6, 0.75])
    solution = kin.solve('left', far)
    assert not solution.success
    assert solution.position_error > 0.1
    with pytest.raises(UnreachablePoseError, match='left arm cannot reach'):
        kin.solve_or_raise('left', far)


def test_symmetric_ik_prefers_the_solution_near_the_seed(kin: Kinematics) -> None:
    target = np.array([0.0, -0.1, 0.8])
    seed = kin.solve('right', target, yaw=0.0, symmetric=False).q
    flipped = kin.solve('right', target, yaw=math.pi, seed=seed, symmetric=True)
    assert flipped.success
    assert np.abs(flipped.q - seed).max() < 1e-3


def test_linear_move_keeps_the_tcp_on_the_straight_line(kin: Kinematics, planner: MotionPlanner) -> None:
    plan = Plan(home_state(kin))
    plan.add(planner.move_to(plan.state, 'left', np.array([-0.10, -0.10, 0.85])))
    start = kin.fk('left', plan.state[ARM_SLICE['left']])[0]
    goal = np.array([0.05, -0.05, 0.80])
    rows = planner.linear(plan.state, 'left', goal, yaw=0.3)
    assert len(rows) == math.ceil(np.linalg.norm(goal - start) / planner.cartesian_step)
    direction = (goal - start) / np.linalg.norm(goal - start)
    for row in rows:
        pos, rot = kin.fk_matrix('left', row[ARM_SLICE['left']])
        offset = pos - start
        assert np.linalg.norm(offset - (offset @ direction) * direction) < 1e-3
        assert rot[:, 0] == pytest.approx([0.0, 0.0, -1.0], abs=5e-3)
    assert kin.fk('left', rows[-1][ARM_SLICE['left']])[0] == pytest.approx(goal, abs=3e-4)
    assert np.array_equal(rows[:, 7:], np.tile(plan.state[7:], (len(rows), 1))), 'the other arm must not move'


def test_joint_rows_respect_the_velocity_limits(kin: Kinematics, planner: MotionPlanner) -> None:
    home = home_state(kin)
    target = home[ARM_SLICE['right']] + np.array([1.0, -0.3, 0.2, 0.5, 0.1, -2.0])
    rows = planner.joint_rows(home, 'right', target)
    steps = np.diff(np.vstack([home, rows]), axis=0)[:, ARM_SLICE['right']]
    assert np.all(np.abs(steps) <= kin.cell.robot.arms['right'].velocity * 0.06 + 1e-12)
    assert rows[-1][ARM_SLICE['right']] == pytest.approx(target)


def test_a_straight_line_that_turns_the_wrist_fast_gets_more_rows() -> None:
    # The Piper's expert placing a bar `short_right` (L1_scene3_1__l_pick4_around2_to1_short_right): a quarter turn
    # over 12 cm near the wrist's singularity, 16 rows by the TCP's step, turned joint6 at 3.2 rad/s (limit 3.0) in
    # one row; over the real graph the bridge cut the chunk there and refused every chunk after it.
    planner = MotionPlanner(Kinematics(CellModel.build([], robot=load_robot('piper'))))
    left = [0.10184084995981638, 2.159340156547524, -0.36371634606681114, 0.00020242127344357024]
    left += [-0.13762486144948513, 0.10162748708189581, 0.0]
    state = np.array([*left, -1.1442, 1.8326, -0.6358, 0.0, 0.4607, 0.0, 1.0])
    goal = np.array([-0.19205693703096452, -0.13084501290067563, 0.8310543664908265])
    rows = planner.linear(state, 'left', goal, yaw=-1.5707836052779405)
    steps = np.abs(np.diff(np.vstack([state, rows]), axis=0))[:, ARM_SLICE['left']]
    budget = planner.kin.cell.robot.arms['left'].velocity * 0.06 * planner.joint_speed
    assert len(rows) > 16 and np.all(steps <= budget + 1e-12), steps.max(axis=0)
    assert planner.kin.fk('left', rows[-1][ARM_SLICE['left']])[0] == pytest.approx(goal, abs=3e-4)


def test_grasp_sequence_opens_descends_closes_and_lifts(kin: Kinematics, planner: MotionPlanner) -> None:
    goal = np.array([-0.14, -0.04, planner.grasp_height(0.76)])
    rows = planner.grasp(home_state(kin), 'left', goal, pregrasp=0.08, lift=0.10)
    z = np.array([kin.fk('left', r[ARM_SLICE['left']])[0][2] for r in rows])
    closed = np.flatnonzero(rows[:, 6] == 0.0)
    assert closed.size and np.all(rows[: closed[0], 6] == 1.0)
    assert z[closed[0]] == pytest.approx(goal[2], abs=3e-4)
    assert z[-1] == pytest.approx(goal[2] + 0.10, abs=3e-4)
    assert planner.grasp_height(0.755) == pytest.approx(0.74 + planner.fingertip_offset + 0.003)
    top = 0.775 + planner.palm_offset + 0.01
    assert planner.grasp_height(0.775, top_z=top) == pytest.approx(top - planner.palm_offset + 0.003)


def test_nearest_equivalent_turn_uses_gripper_symmetry() -> None:
    assert nearest_equivalent_turn(math.pi) == pytest.approx(0.0)
    assert nearest_equivalent_turn(0.75 * math.pi) == pytest.approx(-0.25 * math.pi)
    assert nearest_equivalent_turn(-0.6 * math.pi) == pytest.approx(0.4 * math.pi)
