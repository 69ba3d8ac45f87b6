"""Marker tracking on synthetic images: detection rate, pose error percentiles and per-frame time, per scene.

For each scene of the shipped marker configuration (config/markers/default.yaml) and each resolution, --frames
random layouts: every object of the scene at a random xy in view of cam_high (tags kept apart) and a random yaw,
its tag at its configured size, height and mounting offset, all rendered into one pinhole image
(robofollow_ros/tracking/synthetic.py), detected and estimated with the plane constraint and the default gates.
Prints per scene: detection rate of the (unoccluded) objects, refusals, xy and yaw error median / p95 / max of the
poses returned, and per-frame time of detection and of estimation; the same detections solved by 6-DoF PnP
(IPPE_SQUARE) as the baseline the plane constraint replaces (its xy error, same run); and the board calibration's
extrinsic error. Synthetic images only: real cameras (blur, distortion, lighting) will be several times worse.

    .venv/bin/python bench/bench_tracker.py [--frames 200] [--seed 0]

``--rendered`` runs the same measures on the simulator's renders instead (real MuJoCo images of the cell with the
shipped tags, cam_high at 640x480; ``bench/bench_tracker_rendered.py``): ``--layouts`` random layouts per scene and
the occlusion sweep over ``--sweep`` layouts per scene:

    MUJOCO_GL=egl .venv/bin/python bench/bench_tracker.py --rendered [--layouts 200] [--sweep 50] [--seed 0]

``--degrade`` measures the tracker on images degraded as real cameras degrade them (issue 30), on the same kind of
layouts (``--layouts`` per scene, no occlusion sweep): each layout is rendered once at 640x480, then the node's
pipeline runs on the clean image and on each degraded version, a fresh ``CellTracker`` per layout and condition
(told the layout's stacks, as the node is at an episode's start), one frame, the frozen true extrinsic unless said:

    MUJOCO_GL=egl .venv/bin/python bench/bench_tracker.py --rendered --degrade all [--layouts 75] [--seed 0]
    MUJOCO_GL=egl .venv/bin/python bench/bench_tracker.py --rendered --degrade motion5,bump2 --layouts 20

The conditions (``--degrade`` takes ``all`` or a comma-separated list of these names; ``clean`` always runs):

- ``clean``: the render as it is.
- ``noise5``, ``noise10``: Gaussian sensor noise of sigma 5 and 10 grey levels per pixel and channel.
- ``motion3``, ``motion5``, ``motion7``: motion blur, a linear kernel 3, 5 or 7 px long in a random direction.
- ``defocus3``: defocus blur, a disk kernel 3 px across.
- ``jpeg70``, ``jpeg40``: JPEG compression at quality 70 and 40.
- ``over1.8``: overexposure, every level times 1.8, clipped at 255.
- ``gamma0.5``, ``gamma2``: gamma 0.5 (shadows brightened) and 2.0 (dim light).
- ``distort``, ``distort-ignored``: a barrel lens (OpenCV k1 -0.2, k2 0.05) applied to a render of the same
  camera made wider at the same focal length (so the distorted image's corners see the cell, not black), with the
  coefficients given to the tracker (``Intrinsics.distortion``, which ``tracking.camera`` uses to undistort the
  corners and to reproject for the gates), and the same image with the tracker told there is no distortion.
- ``320x240``, ``1280x720``: re-rendered at that size (same vertical field of view; 1280x720 sees wider), with
  that size's intrinsics.
- ``bump1``, ``bump2``: a camera bumped after calibration by 1 mm / 0.2 deg and 2 mm / 0.5 deg: the image is the
  clean render from the simulator's camera, and the tracker is given that camera's pose moved by the translation in
  a random 3-D direction and turned by the angle about a random axis through its optical centre. This is the same
  as a camera moved by the opposite bump from where it was calibrated (the tracker believes the old pose); moving
  the tracker's pose instead of the rendered camera reuses the clean image.

Random draws (layouts, noise, blur direction, bump direction) come from ``--seed``, and each condition has its own
stream per layout, so a condition gives the same numbers whichever others run with it. Printed per condition:
detection rate (objects published of those whose tag cam_high sees in full view at 640x480, from a segmentation
render), how many poses were published (of all the layout's objects: partly hidden tags and covered supports too),
xy error median / p95 / max (mm) of every published pose against simulation truth, yaw error median / p95 / max
(deg) of the poses measured from their own tag (a covered support's yaw is not measured), the count of published
poses off by more than 10 mm in 3-D (the safety number: these pass every gate), the median detection time per
frame (ms); then the detection rate per scene, and the worst three poses off by more than 10 mm per condition
(object, scene, source, error) with their count per object; and the total run time.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from robofollow_ros.benchmark.types import TABLE_Z
from robofollow_ros.tracking.calibration import calibrate_extrinsic, pose_difference
from robofollow_ros.tracking.markers import ObjectMarker, load_markers, printed_side
from robofollow_ros.tracking.pose import ObjectPose, detect, estimate_scene, make_detector
from robofollow_ros.tracking.synthetic import TagInWorld, cam_high, flat_tag, render

X_RANGE = (-0.28, 0.28)
Y_RANGE = (-0.05, 0.30)


def random_layout(
    markers: dict[str, ObjectMarker], rng: np.random.Generator
) -> dict[str, tuple[float, float, float, tuple[float, float]]]:
    """Object name -> (x, y, yaw, tag centre xy), tags in view and at least their printed diagonals apart."""
    while True:
        placed: dict[str, tuple[float, float, float, tuple[float, float]]] = {}
        for name, marker in markers.items():
            for _ in range(200):
                x, y, yaw = rng.uniform(*X_RANGE), rng.uniform(*Y_RANGE), rng.uniform(-math.pi, math.pi)
                c, s = math.cos(yaw), math.sin(yaw)
                tag = (x + c * marker.offset[0] - s * marker.offset[1], y + s * marker.offset[0] + c * marker.offset[1])
                if not (X_RANGE[0] <= tag[0] <= X_RANGE[1] and Y_RANGE[0] <= tag[1] <= Y_RANGE[1]):
                    continue
                reach = printed_side(marker.size) / math.sqrt(2.0)
                if all(
                    math.dist(tag, other[3]) > reach + printed_side(markers[n].size) / math.sqrt(2.0) + 0.01
                    for n, other in placed.items()
                ):
                    placed[name] = (x, y, yaw, tag)
                    break
            else:
                break
        if len(placed) == len(markers):
            return placed


def percentiles(values: list[float]) -> str:
    if not values:
        return 'n/a'
    return f'{np.median(values):6.2f} / {np.percentile(values, 95):6.2f} / {np.max(values):6.2f}'


def run_scene(scene: int, width: int, height: int, frames: int, rng: np.random.Generator) -> None:
    markers = dict(load_markers('default').scene(scene))
    intrinsics, camera = cam_high(width, height)
    detector = make_detector()
    planes: dict[str, float | None] = {name: TABLE_Z + m.height for name, m in markers.items()}
    no_planes: dict[str, float | None] = {}
    seen = refused = 0
    xy: list[float] = []
    yaw: list[float] = []
    pnp_xy: list[float] = []
    pnp_refused = 0
    reasons: dict[str, int] = {}
    missed: dict[str, int] = dict.fromkeys(markers, 0)
    detect_s: list[float] = []
    estimate_s: list[float] = []
    for _ in range(frames):
        layout = random_layout(markers, rng)
        tags = [
            flat_tag(m.id, size=m.size, x=layout[n][3][0], y=layout[n][3][1], z=TABLE_Z + m.height, yaw=layout[n][2])
            for n, m in markers.items()
        ]
        image = render(intrinsics, camera, tags, rng=rng)
        start = time.perf_counter()
        detections = detect(detector, image)
        middle = time.perf_counter()
        results = estimate_scene(detections, markers, intrinsics, camera, plane_z=planes)
        end = time.perf_counter()
        detect_s.append(middle - start)
        estimate_s.append(end - middle)
        pnp = estimate_scene(detections, markers, intrinsics, camera, plane_z=no_planes)
        for name, result in results.items():
            x, y, true_yaw, _ = layout[name]
            if isinstance(result, ObjectPose):
                seen += 1
                xy.append(1000.0 * math.hypot(result.x - x, result.y - y))
                yaw.append(
                    abs(math.degrees(math.atan2(math.sin(result.yaw - true_yaw), math.cos(result.yaw - true_yaw))))
                )
            elif result.gate == 'not_detected':
                missed[name] += 1
            else:
                seen += 1
                refused += 1
                key = f'{name}: {result.gate}'
                reasons[key] = reasons.get(key, 0) + 1
            other = pnp[name]
            if isinstance(other, ObjectPose):
                pnp_xy.append(1000.0 * math.hypot(other.x - x, other.y - y))
            elif other.gate != 'not_detected':
                pnp_refused += 1
    total = frames * len(markers)
    worst = ', '.join(f'{n} {1 - k / frames:.1%}' for n, k in sorted(missed.items(), key=lambda item: -item[1])[:2])
    print(
        f'scene {scene} {width}x{height}: detected {seen / total:6.1%} of {total} tags, '
        f'refused {refused} {reasons or ""}; least detected: {worst}\n'
        f'    plane xy mm med/p95/max {percentiles(xy)}   yaw deg {percentiles(yaw)}\n'
        f'    PnP   xy mm med/p95/max {percentiles(pnp_xy)}   (refused {pnp_refused})\n'
        f'    per frame: detection {1000 * np.median(detect_s):6.1f} ms, estimation of {len(markers)} objects '
        f'{1000 * np.median(estimate_s):5.2f} ms (ratio {np.median(estimate_s) / np.median(detect_s):.3f})'
    )


def run_calibration(width: int, height: int, rng: np.random.Generator) -> None:
    board = load_markers('default').board
    intrinsics, camera = cam_high(width, height)
    errors = []
    for _ in range(20):
        image = render(intrinsics, camera, [TagInWorld(t.id, t.size, t.corners_world()) for t in board], rng=rng)
        extrinsic = calibrate_extrinsic(detect(make_detector(), image), board, intrinsics)
        errors.append((*pose_difference(extrinsic.camera, camera), extrinsic.rms_px))
    arr = np.array(errors)
    print(
        f'calibration {width}x{height} (board of {len(board)} tags, 20 images): camera position error median '
        f'{1000 * np.median(arr[:, 0]):.2f} mm (max {1000 * arr[:, 0].max():.2f}), rotation {np.median(arr[:, 1]):.3f} '
        f'deg (max {arr[:, 1].max():.3f}), RMS reprojection {np.median(arr[:, 2]):.2f} px'
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--frames', type=int, default=200)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--rendered', action='store_true', help="the simulator's renders instead of synthetic images")
    parser.add_argument('--layouts', type=int, default=200, help='--rendered: random layouts per scene')
    parser.add_argument('--sweep', type=int, default=50, help='--rendered: occlusion sweep layouts per scene')
    parser.add_argument('--scenes', default='1,2,3,4', help='--rendered: comma-separated scenes')
    parser.add_argument(
        '--degrade',
        default='',
        help="--rendered: 'all' or comma-separated camera degradations (see the docstring); the clean image is always "
        'run first',
    )
    parser.add_argument(
        '--corner-window', type=float, default=0.4, help="--rendered: corner refinement window (the node's default)"
    )
    args = parser.parse_args()
    if args.rendered:
        import bench_tracker_rendered

        scenes = tuple(int(s) for s in args.scenes.split(','))
        bench_tracker_rendered.CORNER_WINDOW[0] = args.corner_window
        if args.degrade:
            known = tuple(bench_tracker_rendered.CONDITIONS)
            asked = known if args.degrade == 'all' else ('clean', *args.degrade.split(','))
            unknown = [key for key in asked if key not in known]
            if unknown:
                parser.error(f'unknown degradation {", ".join(unknown)}; known: {", ".join(known)}')
            conditions = tuple(key for key in known if key in asked)
            bench_tracker_rendered.main_degraded(
                layouts=args.layouts, seed=args.seed, scenes=scenes, conditions=conditions
            )
            return
        bench_tracker_rendered.main(
            layouts=args.layouts, sweep=args.sweep, seed=args.seed, scenes=scenes, corner_window=args.corner_window
        )
        return
    rng = np.random.default_rng(args.seed)
    for width, height in ((640, 480), (320, 240)):
        run_calibration(width, height, rng)
        for scene in (1, 2, 3, 4):
            run_scene(scene, width, height, args.frames, rng)


if __name__ == '__main__':
    main()
