"""Object poses from ArUco tags on synthetic pinhole images at known poses: the plane constraint meets issue 21's
accuracy targets at 640x480, every gate refuses what it should (a corrupted corner, a tag of the wrong size, a
jump, a tag not seen), PnP is only used without a plane and is flagged, and the tag's mounting offset is undone."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robofollow_ros.benchmark.types import TABLE_Z
from robofollow_ros.tracking.camera import CameraPose, Intrinsics, intersect_plane, project
from robofollow_ros.tracking.markers import ObjectMarker
from robofollow_ros.tracking.pose import (
    Detection,
    Gates,
    ObjectPose,
    PoseTracker,
    Refusal,
    detect,
    estimate_pose,
    estimate_scene,
    make_detector,
)
from robofollow_ros.tracking.synthetic import cam_high, flat_tag, render, sweep

BLOCK = ObjectMarker(scene=1, name='yellow_block_1', id=0, size=0.03, mount='top', height=0.04)
PLANE = TABLE_Z + BLOCK.height


def _yaw_error(a: float, b: float) -> float:
    return abs(math.degrees(math.atan2(math.sin(a - b), math.cos(a - b))))


def _one_tag(
    *, width: int = 640, height: int = 480, size: float = 0.03, x: float = 0.05, y: float = 0.1, yaw: float = 0.4
) -> tuple[Intrinsics, CameraPose, Detection]:
    intrinsics, camera = cam_high(width, height)
    image = render(
        intrinsics, camera, [flat_tag(0, size=size, x=x, y=y, z=PLANE, yaw=yaw)], rng=np.random.default_rng(3)
    )
    found = detect(make_detector(), image)
    assert 0 in found
    return intrinsics, camera, found[0]


def test_resting_poses_meet_the_targets_at_640x480() -> None:
    result = sweep(width=640, height=480, size=0.03, tag_height=0.04, count=200, seed=21)
    assert result.detected >= 0.95 * result.frames
    assert len(result.refusals) <= 0.02 * result.detected, result.refusals
    xy_mm = result.xy_errors * 1000.0
    yaw_deg = np.degrees(result.yaw_errors)
    assert np.median(xy_mm) <= 2.0 and np.percentile(xy_mm, 95) <= 5.0
    assert np.median(yaw_deg) <= 1.5 and np.percentile(yaw_deg, 95) <= 4.0
    # No returned pose is far off: what the gates let through is what the referee may trust.
    assert xy_mm.max() <= 10.0


def test_at_320x240_poses_that_pass_the_gates_are_still_right() -> None:
    result = sweep(width=320, height=240, size=0.045, tag_height=0.06, count=200, seed=22)
    assert result.detected >= 0.5 * result.frames
    xy_mm = result.xy_errors * 1000.0
    assert len(xy_mm) >= 0.5 * result.frames
    assert np.median(xy_mm) <= 2.0 and np.percentile(xy_mm, 95) <= 5.0
    assert xy_mm.max() <= 10.0


def test_a_corrupted_corner_is_refused_by_the_reprojection_gate() -> None:
    intrinsics, camera, detection = _one_tag()
    good = estimate_pose(detection, BLOCK, intrinsics, camera, plane_z=PLANE)
    assert isinstance(good, ObjectPose) and good.method == 'plane'
    corners = detection.corners.copy()
    # A finger over one corner: the corner moves along the edge, so the edge length stays plausible.
    corners[2] += 0.2 * (corners[3] - corners[2])
    bad = estimate_pose(Detection(0, corners), BLOCK, intrinsics, camera, plane_z=PLANE)
    assert isinstance(bad, Refusal)
    assert bad.gate == 'reprojection' and bad.reason.startswith('reprojection error')


def test_a_tag_of_the_wrong_size_is_refused_by_the_edge_gate() -> None:
    intrinsics, camera, detection = _one_tag(size=0.04)
    result = estimate_pose(detection, BLOCK, intrinsics, camera, plane_z=PLANE)
    assert isinstance(result, Refusal)
    assert result.gate == 'edge' and 'of the tag size 0.03 m' in result.reason
    right = estimate_pose(detection, ObjectMarker(1, 'big', 0, 0.04, 'top', 0.04), intrinsics, camera, plane_z=PLANE)
    assert isinstance(right, ObjectPose)
    assert math.hypot(right.x - 0.05, right.y - 0.1) < 0.002


def test_a_jump_from_the_last_accepted_pose_is_refused() -> None:
    intrinsics, camera, detection = _one_tag()
    near = ObjectPose('yellow_block_1', 0, 0.06, 0.1, PLANE, 0.4, 'plane', 0.1, 1.0)
    far = ObjectPose('yellow_block_1', 0, 0.15, 0.1, PLANE, 0.4, 'plane', 0.1, 1.0)
    assert isinstance(estimate_pose(detection, BLOCK, intrinsics, camera, plane_z=PLANE, previous=near), ObjectPose)
    refused = estimate_pose(detection, BLOCK, intrinsics, camera, plane_z=PLANE, previous=far)
    assert isinstance(refused, Refusal) and refused.reason == 'jumped 100 mm from the last accepted pose'
    unlimited = estimate_pose(
        detection, BLOCK, intrinsics, camera, plane_z=PLANE, previous=far, gates=Gates(max_jump=None)
    )
    assert isinstance(unlimited, ObjectPose)


def test_every_configured_object_gets_a_pose_or_a_reason() -> None:
    intrinsics, camera, detection = _one_tag()
    other = ObjectMarker(scene=1, name='red_sphere', id=4, size=0.03, mount='plate', height=0.043)
    results = estimate_scene(
        {0: detection},
        {'yellow_block_1': BLOCK, 'red_sphere': other},
        intrinsics,
        camera,
        plane_z={'yellow_block_1': PLANE, 'red_sphere': TABLE_Z + 0.043},
    )
    assert isinstance(results['yellow_block_1'], ObjectPose)
    assert results['red_sphere'] == Refusal('red_sphere', 4, 'not_detected', 'not detected')


def test_a_plane_behind_the_camera_gives_no_pose() -> None:
    intrinsics, camera, detection = _one_tag()
    result = estimate_pose(detection, BLOCK, intrinsics, camera, plane_z=2.0)
    assert result == Refusal('yellow_block_1', 0, 'off_plane', 'the corner rays do not meet the tag plane')


def test_without_a_plane_pnp_is_used_and_flagged() -> None:
    intrinsics, camera, detection = _one_tag(size=0.04)
    marker = ObjectMarker(1, 'big', 0, 0.04, 'top', 0.04)
    result = estimate_pose(detection, marker, intrinsics, camera, plane_z=None)
    assert isinstance(result, ObjectPose) and result.method == 'pnp'
    # PnP measures z itself (coarsely): within a couple of centimetres of the truth, not assumed.
    assert abs(result.z - PLANE) < 0.03
    assert math.hypot(result.x - 0.05, result.y - 0.1) < 0.03


def test_a_plate_tag_at_an_offset_gives_the_object_centre() -> None:
    intrinsics, camera = cam_high(640, 480)
    bowl = ObjectMarker(scene=2, name='green_bowl', id=10, size=0.03, mount='plate', height=0.003, offset=(0.064, 0.0))
    x, y, yaw = -0.1, 0.15, 2.0
    tag_xy = (x + 0.064 * math.cos(yaw), y + 0.064 * math.sin(yaw))
    image = render(
        intrinsics,
        camera,
        [flat_tag(10, size=0.03, x=tag_xy[0], y=tag_xy[1], z=TABLE_Z + 0.003, yaw=yaw)],
        rng=np.random.default_rng(5),
    )
    found = detect(make_detector(), image)
    result = estimate_pose(found[10], bowl, intrinsics, camera, plane_z=TABLE_Z + 0.003)
    assert isinstance(result, ObjectPose)
    assert math.hypot(result.x - x, result.y - y) < 0.002
    assert _yaw_error(result.yaw, yaw) < 2.0


def test_pixel_centre_conventions_and_ray_plane_intersection() -> None:
    sim_matrix = np.array([[100.0, 0.0, 320.0], [0.0, 100.0, 240.0], [0.0, 0.0, 1.0]])
    converted = Intrinsics.from_corner_convention(sim_matrix, width=640, height=480)
    assert (converted.cx, converted.cy) == (319.5, 239.5)
    assert Intrinsics.from_fovy(fovy_deg=52.0, width=640, height=480).cx == pytest.approx(319.5)
    intrinsics, camera = cam_high(640, 480)
    points = np.array([[0.1, 0.2, 0.8], [-0.2, 0.0, 0.8]])
    back = intersect_plane(intrinsics, camera, project(intrinsics, camera, points), z=0.8)
    assert back is not None
    np.testing.assert_allclose(back, points, atol=1e-9)


def _projected(x: float, y: float, yaw: float = 0.3) -> dict[int, Detection]:
    intrinsics, camera = cam_high(640, 480)
    tag = flat_tag(0, size=0.03, x=x, y=y, z=PLANE, yaw=yaw)
    return {0: Detection(0, project(intrinsics, camera, tag.corners))}


def test_the_tracker_follows_a_confirmed_move_and_never_a_one_frame_outlier() -> None:
    intrinsics, camera = cam_high(640, 480)
    tracker = PoseTracker({'yellow_block_1': BLOCK}, intrinsics, camera, confirm_frames=3)
    planes = {'yellow_block_1': PLANE}
    first = tracker.update(_projected(0.0, 0.1), planes)['yellow_block_1']
    assert isinstance(first, ObjectPose)
    outlier = tracker.update(_projected(0.2, 0.1), planes)['yellow_block_1']
    assert isinstance(outlier, Refusal) and outlier.gate == 'jump'
    assert isinstance(tracker.update(_projected(0.001, 0.1), planes)['yellow_block_1'], ObjectPose)
    # Moved 10 cm while unseen: refused twice, believed on the third frame that agrees.
    gates = [tracker.update(_projected(0.1, 0.1 + 0.002 * i), planes)['yellow_block_1'] for i in range(3)]
    assert [isinstance(g, Refusal) and g.gate == 'jump' for g in gates] == [True, True, False]
    last = tracker.last('yellow_block_1')
    assert last is not None and abs(last.x - 0.1) < 1e-6 and abs(last.y - 0.104) < 1e-6
