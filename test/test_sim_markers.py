"""ArUco tags in the simulated cell (sim/markers.py, CellEnv(markers=...)): cam_high sees every tag that is not
covered, at the configured place; the physics is the same bit for bit with or without tags; without tags nothing
is drawn (pixels outside the tags are untouched by them)."""

from __future__ import annotations

import math

import numpy as np

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.types import TABLE_Z, Task
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.markers import camera_view
from robofollow_ros.tracking.calibration import calibrate_extrinsic, pose_difference
from robofollow_ros.tracking.markers import load_markers, printed_side
from robofollow_ros.tracking.pose import ObjectPose, detect, estimate_pose, make_detector


def first_task(scene: int) -> Task:
    return next(t for t in registry.eval_tasks() if t.scene == scene)


def test_tags_are_seen_where_the_objects_are_and_the_board_gives_the_camera() -> None:
    config = load_markers('default')
    with CellEnv(markers='default', width=640, height=480) as env:
        observation = env.reset(first_task(1), seed=0, images=True)
        assert env.cell is not None and env.data is not None
        intrinsics, camera = camera_view(env.cell.model, env.data, 'cam_high', width=640, height=480)
        detections = detect(make_detector(), observation.images['cam_high'][:, :, ::-1])
    assert {t.id for t in config.board} <= set(detections)
    extrinsic = calibrate_extrinsic(detections, config.board, intrinsics)
    distance, angle = pose_difference(extrinsic.camera, camera)
    assert distance < 0.002 and angle < 0.1
    for name, marker in config.scene(1).items():
        result = estimate_pose(detections[marker.id], marker, intrinsics, camera, plane_z=TABLE_Z + marker.height)
        assert isinstance(result, ObjectPose), result
        x, y, _ = observation.object_pos[name]
        w, qx, qy, qz = observation.object_quat[name]
        yaw = math.atan2(2 * (w * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz))
        assert math.hypot(result.x - x, result.y - y) < 0.002, name
        assert abs(math.remainder(result.yaw - yaw, 2 * math.pi)) < math.radians(3.0), name


def test_tags_change_no_physics_and_only_their_own_pixels() -> None:
    task = first_task(4)
    with CellEnv(width=640, height=480) as plain, CellEnv(markers='default', width=640, height=480) as tagged:
        without = plain.reset(task, seed=3, images=True)
        with_tags = tagged.reset(task, seed=3, images=True)
        assert plain.data is not None and tagged.data is not None
        assert np.array_equal(plain.data.qpos, tagged.data.qpos)
        chunk = np.tile(plain.state(), (10, 1))
        chunk[:, 6] = 0.0
        plain.execute(chunk)
        tagged.execute(chunk)
        assert np.array_equal(plain.data.qpos, tagged.data.qpos)
        assert plain.cell is not None and tagged.cell is not None
        assert np.array_equal(plain.cell.model.body_mass, tagged.cell.model.body_mass)
        assert np.array_equal(plain.cell.model.body_inertia, tagged.cell.model.body_inertia)
        # The tags' geoms hidden again: the tagged model draws exactly the untagged image.
        model = tagged.cell.render_model()
        tags = [
            i for i in range(model.ngeom) if model.geom(i).name.endswith('_marker') or 'board_tag' in model.geom(i).name
        ]
        assert len(tags) == len(task_objects(task)) + len(load_markers('default').board)
        model.geom_rgba[tags, 3] = 0.0
        hidden = tagged.observe(images=True)
        after = plain.observe(images=True)
    assert not np.array_equal(without.images['cam_high'], with_tags.images['cam_high'])
    for camera in after.images:
        assert np.array_equal(after.images[camera], hidden.images[camera]), camera


def task_objects(task: Task) -> list[str]:
    return [p.name for p in registry.layout_of(task).placements]


def test_every_board_tag_lies_printed_on_the_table_and_clear_of_every_layout() -> None:
    """An operator must be able to tape the board where the configuration says: each tag's printed square (quiet
    zone included) on the table top of the cell model, and no object of any evaluation trial (rounds 1 and 2, its
    seed's places) standing on it or within 3 cm of it."""
    config = load_markers('default')
    with CellEnv(render=False) as env:
        env.reset(first_task(1), seed=0, images=False)
        assert env.cell is not None and env.data is not None
        table = env.cell.table_geom
        half = env.cell.model.geom_size[table][:2]
        centre = env.data.geom_xpos[table][:2]
    places = [
        np.asarray(xy, dtype=float)
        for task in registry.eval_tasks()
        for round_ in (1, 2)
        for xy in registry.perturbed_positions(
            registry.layout_of(task), seed=registry.trial_seed(task.task_id, round_)
        ).values()
    ]
    for tag in config.board:
        side = printed_side(tag.size)
        c, s = math.cos(tag.yaw), math.sin(tag.yaw)
        square = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * side / 2 @ np.array([[c, s], [-s, c]])
        corners = square + np.array([tag.x, tag.y])
        assert np.all(np.abs(corners - centre) <= half), (tag.id, corners.tolist(), (centre - half, centre + half))
        nearest = min(float(np.max(np.abs(xy - (tag.x, tag.y)))) for xy in places)
        assert nearest > side / 2 + 0.03, (tag.id, nearest)
