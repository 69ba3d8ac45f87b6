"""The safety layer fed from the shipped robot profiles (``safety.profile_limits``): the limits, mode and workspace
are the profile's, a small chunk from the profile's home goes out untouched (the box holds home), a chunk lowering
the left TCP through the table is cut by the URDF forward kinematics, and a profile without a robot has no TCP
function (its box cannot be checked); the profile's ``velocity_limits`` choose the velocity mode, and the
grippers move at their URDF speed (``GripperReach``) instead of being refused as too fast."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml
from safety_support import ROW

from robofollow_ros.errors import SafetyError
from robofollow_ros.robot.profiles import load_profile, parse_profile, profile_names, profile_path
from robofollow_ros.safety.chunk_limits import GripperReach
from robofollow_ros.safety.command_filter import MeasuredState, filter_chunk
from robofollow_ros.safety.limits import SafetyLimits
from robofollow_ros.safety.profile_limits import (
    COMMAND_ACCELERATION_FRACTION,
    DEFAULT_GRIPPER_VELOCITY,
    limits_from_profile,
    profile_tcp,
)

LOWERED = {'aloha_ros2_control': (0.7, 0.2), 'aloha_interbotix': (0.7, 0.2), 'piper': (2.9, -1.1)}
"""Left joint2 and joint3 that put the TCP below the table top (ALOHA: shoulder forward, z 0.716; Piper: upper arm
forward and down, elbow opened, z 0.711)."""
WITH_ROBOT = sorted(LOWERED)
FINGER_SPEED = {'aloha_ros2_control': 0.2 / 0.036, 'aloha_interbotix': 0.2 / 0.036, 'piper': 0.2 / 0.035}
"""Normalised gripper speed (1/s): the URDF's finger speed (m/s) over its travel (m)."""


def test_the_shipped_profiles_are_the_ones_tested():
    assert set(profile_names()) >= set(WITH_ROBOT)


@pytest.mark.parametrize('name', WITH_ROBOT)
def test_limits_are_the_profiles(name: str):
    profile = load_profile(name)
    limits = limits_from_profile(profile)
    np.testing.assert_array_equal(limits.lower, profile.state_lower())
    np.testing.assert_array_equal(limits.upper, profile.state_upper())
    np.testing.assert_array_equal(limits.velocity[0:6], profile.arms['left'].velocity)
    np.testing.assert_array_equal(limits.velocity[7:13], profile.arms['right'].velocity)
    assert limits.limit_mode == profile.joint_limits
    assert limits.workspace is not None
    np.testing.assert_array_equal(limits.workspace.lower, profile.workspace_min)
    np.testing.assert_array_equal(limits.workspace.upper, profile.workspace_max)
    assert limits.names[0:6] == profile.arms['left'].joints
    assert limits.names[6] == profile.arms['left'].gripper.command.joint
    if profile.robot is None:
        assert limits.velocity[6] == limits.velocity[13] == DEFAULT_GRIPPER_VELOCITY
    else:
        urdf = SafetyLimits.for_robot(profile.robot, workspace=None)
        assert limits.velocity[6] == urdf.velocity[6]


@pytest.mark.parametrize('name', WITH_ROBOT)
def test_a_small_chunk_from_home_goes_out_untouched(name: str):
    profile = load_profile(name)
    home = profile.home_state()
    chunk = np.tile(home, (10, 1))
    chunk[:, [0, 7]] += 0.01 * np.arange(1, 11)[:, None]
    chunk[:, [6, 13]] -= 0.02 * np.arange(1, 11)[:, None]  # grippers closing from fully open
    decision = filter_chunk(
        chunk,
        state=MeasuredState(home, 0.0),
        limits=limits_from_profile(profile),
        row_period_s=profile.row_period,
        tcp=profile_tcp(profile),
    )
    assert decision.untouched, decision.summary()


@pytest.mark.parametrize('name', WITH_ROBOT)
def test_the_urdf_tcp_cuts_a_chunk_through_the_table(name: str):
    profile = load_profile(name)
    limits, tcp = limits_from_profile(profile), profile_tcp(profile)
    home = profile.home_state()
    lowered = home.copy()
    lowered[1], lowered[2] = LOWERED[name]
    chunk = home + np.linspace(0.0, 1.0, 31)[1:, None] * (lowered - home)
    heights = np.array([tcp(row)[0][2] for row in chunk])
    floor = float(profile.workspace_min[2])
    first_below = int(np.argmax(heights < floor))
    assert first_below > 0 and heights[-1] < 0.74, heights
    decision = filter_chunk(chunk, state=MeasuredState(home, 0.0), limits=limits, row_period_s=ROW, tcp=tcp)
    assert decision.rows_sent == first_below
    outside = [item for item in decision.interventions if item.kind == 'outside_workspace']
    assert [(item.row, item.joint, item.limit) for item in outside] == [(first_below, 'left_tcp_z', floor)]


def test_a_profile_without_a_robot_has_no_tcp_function():
    document = yaml.safe_load(profile_path('piper').read_text(encoding='utf-8'))
    document['robot'] = None
    without = parse_profile(document, path=Path('no_robot.yaml'))
    assert without.robot is None
    with pytest.raises(SafetyError, match=r'no_robot.*names no robot'):
        profile_tcp(without)


def test_the_bridge_keeps_a_margin_below_the_profiles_acceleration_for_the_timing_of_delivery() -> None:
    profile = load_profile('aloha_ros2_control')
    stated = limits_from_profile(profile).acceleration
    planned = limits_from_profile(profile, acceleration_fraction=COMMAND_ACCELERATION_FRACTION).acceleration
    arms = np.isfinite(stated)
    np.testing.assert_allclose(planned[arms], COMMAND_ACCELERATION_FRACTION * stated[arms])
    assert np.isinf(planned[~arms]).all() and (~arms).sum() == 2  # the grippers: no acceleration limit
    # Rows planned at the margin reached the arms at up to 1.15 times it (docs/safety.md): still within the limit.
    assert COMMAND_ACCELERATION_FRACTION * 1.15 <= 1.0 and COMMAND_ACCELERATION_FRACTION >= 0.8


@pytest.mark.parametrize('mode', ['refuse', 'stretch'])
def test_the_profile_velocity_limits_choose_the_velocity_mode(mode: str):
    profile = dataclasses.replace(load_profile('aloha_ros2_control'), velocity_limits=mode)
    limits = limits_from_profile(profile)
    assert limits.velocity_mode == mode
    assert limits_from_profile(profile, velocity_mode='refuse').velocity_mode == 'refuse'  # an argument overrides it
    home = profile.home_state()
    chunk = np.tile(home, (3, 1))
    chunk[1:, 0] += 0.3  # the left waist by 0.3 rad in one row: 5 rad/s, its limit 3.14 rad/s
    # From rest to the velocity limit in one row is over the acceleration limit too: that rule is tested apart.
    unaccelerated = dataclasses.replace(limits, acceleration=np.full(14, np.inf))
    decision = filter_chunk(
        chunk, state=MeasuredState(home, 0.0), limits=unaccelerated, row_period_s=ROW, tcp=profile_tcp(profile)
    )
    kinds = {item.kind for item in decision.interventions}
    if mode == 'refuse':
        assert decision.rows_sent == 1 and 'too_fast' in kinds, decision.summary()
    else:
        assert decision.rows_sent == 3 and kinds == {'row_stretched'}, decision.summary()
        assert decision.command is not None
        np.testing.assert_allclose(np.diff(decision.command.times, prepend=0.0), [ROW, 0.3 / 3.14159, ROW])


def reach_of(name: str, limits_mode: str = 'refuse') -> GripperReach:
    """The grippers' reach the real-time bridge builds from a profile's limits (``CellBridge.chunk_limits``)."""
    limits = limits_from_profile(load_profile(name))
    columns = (6, 13)
    return GripperReach(
        columns=columns,
        step=limits.velocity[list(columns)] * ROW,
        lower=limits.lower[list(columns)],
        upper=limits.upper[list(columns)],
        refuse=limits_mode == 'refuse',
    )


@pytest.mark.parametrize('name', WITH_ROBOT)
def test_a_gripper_closed_in_one_row_moves_at_its_urdf_speed_instead_of_being_refused(name: str):
    profile = load_profile(name)
    limits, tcp = limits_from_profile(profile), profile_tcp(profile)
    speed = FINGER_SPEED[name]
    assert limits.velocity[6] == limits.velocity[13] == pytest.approx(speed)
    home = profile.home_state()
    chunk = np.tile(home, (5, 1))
    chunk[:, 6] = 0.0  # the left gripper closed in one row, as the expert and the simulated cell do it
    state = MeasuredState(home, 0.0)
    refused = filter_chunk(chunk, state=state, limits=limits, row_period_s=ROW, tcp=tcp)
    assert refused.held and {item.kind for item in refused.interventions} >= {'too_fast'}, refused.summary()
    reached = reach_of(name).apply(chunk, home)
    step = speed * ROW
    np.testing.assert_allclose(reached[:, 6], np.clip(1.0 - step * np.arange(1, 6), 0.0, 1.0), atol=1e-12)
    np.testing.assert_array_equal(np.delete(reached, 6, axis=1), np.delete(chunk, 6, axis=1))
    decision = filter_chunk(reached, state=state, limits=limits, row_period_s=ROW, tcp=tcp)
    assert decision.untouched, decision.summary()


def test_a_gripper_target_beyond_its_limits_is_left_to_the_joint_limits_mode():
    home = load_profile('aloha_ros2_control').home_state()  # grippers open (1)
    chunk = np.tile(home, (4, 1))
    chunk[:, 13] = [0.8, -0.5, -0.5, -0.5]  # the right gripper asked past closed from the second row
    step = 0.2 / 0.036 * ROW
    # refuse: the out-of-limit target reaches the filter as asked (refused from its row on)
    np.testing.assert_allclose(
        reach_of('aloha_ros2_control', 'refuse').apply(chunk, home)[:, 13], [0.8, -0.5, -0.5, -0.5]
    )
    # clamp: approached at the gripper's speed; the filter clamps it once a step passes the limit
    np.testing.assert_allclose(
        reach_of('aloha_ros2_control', 'clamp').apply(chunk, home)[:, 13],
        [0.8, 0.8 - step, 0.8 - 2 * step, 0.8 - 3 * step],
    )
