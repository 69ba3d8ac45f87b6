"""Objects in the gripper (tracking/grasp.py): an unseen object near a closing gripper follows the TCP, so a lift is
seen as a lift; nothing is invented before a grasp or after the gripper opens."""

from __future__ import annotations

import numpy as np

from robofollow_ros.tracking.camera import CameraPose
from robofollow_ros.tracking.cell_tracker import lifted_sighting
from robofollow_ros.tracking.grasp import GraspFollower, RigidPose
from robofollow_ros.tracking.pose import ObjectPose

CUBE = RigidPose.from_yaw(0.10, 0.20, 0.76, 0.3)
DOWN = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]])


def tcp(x: float, y: float, z: float) -> RigidPose:
    return RigidPose(np.array([x, y, z]), DOWN)


def test_a_lift_is_seen_as_a_lift() -> None:
    follower = GraspFollower()
    # Resting, seen; the right gripper hovers open far above.
    out = follower.update({'cube': CUBE}, {'left': tcp(-0.3, 0, 1.0), 'right': tcp(0.1, 0.2, 0.90)}, {'right': False})
    assert out['cube'].source == 'marker'
    # Pre-grasp: the fingers hide the tag; open gripper: no pose is invented.
    out = follower.update({'cube': None}, {'right': tcp(0.1, 0.2, 0.775)}, {'right': False})
    assert 'cube' not in out
    # The gripper closes around it: from now on the cube follows the TCP.
    out = follower.update({'cube': None}, {'right': tcp(0.1, 0.2, 0.775)}, {'right': True})
    assert out['cube'].source == 'gripper' and out['cube'].arm == 'right'
    np.testing.assert_allclose(out['cube'].pose.position, CUBE.position, atol=1e-12)
    # Lifted by 10 cm and carried sideways: the pose rises with it, orientation kept.
    out = follower.update({'cube': None}, {'right': tcp(0.15, 0.2, 0.875)}, {'right': True})
    np.testing.assert_allclose(out['cube'].pose.position, [0.15, 0.20, 0.86], atol=1e-12)
    np.testing.assert_allclose(out['cube'].pose.rotation, CUBE.rotation, atol=1e-12)
    assert follower.held_by('cube') == 'right'
    # Opened: released, no pose until the tag is seen again.
    out = follower.update({'cube': None}, {'right': tcp(0.15, 0.2, 0.875)}, {'right': False})
    assert 'cube' not in out and follower.held_by('cube') is None
    landed = RigidPose.from_yaw(0.15, 0.20, 0.76, 0.3)
    out = follower.update({'cube': landed}, {'right': tcp(0.15, 0.2, 0.95)}, {'right': False})
    assert out['cube'].source == 'marker'
    np.testing.assert_allclose(out['cube'].pose.position, landed.position)


def test_the_tag_seen_again_ends_the_grasp() -> None:
    follower = GraspFollower()
    follower.update({'cube': CUBE}, {'right': tcp(0.1, 0.2, 0.9)}, {'right': False})
    follower.update({'cube': None}, {'right': tcp(0.1, 0.2, 0.775)}, {'right': True})
    seen = RigidPose.from_yaw(0.12, 0.20, 0.76, 0.3)
    out = follower.update({'cube': seen}, {'right': tcp(0.3, 0.2, 0.9)}, {'right': True})
    assert out['cube'].source == 'marker' and follower.held_by('cube') is None
    np.testing.assert_allclose(out['cube'].pose.position, seen.position)


def test_no_grasp_far_away_or_without_a_closing() -> None:
    follower = GraspFollower(grasp_radius=0.06)
    follower.update({'cube': CUBE, 'ball': RigidPose.from_yaw(-0.2, 0.1, 0.76, 0.0)}, {}, {})
    # The left gripper closes 10 cm away from the cube: it takes nothing.
    out = follower.update({'cube': None, 'ball': None}, {'left': tcp(0.2, 0.2, 0.80)}, {'left': True})
    assert out == {}
    # Arriving already closed over the ball (a push with closed fingers) is no grasp either.
    out = follower.update({'cube': None, 'ball': None}, {'left': tcp(-0.2, 0.1, 0.78)}, {'left': True})
    assert out == {}
    # Each arm holds one object: the nearer one.
    follower = GraspFollower(grasp_radius=0.2)
    near = RigidPose.from_yaw(0.10, 0.25, 0.76, 0.0)
    follower.update({'cube': CUBE, 'near': near}, {}, {})
    out = follower.update({'cube': None, 'near': None}, {'right': tcp(0.1, 0.25, 0.78)}, {'right': True})
    assert set(out) == {'near'}


def test_a_held_objects_own_tag_seen_lifted_does_not_end_the_grasp() -> None:
    camera = CameraPose.look_at(position=(0.0, 0.4, 1.3), target=(0.0, -0.2, 0.74))
    held = RigidPose.from_yaw(0.1, -0.1, 0.86, 0.0)  # a 4 cm cube lifted 10 cm, its top tag at 0.88
    tag = np.array([0.1, -0.1, 0.88])
    plane = 0.78  # the plane a resting cube's tag lies on
    where = camera.position + (tag - camera.position) * (plane - camera.position[2]) / (tag[2] - camera.position[2])
    lifted = ObjectPose('cube', 0, float(where[0]), float(where[1]), plane, 0.0, 'plane', 0.3, 1.0)
    assert lifted_sighting(lifted, held, camera, centre_offset=-0.02)
    # Seen at rest somewhere else (it slipped out): the sighting wins.
    resting = ObjectPose('cube', 0, 0.1, -0.1, plane, 0.0, 'plane', 0.3, 1.0)
    assert not lifted_sighting(resting, held, camera, centre_offset=-0.02)
    # Held but not lifted: a sighting on its plane is the object itself.
    on_table = RigidPose.from_yaw(0.1, -0.1, 0.76, 0.0)
    assert not lifted_sighting(resting, on_table, camera, centre_offset=-0.02)
