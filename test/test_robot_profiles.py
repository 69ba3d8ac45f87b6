"""Robot profiles (config/robots/*.yaml): the shipped ones load and agree with the robot description, conversions
between the policy's 14-D and each driver's units are exact inverses, and a wrong profile is refused in one line
naming the file and the field."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from robofollow_ros.errors import ProfileError
from robofollow_ros.robot.description import load_robot
from robofollow_ros.robot.profiles import (
    arm_from_driver,
    arm_state_from_joint_state,
    arm_to_driver,
    from_driver,
    load_profile,
    parse_profile,
    profile_names,
    profile_path,
    to_driver,
)
from robofollow_ros.state_layout import ARM_COLUMNS, ARMS

SHIPPED = ('aloha_interbotix', 'aloha_ros2_control', 'aloha_xsarm_ros_control', 'piper')


def raw(name: str) -> dict[str, Any]:
    document = yaml.safe_load(profile_path(name).read_text())
    assert isinstance(document, dict)
    return document


def test_the_driver_profiles_ship_and_load() -> None:
    assert set(SHIPPED) <= set(profile_names())
    kinds = {name: load_profile(name).driver for name in SHIPPED}
    assert kinds == {
        'aloha_ros2_control': 'ros2_control',
        'aloha_xsarm_ros_control': 'ros2_control',
        'aloha_interbotix': 'interbotix_xs',
        'piper': 'piper',
    }


def test_driver_facts_of_each_profile() -> None:
    jtc = load_profile('aloha_ros2_control')
    assert jtc.arms['left'].command.topic == '/left_arm_controller/joint_trajectory'
    assert jtc.arms['right'].command.type == 'trajectory_msgs/msg/JointTrajectory'
    assert jtc.arms['right'].gripper.interface.topic == '/right_gripper_controller/joint_trajectory'
    xs = load_profile('aloha_interbotix')
    assert xs.arms['left'].command.topic == '/follower_left/commands/joint_group'
    assert xs.arms['left'].command.type == 'interbotix_xs_msgs/msg/JointGroupCommand'
    assert xs.arms['right'].gripper.interface.topic == '/follower_right/commands/joint_single'
    assert (xs.arms['left'].gripper.command.closed, xs.arms['left'].gripper.command.open) == (0.6197, 1.6214)
    assert xs.control_rate == 50.0 and xs.joint_limits == 'refuse'
    piper = load_profile('piper')
    assert piper.arms['left'].command.type == 'sensor_msgs/msg/JointState'
    assert piper.arms['left'].command.topic.endswith('/joint_ctrl_single')
    assert piper.arms['left'].gripper.command.unit == 'm' and piper.speed_percent == 50.0
    assert all(load_profile(name).row_period == 0.06 for name in SHIPPED)


@pytest.mark.parametrize('name', ['aloha_ros2_control', 'aloha_interbotix'])
def test_aloha_profiles_agree_with_the_robot_description(name: str) -> None:
    profile = load_profile(name)
    robot = load_robot('aloha')
    assert profile.robot == 'aloha'
    for arm in ARMS:
        described = robot.arms[arm]
        names = profile.arms[arm].joints
        assert [n if n.startswith(f'{arm}_') else f'{arm}_{n}' for n in names] == list(described.joints)
        assert np.allclose(profile.arms[arm].lower, described.lower)
        assert np.allclose(profile.arms[arm].upper, described.upper)
        assert np.allclose(profile.arms[arm].velocity, described.velocity, atol=1e-5)
    assert np.allclose(profile.home_state(), robot.home_state())


def test_the_piper_profile_agrees_with_the_piper_cell() -> None:
    profile = load_profile('piper')
    robot = load_robot('piper')
    assert profile.robot == 'piper'
    for arm in ARMS:
        described, spec = robot.arms[arm], profile.arms[arm]
        assert [f'{arm}_{name}' for name in spec.joints] == list(described.joints)
        narrower = np.flatnonzero((spec.lower > described.lower) | (spec.upper < described.upper))
        assert narrower.tolist() == [3, 5], 'joint4 and joint6 kept clear of the wrist end stops, the rest as the URDF'
        np.testing.assert_allclose(spec.velocity, described.velocity)
        assert spec.gripper.command.open == pytest.approx(described.opening)  # 0.07 m: both fingers' travel
    np.testing.assert_allclose(profile.home_state(), robot.home_state())


def test_ros2_control_gripper_reads_the_joint_states_the_simulated_cell_publishes() -> None:
    """The sim's /joint_states carry each gripper as its first finger's position in metres (robot description's
    JointLayout): the ros2_control profile must read them back as the same normalised value."""
    profile = load_profile('aloha_ros2_control')
    layout = load_robot('aloha').joint_layout
    for arm in ARMS:
        state = np.append(load_robot('aloha').home_state()[ARM_COLUMNS[arm]][:6], 0.3)
        names = [*layout.arm_joints[arm], layout.grippers[arm]]
        positions = [*state[:6], 0.3 * layout.gripper_scale]
        read = arm_state_from_joint_state(profile, arm, names, positions)
        assert read is not None
        np.testing.assert_allclose(read, state, atol=1e-12)


def signed(name: str) -> Any:
    """A shipped profile with mixed signs and offsets, to exercise the joint mapping both ways."""
    document = raw(name)
    for arm in ARMS:
        document['arms'][arm]['signs'] = [1, -1, 1, -1, -1, 1]
        document['arms'][arm]['offsets'] = [0.1, -0.2, 0.0, 1.5, -0.05, 0.3]
    return parse_profile(document, path=Path(f'{name}-signed.yaml'))


@pytest.mark.parametrize('name', SHIPPED)
def test_policy_to_driver_and_back_round_trips(name: str) -> None:
    rng = np.random.default_rng(7)
    for profile in (load_profile(name), signed(name)):
        for _ in range(200):
            action = rng.uniform(profile.state_lower(), profile.state_upper())
            commands = to_driver(profile, action)
            np.testing.assert_allclose(from_driver(profile, commands), action, atol=1e-12)
            for arm in ARMS:
                spec = profile.arms[arm]
                joints = action[ARM_COLUMNS[arm]][:6]
                np.testing.assert_allclose(commands[arm].positions, spec.signs * joints + spec.offsets)
                assert commands[arm].joints == spec.joints
                back = arm_from_driver(profile, arm, commands[arm].positions, commands[arm].gripper)
                np.testing.assert_allclose(back, action[ARM_COLUMNS[arm]], atol=1e-12)
                rows = np.vstack([joints, joints[::-1], np.full(6, np.nan)])  # an audit's rows, broken ones too
                in_driver = spec.joints_to_driver(rows)
                np.testing.assert_allclose(in_driver[:2], spec.signs * rows[:2] + spec.offsets)
                np.testing.assert_allclose(spec.joints_from_driver(in_driver), rows, atol=1e-12)
                assert np.isnan(spec.joints_from_driver(in_driver)[2]).all()


@pytest.mark.parametrize('name', SHIPPED)
def test_gripper_ends_map_to_the_driver_range(name: str) -> None:
    profile = load_profile(name)
    for arm in ARMS:
        scale = profile.arms[arm].gripper.command
        closed = arm_to_driver(profile, arm, [0.0] * 6 + [0.0]).gripper
        opened = arm_to_driver(profile, arm, [0.0] * 6 + [1.0]).gripper
        assert (closed, opened) == (scale.closed, scale.open)
        half = arm_to_driver(profile, arm, [0.0] * 6 + [0.5]).gripper
        assert half == pytest.approx((scale.closed + scale.open) / 2)
        # A measured gripper past its range reads as fully open / closed, not beyond.
        beyond = scale.open + (scale.open - scale.closed) * 0.1
        assert arm_from_driver(profile, arm, [0.0] * 6, beyond)[6] == 1.0


def test_interbotix_state_reads_finger_feedback_not_the_motor_angle() -> None:
    profile = load_profile('aloha_interbotix')
    names = ['waist', 'shoulder', 'elbow', 'forearm_roll', 'wrist_angle', 'wrist_rotate', 'gripper', 'left_finger']
    positions = [0.1, -0.2, 0.3, 0.0, 1.0, -0.5, 1.2, (0.0440 + 0.0579) / 2]
    state = arm_state_from_joint_state(profile, 'left', names, positions)
    assert state is not None
    np.testing.assert_allclose(state, [0.1, -0.2, 0.3, 0.0, 1.0, -0.5, 0.5])
    assert arm_state_from_joint_state(profile, 'left', names[:-1], positions[:-1]) is None


@pytest.mark.parametrize('bad', [[0.0] * 13, [0.0] * 13 + [float('nan')], ['a'] * 14])
def test_conversion_refuses_a_malformed_action(bad: list[Any]) -> None:
    with pytest.raises(ProfileError, match='action'):
        to_driver(load_profile('aloha_ros2_control'), bad)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        *parents, last = path.split('.')
        node: Any = document
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        *parents, last = path.split('.')
        node: Any = document
        for key in parents:
            node = node[key]
        del node[last]

    return edit


BAD_PROFILES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ('missing top field', _drop('row_period'), 'row_period: is missing'),
    ('missing arm', _drop('arms.right'), 'arms.right: is missing'),
    ('missing arm field', _drop('arms.left.offsets'), 'arms.left.offsets: is missing'),
    ('missing gripper mapping', _drop('arms.right.gripper.feedback'), 'arms.right.gripper.feedback: is missing'),
    ('unknown field (typo)', _set('row_periode', 0.06), 'row_periode: is not a field here'),
    ('unknown driver', _set('driver', 'ur_rtde'), 'driver: must be one of ros2_control, interbotix_xs, piper'),
    ('unknown robot', _set('robot', 'ur5'), "robot: unknown robot 'ur5'"),
    ('limit policy', _set('joint_limits', 'ignore'), 'joint_limits: must be one of clamp, refuse'),
    ('velocity policy', _set('velocity_limits', 'slow'), "velocity_limits: must be one of refuse, stretch, got 'slow'"),
    ('number as text', _set('row_period', 'fast'), "row_period: must be a finite number, got 'fast'"),
    ('non-positive period', _set('row_period', 0), 'row_period: must be positive'),
    ('rate below one per row', _set('control_rate', 10.0), 'control_rate: 10.0 Hz is slower than one command per row'),
    ('short list', _set('arms.left.lower', [0.0] * 5), 'arms.left.lower: must be a list of 6 numbers'),
    ('bad element', _set('arms.left.offsets.3', None), 'arms.left.offsets[3]: must be a finite number'),
    ('bad sign', _set('arms.right.signs.2', 0), 'arms.right.signs[2]: must be 1 or -1'),
    ('limits crossed', _set('arms.left.upper.1', -2.0), 'arms.left.upper[1]: -2 must be above lower'),
    ('zero velocity', _set('arms.left.velocity.0', 0.0), 'arms.left.velocity[0]: must be positive'),
    ('home outside limits', _set('arms.right.home.2', 2.5), 'arms.right.home[2]: 2.5 is outside the limits'),
    ('home gripper', _set('arms.left.home.6', 1.5), 'arms.left.home[6]: the gripper is normalised 0..1'),
    ('gripper range empty', _set('arms.left.gripper.command.open', 0.0), 'arms.left.gripper.command.open: must differ'),
    ('gripper unit', _set('arms.left.gripper.feedback.unit', ''), 'arms.left.gripper.feedback.unit: must name'),
    ('relative topic', _set('arms.left.command.topic', 'left/cmd'), 'arms.left.command.topic: must be an absolute'),
    ('message type', _set('arms.left.command.type', 'JointTrajectory'), 'arms.left.command.type: must be a ROS type'),
    ('duplicate joint', _set('arms.left.joints.1', 'left_waist'), 'arms.left.joints: names a joint twice'),
    ('workspace crossed', _set('workspace.min', [0.0, 0.0, 2.0]), 'workspace: min [0.0, 0.0, 2.0] must be below'),
    ('workspace size', _set('workspace.max', [1.0, 1.0]), 'workspace.max: must be a list of 3 numbers'),
    ('not a mapping', _set('arms.left.gripper', [1, 2]), 'arms.left.gripper: must be a mapping, got list'),
]
"""(case, edit of aloha_ros2_control, expected message after the file name)."""


@pytest.mark.parametrize(('case', 'edit', 'message'), BAD_PROFILES, ids=[case for case, _, _ in BAD_PROFILES])
def test_a_wrong_profile_is_refused_naming_file_and_field(
    tmp_path: Path, case: str, edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    document = copy.deepcopy(raw('aloha_ros2_control'))
    edit(document)
    path = tmp_path / 'broken.yaml'
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(ProfileError) as caught:
        load_profile(str(path))
    text = str(caught.value)
    assert '\n' not in text
    assert text.startswith(f'robot profile {path}: '), text
    assert message in text, text


@pytest.mark.parametrize(
    ('edit', 'message'),
    [
        (_set('arms.left.joints.2', 'left_shoulder_2'), "arms.left.joints[2]: 'left_shoulder_2' is not 'left_elbow'"),
        (_set('arms.right.upper.1', 1.6), 'arms.right.upper[1]: 1.6 is above the URDF limit 1.25664 of right_shoulder'),
        (_set('arms.left.lower.4', -2.0), 'arms.left.lower[4]: -2 is below the URDF limit -1.8675 of left_wrist_angle'),
        (_set('arms.left.velocity.0', 4.0), 'arms.left.velocity[0]: 4 is above the URDF limit 3.14159 of left_waist'),
    ],
)
def test_an_aloha_profile_that_disagrees_with_the_urdf_is_refused(
    edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    document = copy.deepcopy(raw('aloha_ros2_control'))
    edit(document)
    with pytest.raises(ProfileError) as caught:
        parse_profile(document, path=Path('cell.yaml'))
    assert str(caught.value).startswith('robot profile cell.yaml: ')
    assert message in str(caught.value), str(caught.value)


def test_interbotix_joint_names_without_the_arm_prefix_still_must_match() -> None:
    document = raw('aloha_interbotix')
    document['arms']['right']['joints'][0] = 'base'
    with pytest.raises(ProfileError, match=r"arms\.right\.joints\[0\]: 'base' is not 'right_waist'"):
        parse_profile(document, path=Path('xs.yaml'))


def test_two_arms_on_one_command_topic_must_not_share_joint_names() -> None:
    document = raw('piper')
    document['arms']['right']['command']['topic'] = document['arms']['left']['command']['topic']
    with pytest.raises(ProfileError, match=r"arms\.right\.joints: share names \['joint1', .*\] with the left arm"):
        parse_profile(document, path=Path('piper.yaml'))


def test_velocity_limits_are_refused_unless_a_profile_says_stretch(tmp_path: Path) -> None:
    assert {load_profile(name).velocity_limits for name in SHIPPED} == {'refuse'}
    document = copy.deepcopy(raw('aloha_ros2_control'))
    document['velocity_limits'] = 'stretch'
    path = tmp_path / 'stretching.yaml'
    path.write_text(yaml.safe_dump(document))
    assert load_profile(str(path)).velocity_limits == 'stretch'


def test_piper_needs_its_speed_percent() -> None:
    document = raw('piper')
    del document['speed_percent']
    with pytest.raises(ProfileError, match=r'piper\.yaml: speed_percent: is required for the piper driver'):
        parse_profile(document, path=Path('piper.yaml'))


def test_unknown_unreadable_and_invalid_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="unknown robot profile 'kuka'; choose one of aloha_interbotix"):
        load_profile('kuka')
    with pytest.raises(ProfileError, match=r'cannot read robot profile .*missing\.yaml'):
        load_profile(str(tmp_path / 'missing.yaml'))
    broken = tmp_path / 'broken.yaml'
    broken.write_text('driver: [unclosed\n')
    with pytest.raises(ProfileError, match=r'broken.yaml: not valid YAML \(.* at line 2, column 1\)'):
        load_profile(str(broken))
    empty = tmp_path / 'empty.yaml'
    empty.write_text('')
    with pytest.raises(ProfileError, match=r'empty\.yaml: must be a mapping, got NoneType'):
        load_profile(str(empty))


def test_workspace_box_bounds_are_inclusive() -> None:
    from robofollow_ros.safety.profile_limits import limits_from_profile

    profile = load_profile('aloha_ros2_control')
    box = limits_from_profile(profile).workspace
    assert box is not None and box.contains(profile.workspace_min) and box.contains(profile.workspace_max)
    assert not box.contains(profile.workspace_max + np.array([0.0, 0.0, 1e-6]))
