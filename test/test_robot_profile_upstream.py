"""Every shipped robot profile against the upstream driver it names, field by field: each profile carries a copy of
the upstream configuration's facts (topics, message types, joint names, limits, gripper units and ranges, rates)
with their sources, and the edits the upstream configuration needs first (``robot.profiles.UpstreamDriver``).
What the profile drives must be what the facts say, or what an edit says and why. For the ros2_control profiles,
the trajectories the bridge's driver writer sends pass the JointTrajectoryController's own rules for the
controller's joint set as upstream declares it (over real DDS, private domain)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import yaml
from graph_helpers import private_node, wait_until
from rclpy.node import Node
from test_realtime_drivers import driver_for
from trajectory_msgs.msg import JointTrajectory

from robofollow_ros.realcell.drivers import JtcDriver
from robofollow_ros.robot.profiles import RobotProfile, UpstreamDriver, load_profile, parse_profile, profile_names
from robofollow_ros.ros import qos
from robofollow_ros.safety.command_filter import Command
from robofollow_ros.safety.jtc import check_trajectory
from robofollow_ros.state_layout import ARMS, Arm

NOMINAL_DOMAIN = 42
PROFILES = profile_names()


def upstream_of(profile: RobotProfile) -> UpstreamDriver:
    assert profile.upstream is not None, f'{profile.name} names no upstream driver'
    return profile.upstream


def expected(upstream: UpstreamDriver, key: str) -> Any:
    """The value the profile must use: an edit's, where upstream needs one, else the fact."""
    edit = upstream.edits.get(key, {})
    return edit['value'] if 'value' in edit else upstream.facts[key]


def fill(text: str, upstream: UpstreamDriver, arm: Arm) -> str:
    """A fact's ``{ns}`` (the arm's robot namespace) and ``{arm}`` filled in."""
    return text.format(ns=upstream.facts.get('namespaces', {}).get(arm, ''), arm=arm)


def test_every_shipped_profile_names_its_upstream_driver_and_sources() -> None:
    assert {'aloha_interbotix', 'aloha_ros2_control', 'aloha_xsarm_ros_control', 'piper'} <= set(PROFILES)
    for name in PROFILES:
        upstream = upstream_of(load_profile(name))
        assert upstream.driver and upstream.sources and upstream.facts, name
        assert set(upstream.edits) <= set(upstream.facts) | {'parameters', 'controllers', 'namespaces'}, name


def assert_topics_and_joints(profile: RobotProfile) -> None:
    upstream = upstream_of(profile)
    facts = upstream.facts
    for arm in ARMS:
        spec = profile.arms[arm]
        assert spec.command.topic == fill(facts['command']['topic'], upstream, arm)
        assert spec.command.type == facts['command']['type']
        assert spec.gripper.interface.topic == fill(facts['gripper_command']['topic'], upstream, arm)
        assert spec.gripper.interface.type == facts['gripper_command']['type']
        assert spec.joint_states == fill(facts['joint_states'], upstream, arm)
        assert list(spec.joints) == [fill(joint, upstream, arm) for joint in facts['joints']]
        assert spec.gripper.command.joint == fill(facts['gripper_joint'], upstream, arm)
        assert spec.gripper.feedback.joint == fill(
            facts.get('gripper_feedback_joint', facts['gripper_joint']), upstream, arm
        )


def assert_gripper(profile: RobotProfile) -> None:
    upstream = upstream_of(profile)
    facts = upstream.facts
    for arm in ARMS:
        command, feedback = profile.arms[arm].gripper.command, profile.arms[arm].gripper.feedback
        assert command.unit == facts['gripper_unit']
        assert feedback.unit == facts.get('gripper_feedback_unit', facts['gripper_unit'])
        assert [command.closed, command.open] == pytest.approx(expected(upstream, 'gripper_range'))
        feedback_range = 'gripper_feedback_range' if 'gripper_feedback_range' in facts else 'gripper_range'
        assert [feedback.closed, feedback.open] == pytest.approx(expected(upstream, feedback_range))
        if 'gripper_limits' in facts:
            low, high = facts['gripper_limits']
            assert low <= min(command.closed, command.open) and max(command.closed, command.open) <= high
        mode = profile.arms[arm].gripper.operating_mode
        if 'gripper_mode' in facts:
            assert mode is not None and mode.mode == facts['gripper_mode']
            assert mode.service == fill(facts['info_service'], upstream, arm)
        else:
            assert mode is None


def assert_limits_and_rate(profile: RobotProfile) -> None:
    upstream = upstream_of(profile)
    facts = upstream.facts
    for arm in ARMS:
        spec = profile.arms[arm]
        assert np.all(spec.lower >= np.array(facts['lower']) - 1e-9)
        assert np.all(spec.upper <= np.array(facts['upper']) + 1e-9)
        if 'velocity' in facts:
            assert np.all(spec.velocity <= np.array(facts['velocity']) + 1e-9)
    if 'rate' in facts:
        assert profile.control_rate == expected(upstream, 'rate')


@pytest.mark.parametrize('name', PROFILES)
def test_every_field_is_the_upstream_drivers_or_an_edit_says_why(name: str) -> None:
    profile = load_profile(name)
    assert_topics_and_joints(profile)
    assert_gripper(profile)
    assert_limits_and_rate(profile)


@pytest.mark.parametrize(
    ('change', 'check'),
    [
        (lambda d: d['arms']['left']['command'].update(topic='/left_arm_controller/joint_trajectory'), 'topics'),
        (lambda d: d['arms']['right'].update(joints=[f'right_{j}' for j in d['arms']['right']['joints']]), 'topics'),
        (lambda d: d['arms']['left']['gripper']['command'].update(closed=0.0), 'gripper'),
        (lambda d: d['upstream']['edits'].pop('gripper_range'), 'gripper'),
        (lambda d: d['arms']['left']['upper'].__setitem__(1, 1.3), 'limits'),
        (lambda d: d['upstream']['edits'].pop('rate'), 'limits'),
    ],
    ids=['topic', 'joint-names', 'gripper-closed', 'edit-removed', 'limit', 'rate-without-edit'],
)
def test_a_profile_that_drifted_from_its_facts_fails_the_checks(change, check, tmp_path) -> None:
    source = load_profile('aloha_xsarm_ros_control').path
    document = yaml.safe_load(source.read_text(encoding='utf-8'))
    document['robot'] = None  # (only the facts judge here, not the URDF)
    change(document)
    drifted = parse_profile(document, path=tmp_path / 'drifted.yaml')
    checks = {'topics': assert_topics_and_joints, 'gripper': assert_gripper, 'limits': assert_limits_and_rate}
    with pytest.raises(AssertionError):
        checks[check](drifted)


@pytest.fixture
def ros() -> Iterator[Node]:
    with private_node(NOMINAL_DOMAIN, 'upstream_jtc_test', spin=True) as (node, _executor):
        yield node


@pytest.mark.ros
@pytest.mark.parametrize('name', [n for n in PROFILES if load_profile(n).driver == 'ros2_control'])
def test_the_bridges_trajectories_pass_the_jtc_rules_for_the_upstream_controllers_joints(name: str, ros: Node) -> None:
    profile = load_profile(name)
    upstream = upstream_of(profile)
    controllers = {
        fill(upstream.facts[kind]['topic'], upstream, arm): [
            fill(joint, upstream, arm)
            for joint in (upstream.facts['joints'] if kind == 'command' else [upstream.facts['gripper_joint']])
        ]
        for arm in ARMS
        for kind in ('command', 'gripper_command')
    }
    driver = driver_for(ros, profile)
    assert isinstance(driver, JtcDriver) and set(driver.topics()) == set(controllers)
    got: dict[str, list[JointTrajectory]] = {topic: [] for topic in controllers}
    for topic in controllers:
        ros.create_subscription(JointTrajectory, topic, lambda m, t=topic: got[t].append(m), qos.ARM_COMMANDS)
    wait_until(driver.connected, timeout=60, what='the readers to match')
    home = profile.home_state()
    rows = np.tile(home, (3, 1))
    rows[:, 0] += [0.01, 0.02, 0.03]
    rows[:, 6] = [0.8, 0.5, 0.2]
    driver.send(Command(positions=rows, times=np.array([0.06, 0.12, 0.18]), hold=False), start=home)
    wait_until(lambda: all(got.values()), timeout=30, what='a trajectory on every controller topic')
    driver.close()
    for topic, messages in got.items():
        for message in messages:
            assert check_trajectory(message, controller_joints=controllers[topic]) == (), topic
