"""Marker tracking on the simulator's renders (issue 21): the cell with the shipped tags (``CellEnv(markers=...)``),
cam_high at 640x480, real MuJoCo images. Imported by ``bench/bench_tracker.py --rendered``.

Per scene, --layouts random evaluation layouts: a random evaluation task's layout of the scene and a random trial
seed (the benchmark's position perturbation), every movable object then turned about its vertical axis by a random
yaw (drawn only: the image is rendered from the posed state, nothing is simulated after the turn). One
``CellTracker`` per layout, fresh (one frame, the frozen true extrinsic). Reports detection rate (all objects, and
objects with nothing on their top), xy and yaw error of the published poses against simulation truth, the objects
seen least, per-frame time (detection, and the tracker's update), and the board calibration's camera error.

The occlusion sweep (--sweep layouts per scene): an object of the layout that is seen at rest and can be grasped
(not a bowl or label, nothing on it), the nearer arm placed kinematically (IK, top-down, the object's yaw) with its
TCP 15, 8, 4 and 1.5 cm above the object's top (gripper open), then at the grasp (fingers closed on the object),
then lifted 10 cm with the object. One tracker over the sequence (rest first), fed the TCP poses and gripper states
as the node is: per stage, how often the object's pose is published (and from what), and how many published poses
(of this object, and of every object in view) are off by more than 10 mm from simulation truth (3-D).

The degradations (``--degrade``, ``main_degraded``; the conditions are described in ``bench/bench_tracker.py``):
per layout, the 640x480 render, a 320x240 and a 1280x720 render of the same state (their own ``CellEnv``), and a
wider render at the same focal length for the lens distortion (``WideLens``), degraded by
``bench/tracker_degradations.py``; one fresh tracker per condition.
"""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace

import mujoco
import numpy as np

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.types import ARMS, TABLE_Z
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.markers import camera_view
from robofollow_ros.sim.physics import set_arm_joints, set_object_pose, tcp_pose
from robofollow_ros.tracking.board_drift import BoardWatch
from robofollow_ros.tracking.calibration import calibrate_extrinsic, pose_difference
from robofollow_ros.tracking.camera import project
from robofollow_ros.tracking.cell_tracker import CellTracker, Published, yaw_of
from robofollow_ros.tracking.grasp import RigidPose
from robofollow_ros.tracking.markers import SCENES, load_markers
from robofollow_ros.tracking.pose import detect, make_detector

WIDTH, HEIGHT = 640, 480
CLOSED_BELOW = 0.9
HOVERS = (0.15, 0.08, 0.04, 0.015)
STAGES = ('rest', *(f'hover {100 * h:g} cm' for h in HOVERS), 'grasped', 'lifted 10 cm')
OFF = 0.010
CORNER_WINDOW = [0.4]
"""The detector's corner refinement window in modules (``--corner-window``)."""


def percentiles(values: list[float]) -> str:
    if not values:
        return 'n/a'
    return f'{np.median(values):6.2f} / {np.percentile(values, 95):6.2f} / {np.max(values):6.2f}'


def _turn(env: CellEnv, rng: np.random.Generator) -> None:
    assert env.cell is not None and env.data is not None
    for name, index in env.cell.object_index.items():
        if index.qpos < 0:
            continue
        position = env.data.qpos[index.qpos : index.qpos + 3].copy()
        quat = env.data.qpos[index.qpos + 3 : index.qpos + 7].copy()
        turn = rng.uniform(-math.pi, math.pi)
        q_turn = np.array([math.cos(turn / 2), 0.0, 0.0, math.sin(turn / 2)])
        turned = np.empty(4)
        mujoco.mju_mulQuat(turned, q_turn, quat)
        set_object_pose(env.cell, env.data, name, position, turned)
    mujoco.mj_forward(env.cell.model, env.data)


def _truth(env: CellEnv) -> dict[str, tuple[np.ndarray, float]]:
    observation = env.observe(images=False)
    return {n: (observation.object_pos[n].copy(), yaw_of(observation.object_quat[n])) for n in observation.object_pos}


def _covered(env: CellEnv, truth: dict[str, tuple[np.ndarray, float]]) -> set[str]:
    """Objects with another object on their top (their tag is covered)."""
    assert env.cell is not None
    specs = {n: i.spec for n, i in env.cell.object_index.items()}
    covered = set()
    for name, (position, _) in truth.items():
        for other, (other_position, _) in truth.items():
            if other == name or specs[other].shape == 'label':
                continue
            reach = max(specs[name].size[0], 0.02)
            if (
                np.linalg.norm(other_position[:2] - position[:2]) < reach
                and other_position[2] > position[2] + 0.5 * specs[name].half_height
            ):
                covered.add(name)
    return covered


class TagVisibility:
    """Which objects' tags cam_high sees unoccluded: MuJoCo's segmentation render of the same state, the tag geom
    found at its centre and at its four corners (pulled 10 % toward the centre)."""

    def __init__(self, env: CellEnv) -> None:
        self.env = env
        self._renderers: dict[int, tuple[mujoco.Renderer, mujoco.MjData]] = {}

    def __call__(self) -> set[str]:
        env = self.env
        assert env.cell is not None and env.data is not None
        model = env.cell.render_model()
        entry = self._renderers.get(id(model))
        if entry is None:
            renderer = mujoco.Renderer(model, height=HEIGHT, width=WIDTH)
            renderer.enable_segmentation_rendering()
            entry = self._renderers[id(model)] = (renderer, mujoco.MjData(model))
        renderer, scratch = entry
        model.body_pos[:] = env.cell.model.body_pos
        model.body_quat[:] = env.cell.model.body_quat
        scratch.qpos[:] = env.data.qpos
        mujoco.mj_kinematics(model, scratch)
        mujoco.mj_camlight(model, scratch)
        renderer.update_scene(scratch, camera='cam_high')
        segmentation = renderer.render()
        intrinsics, camera = camera_view(env.cell.model, env.data, 'cam_high', width=WIDTH, height=HEIGHT)
        visible = set()
        for name in env.cell.object_names:
            geom = model.geom(f'{name}_marker').id
            centre = scratch.geom_xpos[geom]
            rotation = scratch.geom_xmat[geom].reshape(3, 3)
            half = model.geom_size[geom]
            points = [centre + rotation @ np.array([0.0, 0.0, half[2]])]
            for sx, sy in ((-1, 1), (1, 1), (1, -1), (-1, -1)):
                points.append(centre + rotation @ np.array([0.9 * sx * half[0], 0.9 * sy * half[1], half[2]]))
            pixels = np.rint(project(intrinsics, camera, np.array(points))).astype(int)
            inside = (pixels[:, 0] >= 0) & (pixels[:, 0] < WIDTH) & (pixels[:, 1] >= 0) & (pixels[:, 1] < HEIGHT)
            if inside.all() and all(
                segmentation[v, u, 0] == geom and segmentation[v, u, 1] == int(mujoco.mjtObj.mjOBJ_GEOM)
                for u, v in pixels
            ):
                visible.add(name)
        return visible

    def close(self) -> None:
        for renderer, _ in self._renderers.values():
            renderer.close()


@dataclass
class SceneStats:
    frames: int = 0
    objects: int = 0
    published: int = 0
    uncovered: int = 0
    uncovered_published: int = 0
    visible: int = 0
    visible_published: int = 0
    missed_visible: Counter = field(default_factory=Counter)
    xy: list[float] = field(default_factory=list)
    yaw: list[float] = field(default_factory=list)
    missed: Counter = field(default_factory=Counter)
    appearances: Counter = field(default_factory=Counter)
    worst: list[tuple[float, str]] = field(default_factory=list)
    detect_s: list[float] = field(default_factory=list)
    track_s: list[float] = field(default_factory=list)
    calibration: list[tuple[float, float]] = field(default_factory=list)


def _frame(
    env: CellEnv, tracker: CellTracker, detector: object, *, tcps=None, closed=None
) -> tuple[list[Published], float, float, dict]:
    assert env.cell is not None and env.data is not None
    image = env.observe(images=True).images['cam_high']
    intrinsics, camera = camera_view(env.cell.model, env.data, 'cam_high', width=WIDTH, height=HEIGHT)
    start = time.perf_counter()
    detections = detect(detector, image[:, :, ::-1])
    middle = time.perf_counter()
    published = tracker.update(detections, intrinsics, camera, tcps=tcps, closed=closed)
    end = time.perf_counter()
    return published, middle - start, end - middle, {'detections': detections, 'view': (intrinsics, camera)}


def run_layouts(
    scene: int, layouts: int, rng: np.random.Generator, env: CellEnv, visibility: TagVisibility
) -> SceneStats:
    config = load_markers('default')
    scene_objects = {s: registry.scene_objects(s) for s in SCENES}
    detector = make_detector(corner_window=CORNER_WINDOW[0])
    tasks = [t for t in registry.eval_tasks() if t.scene == scene]
    stats = SceneStats()
    for _ in range(layouts):
        task = tasks[int(rng.integers(len(tasks)))]
        env.reset(task, seed=int(rng.integers(2**31)), images=False)
        _turn(env, rng)
        truth = _truth(env)
        covered = _covered(env, truth)
        visible = visibility()
        tracker = CellTracker(config, scene_objects)
        published, detect_s, track_s, extra = _frame(env, tracker, detector)
        stats.frames += 1
        stats.detect_s.append(detect_s)
        stats.track_s.append(track_s)
        intrinsics, camera = extra['view']
        try:
            extrinsic = calibrate_extrinsic(extra['detections'], config.board, intrinsics)
            stats.calibration.append(pose_difference(extrinsic.camera, camera))
        except Exception:
            stats.calibration.append((math.nan, math.nan))
        mine = {p.name: p for p in published if p.scene == scene}
        for name, (position, yaw) in truth.items():
            stats.objects += 1
            stats.appearances[name] += 1
            if name not in covered:
                stats.uncovered += 1
            if name in visible:
                stats.visible += 1
            pose = mine.get(name)
            if pose is None:
                stats.missed[name] += 1
                if name in visible:
                    stats.missed_visible[name] += 1
                continue
            stats.published += 1
            if name not in covered:
                stats.uncovered_published += 1
            if name in visible:
                stats.visible_published += 1
            error = 1000.0 * math.hypot(pose.position[0] - position[0], pose.position[1] - position[1])
            stats.xy.append(error)
            stats.yaw.append(abs(math.degrees(math.remainder(yaw_of(pose.quat) - yaw, 2 * math.pi))))
            stats.worst.append((error, name))
    return stats


def report_layouts(scene: int, stats: SceneStats) -> None:
    least = sorted(
        ((1.0 - stats.missed[n] / stats.appearances[n], n) for n in stats.appearances), key=lambda item: item[0]
    )[:3]
    worst = sorted(stats.worst, reverse=True)[:3]
    calibration = np.array([c for c in stats.calibration if not math.isnan(c[0])])
    failed = sum(1 for c in stats.calibration if math.isnan(c[0]))
    print(
        f'scene {scene} rendered {WIDTH}x{HEIGHT}, {stats.frames} layouts: '
        f'published {stats.published / stats.objects:6.1%} '
        f'of {stats.objects} objects; of those with nothing on top {stats.uncovered_published / stats.uncovered:6.1%} '
        f'of {stats.uncovered}; of those whose tag is in full view {stats.visible_published / stats.visible:6.1%} '
        f'of {stats.visible} (missed in view: {dict(stats.missed_visible.most_common(3)) or "none"})\n'
        f'    xy mm med/p95/max {percentiles(stats.xy)}   yaw deg {percentiles(stats.yaw)}\n'
        f'    least seen: {", ".join(f"{n} {r:.1%}" for r, n in least)}; largest xy: '
        f'{", ".join(f"{n} {e:.1f}" for e, n in worst)}\n'
        f'    per frame: detection {1000 * np.median(stats.detect_s):.1f} ms (p95 '
        f'{1000 * np.percentile(stats.detect_s, 95):.1f}), tracker update {1000 * np.median(stats.track_s):.2f} ms\n'
        f'    board calibration: camera position error median {1000 * np.median(calibration[:, 0]):.2f} mm '
        f'(max {1000 * calibration[:, 0].max():.2f}), rotation {np.median(calibration[:, 1]):.3f} deg '
        f'(max {calibration[:, 1].max():.3f}); failed {failed}'
    )


def run_sweep(scene: int, layouts: int, rng: np.random.Generator, env: CellEnv, *, debug: bool = False) -> dict:
    config = load_markers('default')
    scene_objects = {s: registry.scene_objects(s) for s in SCENES}
    detector = make_detector(corner_window=CORNER_WINDOW[0])
    tasks = [t for t in registry.eval_tasks() if t.scene == scene]
    published: dict[str, Counter] = defaultdict(Counter)
    off_target: Counter = Counter()
    off_any: Counter = Counter()
    errors: dict[str, list[float]] = defaultdict(list)
    done = skipped = 0
    attempts = 0
    details: list[str] = []
    while done < layouts and attempts < 5 * layouts:
        attempts += 1
        task = tasks[int(rng.integers(len(tasks)))]
        env.reset(task, seed=int(rng.integers(2**31)), images=False)
        assert env.cell is not None and env.data is not None
        cell, data = env.cell, env.data
        truth = _truth(env)
        covered = _covered(env, truth)
        tracker = CellTracker(config, scene_objects)
        home = {arm: (tcp_pose(cell, data, arm)) for arm in ARMS}
        tcps = {arm: RigidPose.from_quaternion(*home[arm]) for arm in ARMS}
        first, _, _, _ = _frame(env, tracker, detector, tcps=tcps, closed=dict.fromkeys(ARMS, False))
        seen = {p.name for p in first if p.scene == scene and p.source == 'marker'}
        candidates = [
            n
            for n in truth
            if n in seen
            and n not in covered
            and cell.object_index[n].spec.kind == 'object'
            and cell.object_index[n].qpos >= 0
        ]
        if not candidates:
            skipped += 1
            continue
        name = candidates[int(rng.integers(len(candidates)))]
        position, yaw = truth[name]
        spec = cell.object_index[name].spec
        arm = 'left' if position[0] < 0 else 'right'
        top = position[2] + spec.half_height
        width = 2.0 * (spec.size[0] if spec.shape in ('sphere', 'cylinder') else spec.size[1])
        travel = cell.arms[arm].finger_travel
        grip_closed = float(np.clip(0.5 * width / travel, 0.0, 1.0)) * 0.98
        grasp_z = max(position[2], TABLE_Z + 0.02)
        poses = [(top + h, 1.0, 0.0) for h in HOVERS] + [
            (grasp_z, grip_closed, 0.0),
            (grasp_z + 0.10, grip_closed, 0.10),
        ]
        kin = env.kinematics
        solutions = []
        q = None
        for z, _, _ in poses:
            solution = kin.solve(arm, np.array([position[0], position[1], z]), yaw=yaw, seed=q)
            if not solution.success:
                break
            q = solution.q
            solutions.append(q)
        if len(solutions) != len(poses):
            skipped += 1
            continue
        published['rest'][name] += 1
        stage_truth = {n: p.copy() for n, (p, _) in truth.items()}
        for stage, q, (_, grip, lift) in zip(STAGES[1:], solutions, poses, strict=True):
            set_arm_joints(cell, data, arm, q, grip)
            if lift:
                set_object_pose(
                    cell,
                    data,
                    name,
                    position + np.array([0.0, 0.0, lift]),
                    env.data.qpos[cell.object_index[name].qpos + 3 : cell.object_index[name].qpos + 7].copy(),
                )
                stage_truth[name] = position + np.array([0.0, 0.0, lift])
            mujoco.mj_forward(cell.model, data)
            tcps = {a: RigidPose.from_quaternion(*tcp_pose(cell, data, a)) for a in ARMS}
            closed = {a: (grip if a == arm else 1.0) < CLOSED_BELOW for a in ARMS}
            out, _, _, _ = _frame(env, tracker, detector, tcps=tcps, closed=closed)
            for p in out:
                if p.scene != scene or p.name not in stage_truth:
                    continue
                error = float(np.linalg.norm(np.array(p.position) - stage_truth[p.name]))
                if error > OFF:
                    off_any[stage] += 1
                    details.append(f'{stage}: {p.name} ({p.source}) {1000 * error:.0f} mm')
                    if debug:
                        print('OFF', stage, p, stage_truth[p.name], tracker.last_results.get(f'scene{scene}/{p.name}'))
                if p.name == name:
                    published[stage][p.source] += 1
                    errors[stage].append(1000.0 * error)
                    if error > OFF:
                        off_target[stage] += 1
        done += 1
    return {
        'done': done,
        'skipped': skipped,
        'published': published,
        'off_target': off_target,
        'off_any': off_any,
        'errors': errors,
        'details': details,
    }


def report_sweep(scene: int, result: dict) -> None:
    done = result['done']
    if result['details']:
        print('    off by more than 10 mm: ' + '; '.join(sorted(Counter(result['details']))[:12]))
    print(
        f'scene {scene} occlusion sweep, {done} layouts '
        f'({result["skipped"]} skipped: no seen graspable object or IK failed)'
    )
    for stage in STAGES[1:]:
        sources = result['published'][stage]
        count = sum(sources.values())
        print(
            f'    {stage:13s}: published {count}/{done} '
            f'({", ".join(f"{s} {k}" for s, k in sorted(sources.items())) or "-"}); '
            f'off > 10 mm: this object {result["off_target"][stage]}, any object {result["off_any"][stage]}; '
            f'error mm med/p95/max {percentiles(result["errors"][stage])}'
        )


def main(*, layouts: int, sweep: int, seed: int, scenes: tuple[int, ...] = SCENES, corner_window: float = 0.4) -> None:
    CORNER_WINDOW[0] = corner_window
    print(f'detector corner window {corner_window} module')
    rng = np.random.default_rng(seed)
    with CellEnv(markers='default', width=WIDTH, height=HEIGHT) as env:
        visibility = TagVisibility(env)
        for scene in scenes:
            if layouts:
                report_layouts(scene, run_layouts(scene, layouts, rng, env, visibility))
            if sweep:
                report_sweep(scene, run_sweep(scene, sweep, rng, env))


# --degrade: the same layouts under camera degradations (bench/tracker_degradations.py).

DISTORTION = (-0.2, 0.05, 0.0, 0.0, 0.0)
"""The lens's OpenCV distortion coefficients (k1, k2, p1, p2, k3): a moderate barrel, as wide webcam lenses have."""
CONDITIONS = {
    'clean': 'the render as it is',
    'noise5': 'sensor noise, Gaussian sigma 5 grey levels',
    'noise10': 'sensor noise, Gaussian sigma 10 grey levels',
    'motion3': 'motion blur, linear 3 px, random direction',
    'motion5': 'motion blur, linear 5 px, random direction',
    'motion7': 'motion blur, linear 7 px, random direction',
    'defocus3': 'defocus blur, disk 3 px across',
    'jpeg70': 'JPEG quality 70',
    'jpeg40': 'JPEG quality 40',
    'over1.8': 'overexposed: levels x1.8, clipped',
    'gamma0.5': 'gamma 0.5 (shadows brightened)',
    'gamma2': 'gamma 2.0 (dim)',
    'distort': 'lens distortion k1 -0.2, k2 0.05, coefficients given to the tracker',
    'distort-ignored': 'the same distorted image, tracker told no distortion',
    '320x240': 're-rendered at 320x240',
    '1280x720': 're-rendered at 1280x720 (same vertical field of view)',
    'bump1': 'camera bumped 1 mm / 0.2 deg after calibration',
    'bump2': 'camera bumped 2 mm / 0.5 deg after calibration',
}
RESOLUTIONS = {'320x240': (320, 240), '1280x720': (1280, 720)}
BUMPS = {'bump1': (0.001, 0.2), 'bump2': (0.002, 0.5)}


@dataclass
class DegradeStats:
    visible: int = 0
    visible_published: int = 0
    published: int = 0
    foreign: int = 0
    xy: list[float] = field(default_factory=list)
    yaw: list[float] = field(default_factory=list)
    off: list[tuple[float, str, int, str, str]] = field(default_factory=list)
    """Published poses off by more than ``OFF`` (3-D): (error mm, object, scene, source, what: xy and z error, the
    task and trial seed of the layout)."""
    scene_visible: Counter = field(default_factory=Counter)
    scene_published: Counter = field(default_factory=Counter)
    detect_s: list[float] = field(default_factory=list)
    board_excess: list[float] = field(default_factory=list)
    """Per image, the board's drift excess (px, ``tracking.board_drift``): how far the camera the tracker is
    given looks moved; only a bump should raise it."""
    withheld: int = 0
    """Images whose board alone shows the camera moved so far that the node publishes none of their poses."""


def _fit_framebuffer(env: CellEnv) -> None:
    """Let the offscreen framebuffer of the current cell hold this env's image size (the cell sets 640x480)."""
    assert env.cell is not None
    for model in (env.cell.model, env.cell.render_model()):
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, env.width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, env.height)


def _render_like(env: CellEnv, source: CellEnv, task, seed: int, *, fovy: float | None = None) -> np.ndarray:
    """cam_high's BGR image from ``env`` in ``source``'s state (same task and trial seed, then its joint
    positions, so the turned objects too); ``fovy`` overrides the camera's vertical field of view (degrees)."""
    assert source.data is not None
    env.reset(task, seed=seed, images=False)
    assert env.cell is not None and env.data is not None
    _fit_framebuffer(env)
    if fovy is not None:
        camera_id = env.cell.model.camera('cam_high').id
        for model in (env.cell.model, env.cell.render_model()):
            model.cam_fovy[camera_id] = fovy
    env.data.qpos[:] = source.data.qpos
    mujoco.mj_forward(env.cell.model, env.data)
    return np.ascontiguousarray(env.observe(images=True).images['cam_high'][:, :, ::-1])


class WideLens:
    """The distorted image of a barrel lens over the 640x480 pinhole: rendered wider than 640x480 at the same focal
    length (a margin around the frame, ``fovy`` widened to match), so that the distorted image's corners, which see
    past the pinhole's frame, show the cell and not black; then remapped (``tracker_degradations``)."""

    def __init__(self, intrinsics) -> None:
        from tracker_degradations import distortion_maps

        map_x, map_y = distortion_maps(intrinsics.matrix, np.asarray(DISTORTION), intrinsics.width, intrinsics.height)
        margin_x = math.ceil(max(-map_x.min(), map_x.max() - (intrinsics.width - 1), 0.0)) + 2
        margin_y = math.ceil(max(-map_y.min(), map_y.max() - (intrinsics.height - 1), 0.0)) + 2
        self.maps = (map_x + margin_x, map_y + margin_y)
        width, height = intrinsics.width + 2 * margin_x, intrinsics.height + 2 * margin_y
        self.fovy = math.degrees(2.0 * math.atan(0.5 * height / intrinsics.fy))
        self.env = CellEnv(markers='default', width=width, height=height)

    def image(self, source: CellEnv, task, seed: int) -> np.ndarray:
        from tracker_degradations import lens_distortion

        return lens_distortion(_render_like(self.env, source, task, seed, fovy=self.fovy), self.maps)

    def close(self) -> None:
        self.env.close()


def _degraded(key: str, clean: np.ndarray, view: tuple, rng: np.random.Generator, others: dict) -> tuple:
    """The image and the camera model the tracker is given under condition ``key``."""
    import tracker_degradations as degrade

    intrinsics, camera = view
    if key == 'clean':
        return clean, view
    if key.startswith('noise'):
        return degrade.sensor_noise(clean, float(key.removeprefix('noise')), rng), view
    if key.startswith('motion'):
        return degrade.motion_blur(clean, int(key.removeprefix('motion')), rng.uniform(0.0, math.pi)), view
    if key.startswith('defocus'):
        return degrade.defocus_blur(clean, float(key.removeprefix('defocus'))), view
    if key.startswith('jpeg'):
        return degrade.jpeg(clean, int(key.removeprefix('jpeg'))), view
    if key.startswith('over'):
        return degrade.exposure(clean, float(key.removeprefix('over'))), view
    if key.startswith('gamma'):
        return degrade.gamma(clean, float(key.removeprefix('gamma'))), view
    if key.startswith('distort'):
        image = others['distorted']()
        if key == 'distort':
            intrinsics = replace(intrinsics, distortion=DISTORTION)
        return image, (intrinsics, camera)
    if key in RESOLUTIONS:
        return others[key]()
    if key in BUMPS:
        translation, angle = BUMPS[key]
        return clean, (intrinsics, degrade.bump(camera, translation, angle, rng))
    raise ValueError(f'unknown condition {key!r}')


def run_degraded(
    scene: int,
    layouts: int,
    rng: np.random.Generator,
    envs: dict,
    visibility: TagVisibility,
    conditions: tuple[str, ...],
    stats: dict[str, DegradeStats],
    *,
    seed: int,
) -> None:
    config = load_markers('default')
    scene_objects = {s: registry.scene_objects(s) for s in SCENES}
    detector = make_detector(corner_window=CORNER_WINDOW[0])
    tasks = [t for t in registry.eval_tasks() if t.scene == scene]
    env: CellEnv = envs['640x480']
    keys = list(CONDITIONS)
    for index in range(layouts):
        task = tasks[int(rng.integers(len(tasks)))]
        trial_seed = int(rng.integers(2**31))
        env.reset(task, seed=trial_seed, images=False)
        _turn(env, rng)
        assert env.cell is not None and env.data is not None and env.layout is not None
        truth = _truth(env)
        visible = visibility()
        clean = np.ascontiguousarray(env.observe(images=True).images['cam_high'][:, :, ::-1])
        view = camera_view(env.cell.model, env.data, 'cam_high', width=WIDTH, height=HEIGHT)

        def resolution(key: str, task=task, trial_seed=trial_seed) -> tuple:
            other: CellEnv = envs[key]
            image = _render_like(other, env, task, trial_seed)
            assert other.cell is not None and other.data is not None
            return image, camera_view(other.cell.model, other.data, 'cam_high', width=other.width, height=other.height)

        cache: dict[str, np.ndarray] = {}

        def distorted(task=task, trial_seed=trial_seed, cache=cache, view=view) -> np.ndarray:
            if 'image' not in cache:
                if 'lens' not in envs:
                    envs['lens'] = WideLens(view[0])
                cache['image'] = envs['lens'].image(env, task, trial_seed)
            return cache['image']

        others = {key: (lambda key=key: resolution(key)) for key in RESOLUTIONS}
        others['distorted'] = distorted
        for key in conditions:
            condition_rng = np.random.default_rng([seed, scene, index, keys.index(key)])
            image, (intrinsics, camera) = _degraded(key, clean, view, condition_rng, others)
            tracker = CellTracker(config, scene_objects)
            tracker.start_layout(env.layout)
            start = time.perf_counter()
            detections = detect(detector, image)
            into = stats[key]
            into.detect_s.append(time.perf_counter() - start)
            published = tracker.update(detections, intrinsics, camera)
            watch = BoardWatch(config.board)
            drift = watch.observe(detections, intrinsics, camera)
            if drift is not None:
                into.board_excess.append(drift.excess_px)
            if watch.withheld:  # the node publishes no pose of an image whose board shows the camera moved
                into.withheld += 1
                published = []
            mine = {p.name: p for p in published if p.scene == scene and p.name in truth}
            into.foreign += sum(1 for p in published if p.scene != scene or p.name not in truth)
            into.visible += len(visible)
            into.scene_visible[scene] += len(visible)
            hits = sum(1 for name in visible if name in mine)
            into.visible_published += hits
            into.scene_published[scene] += hits
            for name, pose in mine.items():
                position, yaw = truth[name]
                into.published += 1
                into.xy.append(1000.0 * math.hypot(pose.position[0] - position[0], pose.position[1] - position[1]))
                if pose.source == 'marker':
                    into.yaw.append(abs(math.degrees(math.remainder(yaw_of(pose.quat) - yaw, 2 * math.pi))))
                error = float(np.linalg.norm(np.array(pose.position) - position))
                if error > OFF:
                    dz = 1000.0 * (pose.position[2] - position[2])
                    what = f'xy {into.xy[-1]:.1f}, z {dz:+.1f} mm; {task.task_id} seed {trial_seed}'
                    into.off.append((1000.0 * error, name, scene, pose.source, what))


def report_degraded(conditions: tuple[str, ...], stats: dict[str, DegradeStats], scenes: tuple[int, ...]) -> None:
    print(
        f'{"condition":16s} {"detected":>16s} {"published":>9s}  {"xy mm med / p95 / max":>22s}  '
        f'{"yaw deg med / p95 / max":>22s}  {"off>10mm":>8s}  {"detect ms":>9s}'
    )
    for key in conditions:
        s = stats[key]
        rate = s.visible_published / s.visible if s.visible else math.nan
        print(
            f'{key:16s} {rate:7.1%} {s.visible_published:4d}/{s.visible:<4d} {s.published:9d}  '
            f'{percentiles(s.xy):>22s}  {percentiles(s.yaw):>22s}  {len(s.off):8d}  {1000 * np.median(s.detect_s):9.1f}'
        )
    print('\nboard drift excess, px (tracking.board_drift; the tracker says "moved" from a median of 0.5):')
    for key in conditions:
        excess = stats[key].board_excess
        if excess:
            withheld = f', {stats[key].withheld} withheld (no pose published)' if stats[key].withheld else ''
            print(f'{key:16s} {len(excess):5d} images  {percentiles(excess):>22s}  min {min(excess):.2f}{withheld}')
    print('\ndetected per scene (published / tag in full view):')
    print(f'{"condition":16s} ' + ' '.join(f'{"scene " + str(scene):>12s}' for scene in scenes))
    for key in conditions:
        s = stats[key]
        print(
            f'{key:16s} '
            + ' '.join(f'{s.scene_published[scene] / max(s.scene_visible[scene], 1):12.1%}' for scene in scenes)
        )
    print('\npublished poses off by more than 10 mm (3-D): count, by object, and the worst 3')
    for key in conditions:
        s = stats[key]
        foreign = f'; {s.foreign} poses published of objects not in the cell' if s.foreign else ''
        if not s.off:
            print(f'{key:16s} none{foreign}')
            continue
        objects = Counter(f'{n} (scene {sc})' for _, n, sc, _, _ in s.off)
        print(f'{key:16s} {len(s.off)}: ' + ', '.join(f'{n} {k}' for n, k in objects.most_common()) + foreign)
        for error, name, scene, source, what in sorted(s.off, reverse=True)[:3]:
            print(f'{"":18s}{name} (scene {scene}, {source}) {error:.1f} mm ({what})')


def main_degraded(*, layouts: int, seed: int, scenes: tuple[int, ...], conditions: tuple[str, ...]) -> None:
    import contextlib

    start = time.perf_counter()
    print(
        f'detector corner window {CORNER_WINDOW[0]} module; {layouts} layouts per scene, scenes '
        f'{",".join(map(str, scenes))}, seed {seed}; conditions:'
    )
    for key in conditions:
        print(f'    {key:16s} {CONDITIONS[key]}')
    rng = np.random.default_rng(seed)
    stats = {key: DegradeStats() for key in conditions}
    with contextlib.ExitStack() as stack:
        envs: dict = {'640x480': stack.enter_context(CellEnv(markers='default', width=WIDTH, height=HEIGHT))}
        for key, (width, height) in RESOLUTIONS.items():
            if key in conditions:
                envs[key] = stack.enter_context(CellEnv(markers='default', width=width, height=height))
        visibility = TagVisibility(envs['640x480'])
        stack.callback(visibility.close)
        stack.callback(lambda: envs['lens'].close() if 'lens' in envs else None)
        for scene in scenes:
            run_degraded(scene, layouts, rng, envs, visibility, conditions, stats, seed=seed)
    print()
    report_degraded(conditions, stats, scenes)
    print(f'\ntotal {time.perf_counter() - start:.0f} s')
