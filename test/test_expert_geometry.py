"""The expert's pure target geometry, checked against values worked out by hand from the protocol (protocol §8.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.types import TABLE_Z
from robofollow_ros.errors import PolicyError
from robofollow_ros.sim.expert import constants as c
from robofollow_ros.sim.expert.geometry import (
    hand_turn,
    nearest_equivalent,
    push_path,
    relation_target,
    s4_stack_target,
    tcp_for_object,
)
from robofollow_ros.sim.expert.routes import route_objects
from robofollow_ros.sim.expert.scene import SceneView, footprint_radius

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


def view_of(layout, positions):
    """A scene view with the given centres (other items at their nominal xy on the table)."""
    pos = {p.name: np.array([*p.xy, TABLE_Z + p.spec.half_height]) for p in layout.placements}
    pos.update({name: np.asarray(value, dtype=float) for name, value in positions.items()})
    return SceneView(
        layout=layout,
        object_pos=pos,
        object_quat=dict.fromkeys(pos, IDENTITY),
        ee_pos={'left': np.zeros(3), 'right': np.zeros(3)},
    )


@pytest.mark.parametrize(
    ('relation', 'expected_xy'),
    [
        # red_cylinder r 0.025 at (0.10, -0.04), block half 0.02: right-of x + 0.025 + 0.02 + 0.06.
        ('right_of', (0.205, -0.04)),
        # left-of x - (0.025 + 0.02 + 0.04).
        ('left_of', (0.015, -0.04)),
        # behind y + 0.06 (0.06 >= 0.045 + 0.015).
        ('behind', (0.10, 0.02)),
        # in front: protocol §8.1's 0.05 is raised to 0.045 + 0.015 = 0.06.
        ('in_front', (0.10, -0.10)),
    ],
)
def test_relation_targets_match_the_published_offsets(relation, expected_xy):
    layout = registry.get_layout(1, 'default')
    view = view_of(layout, {'red_cylinder': (0.10, -0.04, 0.765)})
    target = relation_target(view, 'yellow_block_1', 'red_cylinder', relation)
    assert target[:2] == pytest.approx(expected_xy, abs=1e-9)
    assert target[2] == pytest.approx(TABLE_Z + 0.02 + 0.001)


def test_unknown_relation_is_a_policy_error():
    view = view_of(registry.get_layout(1, 'default'), {})
    with pytest.raises(PolicyError, match='relation'):
        relation_target(view, 'yellow_block_1', 'red_sphere', 'above')


def test_push_path_runs_towards_the_target_and_stops_short_of_it():
    layout = registry.get_layout(2, 'default')
    view = view_of(layout, {'large_blue_cube': (-0.14, -0.13, 0.77), 'large_red_cylinder': (-0.14, -0.01, 0.775)})
    path = push_path(view, 'large_blue_cube', 'large_red_cylinder', tcp_z=0.79)
    assert path.direction == pytest.approx((0.0, 1.0))
    # Contact: the cube's face (0.03) plus the finger reach behind the centre, along +y.
    assert path.contact[:2] == pytest.approx((-0.14, -0.13 - 0.03 - c.PUSH_FINGER_REACH))
    # Gap 0.12 - 0.03 - 0.03 = 0.06 leaves room for the full 0.05 push.
    assert path.end[1] - path.contact[1] == pytest.approx(0.05)
    assert path.start[1] < path.contact[1]
    assert path.back_off[1] == pytest.approx(path.end[1] - c.PUSH_BACK_OFF)
    assert {path.start[2], path.end[2]} == {0.79}
    # Fingers side by side across a push along y: the closing axis is world x (yaw 0 modulo pi).
    assert math.sin(path.yaw) == pytest.approx(0.0, abs=1e-9)


def test_push_is_shortened_near_the_target_but_not_below_the_minimum():
    layout = registry.get_layout(2, 'default')
    close = view_of(layout, {'large_blue_cube': (-0.14, -0.13, 0.77), 'large_red_cylinder': (-0.14, -0.09, 0.775)})
    path = push_path(close, 'large_blue_cube', 'large_red_cylinder', tcp_z=0.79)
    assert np.linalg.norm(path.end - path.contact) == pytest.approx(c.PUSH_MIN_DISTANCE)
    medium = view_of(layout, {'large_blue_cube': (-0.14, -0.13, 0.77), 'large_red_cylinder': (-0.14, -0.03, 0.775)})
    path = push_path(medium, 'large_blue_cube', 'large_red_cylinder', tcp_z=0.79)
    # Gap 0.10 - 0.06 = 0.04, minus the 0.005 kept free.
    assert np.linalg.norm(path.end - path.contact) == pytest.approx(0.035)


def test_s4_stack_target_is_the_referee_expected_centre():
    layout = registry.get_layout(4, 'scene4_1')
    view = view_of(layout, {'yellow_cylinder': (-0.02, -0.06, 0.765)})
    target = s4_stack_target(view, 'green_cylinder_top', 'yellow_cylinder')
    assert target == pytest.approx((-0.02, -0.06, 0.765 + 0.025 + 0.025 + 0.002))


def test_box_footprint_along_a_direction():
    spec = registry.get_layout(2, 'default').spec('large_blue_cube')
    assert footprint_radius(spec, np.array([1.0, 0.0])) == pytest.approx(0.03)
    diagonal = np.array([1.0, 1.0]) / math.sqrt(2.0)
    assert footprint_radius(spec, diagonal) == pytest.approx(0.03 * math.sqrt(2.0))
    assert footprint_radius(spec, np.array([1.0, 0.0]), yaw=math.pi / 4.0) == pytest.approx(0.03 * math.sqrt(2.0))


def test_hand_turn_uses_the_object_symmetry():
    assert hand_turn(0.1, math.pi / 2.0, math.pi) == pytest.approx(math.pi / 2.0 - 0.1)
    # A slab at yaw 3.0 is the same as at 3.0 - pi = -0.14: turning to 0 takes +0.14, not -3.0.
    assert hand_turn(3.0, 0.0, math.pi) == pytest.approx(math.pi - 3.0)
    assert hand_turn(0.3, 0.0, 0.0) == 0.0
    assert nearest_equivalent(1.0, math.pi / 2.0) == pytest.approx(1.0 - math.pi / 2.0)


def test_tcp_for_object_turns_the_held_offset_with_the_hand():
    goal = np.array([0.1, -0.1, 0.8])
    offset = np.array([0.01, 0.0, -0.02])
    assert tcp_for_object(goal, offset, 0.0) == pytest.approx((0.09, -0.1, 0.82))
    assert tcp_for_object(goal, offset, math.pi / 2.0) == pytest.approx((0.1, -0.11, 0.82))


def test_route_passes_over_the_partner_of_the_variant():
    task_id = 'L1_scene3_3__l_pick5_around3_to1_short_right'
    corrected = registry.get_task(task_id, variant='corrected')
    layout = registry.layout_of(corrected)
    # Layout 3.3 swaps red and yellow: corrected "around green" passes over yellow, green's column partner there;
    # published keeps the name pair and passes over red
    assert route_objects(corrected.truth, layout) == ('yellow_bar_4',)
    assert route_objects(registry.get_task(task_id, variant='published').truth, layout) == ('red_bar_2',)
    default = registry.get_task('L0_l_pick5_around3_to1_short_right')
    assert route_objects(default.truth, registry.layout_of(default)) == ('red_bar_2',)
