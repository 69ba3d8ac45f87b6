"""The cell tracker (tracking/cell_tracker.py) on real MuJoCo renders of the cell with tags: stacked and in-bowl
objects on their planes, and a grasped block followed through a 10 cm lift while its tag is hidden."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.types import ARMS, TABLE_Z, Task
from robofollow_ros.sim import constants
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.markers import camera_view
from robofollow_ros.sim.physics import set_arm_joints, set_object_pose, tcp_pose
from robofollow_ros.tracking.camera import project
from robofollow_ros.tracking.cell_tracker import BOWL_FLOOR, BOWL_FLOOR_FRACTION, PUSHER_REACH, CellTracker, Published
from robofollow_ros.tracking.grasp import RigidPose
from robofollow_ros.tracking.markers import SCENES, load_markers, top_height
from robofollow_ros.tracking.pose import Detection, Refusal, detect, make_detector
from robofollow_ros.tracking.synthetic import cam_high, flat_tag

WIDTH, HEIGHT = 640, 480


def first_task(scene: int) -> Task:
    return next(t for t in registry.eval_tasks() if t.scene == scene)


def track(env: CellEnv, tracker: CellTracker, *, closed: dict[str, bool] | None = None) -> dict[str, Published]:
    assert env.cell is not None and env.data is not None
    image = env.observe(images=True).images['cam_high']
    intrinsics, camera = camera_view(env.cell.model, env.data, 'cam_high', width=WIDTH, height=HEIGHT)
    tcps = {arm: RigidPose.from_quaternion(*tcp_pose(env.cell, env.data, arm)) for arm in ARMS}
    published = tracker.update(
        detect(make_detector(), image[:, :, ::-1]), intrinsics, camera, tcps=tcps, closed=closed or {}
    )
    return {p.name: p for p in published}


def test_the_bowl_floor_is_the_simulated_bowls() -> None:
    assert BOWL_FLOOR == constants.BOWL_BASE_THICKNESS
    assert BOWL_FLOOR_FRACTION == constants.BOWL_BASE_FRACTION


def test_the_pushers_reach_is_the_simulated_fingers() -> None:
    from robofollow_ros.sim.expert import constants as expert

    assert PUSHER_REACH == expert.PUSH_FINGER_REACH


def test_stacked_and_in_bowl_objects_are_placed_on_their_planes() -> None:
    with CellEnv(markers='default', width=WIDTH, height=HEIGHT) as env:
        observation = env.reset(first_task(4), seed=0, images=False)
        tracker = CellTracker(load_markers('default'), {s: registry.scene_objects(s) for s in SCENES})
        poses = track(env, tracker)
    # A cylinder stacked on a cube (the cube's own tag covered), and a cube resting on the bowl's floor.
    for name in ('green_cylinder_top', 'red_cube_in_bowl'):
        pose, truth = poses[name], observation.object_pos[name]
        assert pose.source == 'marker'
        assert math.dist(pose.position, truth) < 0.003, (name, pose.position, truth)


def test_a_grasped_block_is_followed_through_a_lift() -> None:
    with CellEnv(markers='default', width=WIDTH, height=HEIGHT) as env:
        observation = env.reset(first_task(1), seed=0, images=False)
        assert env.cell is not None and env.data is not None
        cell, data = env.cell, env.data
        tracker = CellTracker(load_markers('default'), {s: registry.scene_objects(s) for s in SCENES})
        name = 'yellow_block_2'
        start = observation.object_pos[name].copy()
        assert track(env, tracker)[name].source == 'marker'
        arm = 'left' if start[0] < 0 else 'right'
        quat = data.qpos[cell.object_index[name].qpos + 3 : cell.object_index[name].qpos + 7].copy()
        q = env.kinematics.solve(arm, start, yaw=0.0).q
        # Fingers closed on the 4 cm block (kinematically: nothing is simulated), the tag hidden under the gripper.
        set_arm_joints(cell, data, arm, q, 0.5 * 0.04 / cell.arms[arm].finger_travel)
        mujoco.mj_forward(cell.model, data)
        held = track(env, tracker, closed={arm: True})
        assert held[name].source == 'gripper'
        lifted_q = env.kinematics.solve(arm, start + np.array([0.0, 0.0, 0.10]), yaw=0.0, seed=q).q
        set_arm_joints(cell, data, arm, lifted_q, 0.5 * 0.04 / cell.arms[arm].finger_travel)
        set_object_pose(cell, data, name, start + np.array([0.0, 0.0, 0.10]), quat)
        mujoco.mj_forward(cell.model, data)
        lifted = track(env, tracker, closed={arm: True})
        # Between images the held block follows each TCP pose (the other arm carries nothing).
        tcp = RigidPose.from_quaternion(*tcp_pose(cell, data, arm))
        higher = RigidPose(tcp.position + np.array([0.05, 0.0, 0.03]), tcp.rotation)
        (carried,) = tracker.carried(arm, higher)
        assert tracker.carried('left' if arm == 'right' else 'right', higher) == []
    assert lifted[name].source == 'gripper'
    assert math.dist(lifted[name].position, start + np.array([0.0, 0.0, 0.10])) < 0.01
    # The referee's lift: the published centre rose by the 10 cm (within a few mm).
    assert lifted[name].position[2] - start[2] > 0.09
    assert (carried.name, carried.source) == (name, 'gripper')
    assert np.allclose(np.subtract(carried.position, lifted[name].position), [0.05, 0.0, 0.03], atol=1e-6)


def test_a_covered_support_is_published_under_the_object_stacked_on_it() -> None:
    task = first_task(4)
    layout = registry.layout_of(task)
    stacks = {p.name: p.on for p in layout.placements if p.on is not None}
    (top, support), *_ = stacks.items()
    with CellEnv(markers='default', width=WIDTH, height=HEIGHT) as env:
        observation = env.reset(task, seed=0, images=False)
        tracker = CellTracker(load_markers('default'), {s: registry.scene_objects(s) for s in SCENES})
        assert support not in track(env, tracker)  # its tag is under the object on it: nothing without the layout
        tracker.start_episode(layout.scene, stacks)
        poses = track(env, tracker)
        assert poses[support].source == 'support' and poses[top].source == 'marker'
        assert math.dist(poses[support].position, observation.object_pos[support]) < 0.003
        # Taken off (set down beside it): the support's own tag shows and is tracked as any other.
        assert env.cell is not None and env.data is not None
        height = registry.scene_objects(layout.scene)[top].half_height
        beside = observation.object_pos[support] + np.array([0.0, -0.12, 0.0])
        beside[2] = TABLE_Z + height  # on the table
        set_object_pose(env.cell, env.data, top, beside, np.array([1.0, 0.0, 0.0, 0.0]))
        mujoco.mj_forward(env.cell.model, env.data)
        moved = track(env, tracker)
    assert moved[support].source == 'marker'
    assert math.dist(moved[support].position, observation.object_pos[support]) < 0.003


def test_every_scene_1_evaluation_layout_passes_the_layout_check_on_clean_renders() -> None:
    # The cylinder's 2.5 cm tag on its dark top: with the node's former corner window (0.5 module) its corners were
    # pulled toward the white border's outer edge and 19 of these 116 trials refused a correctly placed cylinder.
    from robofollow_ros.benchmark.seeds import trial_seed
    from robofollow_ros.nodes.aruco_tracker import RENDERED_CORNER_WINDOW
    from robofollow_ros.tracking.cell_tracker import yaw_of
    from robofollow_ros.tracking.layout_check import check_layout

    detector = make_detector(corner_window=RENDERED_CORNER_WINDOW)
    failed = []
    with CellEnv(markers='default', width=WIDTH, height=HEIGHT) as env:
        for task in registry.eval_tasks(scene=1):
            seed, layout = trial_seed(task.task_id, 3), registry.layout_of(task)
            env.reset(task, seed=seed, images=False)
            assert env.cell is not None and env.data is not None
            image = env.observe(images=True).images['cam_high']
            intrinsics, camera = camera_view(env.cell.model, env.data, 'cam_high', width=WIDTH, height=HEIGHT)
            tracker = CellTracker(load_markers('default'), {s: registry.scene_objects(s) for s in SCENES})
            tracker.start_episode(1, {})
            published = tracker.update(detect(detector, image[:, :, ::-1]), intrinsics, camera)
            measured = {p.name: (p.position[0], p.position[1], yaw_of(p.quat)) for p in published}
            check = check_layout(layout, measured, positions=registry.perturbed_positions(layout, seed=seed))
            if not check.passed:
                failed.append(f'{task.task_id}: {check.summary()}')
    assert len(registry.eval_tasks(scene=1)) == 116 and failed == [], failed


def test_a_stacked_cylinder_seen_through_motion_blur_stays_on_its_support() -> None:
    # Its tag's edge, smeared 5 px, tells the support's top from the table too weakly, and the table was the default
    # plane: the cylinder was published 5 cm low and 3 cm off (in 40 of 240 frames of 40 such layouts blurred 5 or 7
    # px). The layout says it is stacked, so its support's top is now the default plane.
    import cv2

    from robofollow_ros.benchmark.seeds import trial_seed

    kernel = np.zeros((5, 5), np.float32)
    kernel[2, :] = 0.2
    detector = make_detector(corner_window=0.4)
    stacked = [
        task
        for task in registry.eval_tasks(scene=4)
        if any(p.name == 'green_cylinder_top' and p.on for p in registry.layout_of(task).placements)
    ]
    wrong = []
    with CellEnv(markers='default', width=WIDTH, height=HEIGHT) as env:
        for task in stacked[:20]:
            layout = registry.layout_of(task)
            for round_number in (1, 2, 3):
                observation = env.reset(task, seed=trial_seed(task.task_id, round_number), images=False)
                assert env.cell is not None and env.data is not None
                image = cv2.filter2D(env.observe(images=True).images['cam_high'], -1, kernel)
                intrinsics, camera = camera_view(env.cell.model, env.data, 'cam_high', width=WIDTH, height=HEIGHT)
                tracker = CellTracker(load_markers('default'), {s: registry.scene_objects(s) for s in SCENES})
                tracker.start_layout(layout)
                poses = {p.name: p for p in tracker.update(detect(detector, image[:, :, ::-1]), intrinsics, camera)}
                pose = poses.get('green_cylinder_top')
                if pose is not None and math.dist(pose.position, observation.object_pos['green_cylinder_top']) > 0.01:
                    wrong.append((task.task_id, round_number, pose.position))
    assert len(stacked) >= 20 and wrong == [], wrong


def _tag_seen(name: str, *, x: float, y: float, z: float, shrink: float = 1.0) -> dict[int, Detection]:
    """The scene-4 tag of ``name`` at (x, y) on the plane ``z``, as cam_high at 640x480 sees it exactly, its corners
    pulled toward the centre by ``shrink`` (what blur does to a small tag's sub-pixel corners)."""
    marker = load_markers('default').scene(4)[name]
    intrinsics, camera = cam_high(WIDTH, HEIGHT)
    corners = project(intrinsics, camera, flat_tag(marker.id, size=marker.size, x=x, y=y, z=z, yaw=0.2).corners)
    centre = corners.mean(axis=0)
    return {marker.id: Detection(marker.id, centre + shrink * (corners - centre))}


def test_a_stacked_object_whose_edge_says_another_plane_is_withheld() -> None:
    # At 320x240 or under 7 px of blur the stacked cylinder's 2.4 cm tag measured 90-93 % of its size on its support's
    # top and 98-102 % on the table plane, and the edge evidence published it there (30 mm off, 48 mm low; 37 of
    # 800 layouts at 320x240). An object set down beside its hidden support measures the same: withheld.
    objects = registry.scene_objects(4)
    marker = load_markers('default').scene(4)['green_cylinder_top']
    on_cube = TABLE_Z + top_height(objects['blue_cube_right']) + marker.height
    intrinsics, camera = cam_high(WIDTH, HEIGHT)
    tracker = CellTracker(load_markers('default'), {s: registry.scene_objects(s) for s in SCENES})
    results = {}
    for shrink in (1.0, 0.92):
        tracker.start_episode(4, {'green_cylinder_top': 'blue_cube_right'})
        seen = _tag_seen('green_cylinder_top', x=0.1, y=-0.06, z=on_cube, shrink=shrink)
        published = {p.name: p for p in tracker.update(seen, intrinsics, camera)}
        results[shrink] = (published.get('green_cylinder_top'), tracker.last_results['scene4/green_cylinder_top'])
    sharp, _ = results[1.0]
    assert (
        sharp is not None
        and abs(sharp.position[2] - (on_cube - marker.height + objects['green_cylinder_top'].half_height)) < 1e-6
    )
    assert math.hypot(sharp.position[0] - 0.1, sharp.position[1] + 0.06) < 0.002
    blurred, refusal = results[0.92]
    assert blurred is None and isinstance(refusal, Refusal) and refusal.gate == 'ambiguous_plane', refusal


def test_an_object_the_layout_puts_in_an_unseen_bowl_is_tracked_on_its_floor() -> None:
    # The bowl's tag lost (320x240, blur) took the floor plane away, and the cube in it went onto the table plane:
    # 6 mm low and 5 mm off in xy, 10.0-10.1 mm in all (7 of 800 layouts at 320x240).
    objects = registry.scene_objects(4)
    marker = load_markers('default').scene(4)['red_cube_in_bowl']
    floor = TABLE_Z + BOWL_FLOOR + marker.height
    intrinsics, camera = cam_high(WIDTH, HEIGHT)
    seen = _tag_seen('red_cube_in_bowl', x=-0.13, y=-0.055, z=floor)
    heights = {}
    for inside in ({}, {'red_cube_in_bowl': 'bowl'}):
        tracker = CellTracker(load_markers('default'), {s: registry.scene_objects(s) for s in SCENES})
        tracker.start_episode(4, {}, inside=inside)
        published = {p.name: p for p in tracker.update(seen, intrinsics, camera)}
        cube = published['red_cube_in_bowl']
        heights[bool(inside)] = cube.position[2] - objects['red_cube_in_bowl'].half_height - TABLE_Z
        if inside:
            assert math.hypot(cube.position[0] + 0.13, cube.position[1] + 0.055) < 0.001
    assert heights == {False: pytest.approx(0.0, abs=1e-6), True: pytest.approx(BOWL_FLOOR, abs=1e-6)}


def test_a_released_object_lands_on_the_highest_surface_under_it() -> None:
    # After the gripper opened, the last carried pose (2-6 cm up) was all the referee had until the lifting arm
    # uncovered the tag 0.3-1 s later: a place checked at the opening scored exec lower from tracked poses than from
    # truth, and a cylinder released into a bowl was 18 mm off at p95 (docs/real-cell.md).
    objects = registry.scene_objects(4)
    markers = load_markers('default').scene(4)
    intrinsics, camera = cam_high(WIDTH, HEIGHT)
    bowl_at, cube_at, cylinder_at, free_at = (-0.1, -0.04), (0.1, -0.06), (0.0, -0.1), (0.05, -0.2)

    def on_table(name: str, at: tuple[float, float]) -> dict[int, Detection]:
        return _tag_seen(name, x=at[0], y=at[1], z=TABLE_Z + markers[name].height)

    resting = on_table('bowl', bowl_at) | on_table('blue_cube_right', cube_at)
    tracker = CellTracker(load_markers('default'), {s: registry.scene_objects(s) for s in SCENES})
    bowl = next(p for p in tracker.update(resting, intrinsics, camera) if p.name == 'bowl')
    bowl_at = bowl.position[:2]  # its tag is on a tab at its foot
    half = objects['green_cylinder_top'].half_height
    down = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]])
    landed: dict[float, tuple[Published, Published | None]] = {}
    for over, surface in ((bowl_at, BOWL_FLOOR), (cube_at, top_height(objects['blue_cube_right'])), (free_at, 0.0)):
        tracker = CellTracker(load_markers('default'), {s: registry.scene_objects(s) for s in SCENES})
        tracker.start_episode(4, {})
        tracker.update(resting | on_table('green_cylinder_top', cylinder_at), intrinsics, camera)
        grip = RigidPose(np.array([*cylinder_at, TABLE_Z + half]), down)
        above = RigidPose(np.array([*over, TABLE_Z + half + 0.06]), down)

        def step(tcp: RigidPose, closed: bool, tracker: CellTracker = tracker) -> Published | None:
            published = tracker.update(resting, intrinsics, camera, tcps={'right': tcp}, closed={'right': closed})
            return next((p for p in published if p.name == 'green_cylinder_top'), None)

        step(grip, True)
        carried = step(above, True)
        assert carried is not None and carried.source == 'gripper'
        released = step(above, False)
        assert released is not None
        landed[surface] = (released, step(above, False))
    assert len(landed) == 3
    for (surface, (pose, after)), over in zip(landed.items(), (bowl_at, cube_at, free_at), strict=True):
        assert pose.source == 'released' and after is None  # given once, then held by the referee's timeline
        assert pose.position == pytest.approx((*over, TABLE_Z + surface + half), abs=1e-9)
        assert math.atan2(2 * pose.quat[0] * pose.quat[3], 1 - 2 * pose.quat[3] ** 2) == pytest.approx(0.2, abs=1e-6)


def test_a_closed_gripper_pushes_a_hidden_object_out_of_its_way() -> None:
    # The gripper over a pushed cube hides its tag for the whole push (3 s); the referee bridged that silence in a
    # straight line from the last sighting to the next, 15 mm off at p95 for a 0.6 s push (docs/real-cell.md).
    objects = registry.scene_objects(4)
    marker = load_markers('default').scene(4)['blue_cube_right']
    intrinsics, camera = cam_high(WIDTH, HEIGHT)
    cube = objects['blue_cube_right']
    seen = _tag_seen('blue_cube_right', x=0.1, y=-0.06, z=TABLE_Z + marker.height)  # yaw 0.2
    down = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]])
    reach = (math.cos(0.2) + math.sin(0.2)) * cube.size[0] + PUSHER_REACH  # its footprint along +x, and the fingers
    side_z = TABLE_Z + cube.half_height + 0.02

    def tcp(x: float, z: float = side_z, y: float = -0.06) -> RigidPose:
        return RigidPose(np.array([x, y, z]), down)

    def pushes(closed: bool, z: float, y: float = -0.06) -> list[tuple[str, tuple[float, float, float]]]:
        tracker = CellTracker(load_markers('default'), {s: registry.scene_objects(s) for s in SCENES})
        tracker.start_episode(4, {})
        tracker.update(seen, intrinsics, camera, tcps={'right': tcp(-0.3, z, y)}, closed={'right': closed})
        poses: list[tuple[str, tuple[float, float, float]]] = []
        for x in (0.1 - reach - 0.005, 0.1 - reach + 0.01, 0.1 - reach + 0.03):
            tcps = {'right': tcp(x, z, y)}
            published = tracker.update({}, intrinsics, camera, tcps=tcps, closed={'right': closed})
            poses += [(p.source, p.position) for p in published if p.name == 'blue_cube_right']
        # Between images, at each TCP pose, the push goes on.
        poses += [(p.source, p.position) for p in tracker.carried('right', tcp(0.1 - reach + 0.04, z, y))]
        tracker.update(seen, intrinsics, camera, tcps={'right': tcp(0.0, 0.95)}, closed={'right': closed})
        poses += [
            (p.source, p.position) for p in tracker.update(seen, intrinsics, camera) if p.name == 'blue_cube_right'
        ]
        return poses

    pushed = pushes(True, side_z)
    assert [source for source, _ in pushed] == ['pushed', 'pushed', 'pushed', 'marker']
    for (_, position), moved in zip(pushed[:3], (0.01, 0.03, 0.04), strict=True):
        assert position[0] == pytest.approx(0.1 + moved, abs=1e-9) and position[1] == pytest.approx(-0.06, abs=1e-6)
        assert position[2] == pytest.approx(TABLE_Z + cube.half_height, abs=1e-6)
    assert pushed[3][1][0] == pytest.approx(0.1, abs=0.002)  # the tag seen again wins
    # Fingers 8 mm off the line through its centre carry it the way they move, not sideways along that line.
    offset = pushes(True, side_z, y=-0.068)
    assert [source for source, _ in offset] == ['pushed', 'pushed', 'pushed', 'marker']
    assert all(position[1] == pytest.approx(-0.06, abs=1e-6) for _, position in offset[:3])
    assert offset[0][1][0] > 0.1 and offset[2][1][0] - offset[0][1][0] == pytest.approx(0.03, abs=5e-4)
    # Open fingers, or closed ones passing over its top: nothing is moved (and nothing published while unseen).
    assert [source for source, _ in pushes(False, side_z)] == ['marker']
    assert [source for source, _ in pushes(True, TABLE_Z + 2 * cube.half_height + 0.015)] == ['marker']


def test_after_a_layout_only_its_objects_are_tracked() -> None:
    # The layout is announced before the arms go home and the cell is reset: the camera still sees the previous
    # layout meanwhile. A Scene 1 block so remembered into a Scene 2 push was pushed by the closed gripper and
    # published during the episode, and its record could not be scored (objects not in that layout).
    intrinsics, camera = cam_high(WIDTH, HEIGHT)
    markers = load_markers('default').scene(4)
    seen = _tag_seen('blue_cube_right', x=0.1, y=-0.06, z=TABLE_Z + markers['blue_cube_right'].height)
    tracker = CellTracker(load_markers('default'), {s: registry.scene_objects(s) for s in SCENES})
    assert [p.name for p in tracker.update(seen, intrinsics, camera)] == ['blue_cube_right']  # no layout: any object
    tracker.start_episode(1, {})
    assert tracker.update(seen, intrinsics, camera) == []
    tracker.start_episode(4, {}, objects=['bowl', 'red_sphere'])
    assert tracker.update(seen, intrinsics, camera) == []
    tracker.start_layout(registry.layout_of(first_task(4)))
    assert [p.name for p in tracker.update(seen, intrinsics, camera)] == ['blue_cube_right']
