"""Render ``docs/<robot>_contact_sheet.png`` and ``docs/<robot>_cell.png``: what the cell's cameras see.

The contact sheet has one row per scene (one expert episode each): the three cameras (cam_high, cam_left_wrist,
cam_right_wrist) at the start, right after the first grasp closes, and at the end. The cell picture is an overview
of the first scene from the front right. Run ``MUJOCO_GL=egl .venv/bin/python tools/make_contact_sheet.py`` after
changing the robot or the cameras, look at the images, and commit them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cv2
import mujoco
import numpy as np

from robofollow_ros.benchmark import registry
from robofollow_ros.robot.specs import DEFAULT_ROBOT, robot_names
from robofollow_ros.sim.env import CellEnv
from robofollow_ros.sim.expert import ExpertPolicy
from robofollow_ros.state_layout import CAMERAS, GRIP_INDEX

DOCS = Path(__file__).resolve().parents[1] / 'docs'
TASKS = (
    'L0_place_yellow_block_3_behind_red_cylinder',
    'L0_stack_left_cube_on_red_cylinder',
    'L0_r_pick2_via4_to6_short_front',
    'L0_s41_l_pick_cube_in_bowl',
)
"""One task per scene."""
HOLD_ROWS_AFTER_CLOSE = 4
SCALE = 0.75
LABEL_FONT = cv2.FONT_HERSHEY_SIMPLEX
LABEL_SCALE = 0.45
LABEL_MARGIN = 3
MOMENTS = ('start', 'grasp', 'end')
OVERVIEW_LOOKAT = (0.0, -0.15, 0.85)
OVERVIEW_DISTANCE = 1.5
OVERVIEW_AZIMUTH = 105.0
OVERVIEW_ELEVATION = -32.0


def episode_frames(env: CellEnv, task_id: str) -> dict[str, dict[str, np.ndarray]]:
    """The three cameras at the start, after the first grasp has closed and held, and at the end of the episode."""
    task = registry.get_task(task_id)
    layout = registry.layout_of(task)
    policy = ExpertPolicy()
    obs = env.reset(task, seed=registry.trial_seed(task_id, 1), layout=layout, images=True)
    frames = {'start': obs.images}
    policy.bind_task(task, layout)
    closed_at: int | None = None
    executed = 0
    for _ in range(10):
        chunk = np.asarray(policy.predict(obs), dtype=np.float64)
        for row in chunk:
            obs = env.execute(row[None, :], images=False)
            executed += 1
            if closed_at is None and any(row[GRIP_INDEX[arm]] == 0.0 for arm in GRIP_INDEX):
                closed_at = executed
            if closed_at is not None and 'grasp' not in frames and executed >= closed_at + HOLD_ROWS_AFTER_CLOSE:
                frames['grasp'] = env.observe(images=True).images
    frames['end'] = env.observe(images=True).images
    frames.setdefault('grasp', frames['end'])
    return frames


def _labelled(image: np.ndarray, text: str) -> np.ndarray:
    """The tile, scaled, with ``text`` once in white on a dark band.

    The text is drawn once: a thicker white outline under thinner dark text does not line up, because
    OpenCV advances each glyph by its stroke thickness, so the outline drifted right as a second label.
    """
    out = cv2.resize(image, None, fx=SCALE, fy=SCALE, interpolation=cv2.INTER_AREA)
    (width, height), baseline = cv2.getTextSize(text, LABEL_FONT, LABEL_SCALE, 1)
    band = out[: height + baseline + 2 * LABEL_MARGIN, : width + 2 * LABEL_MARGIN]
    band[:] = (band * 0.35).astype(out.dtype)  # darken the pixels under the label so white text reads anywhere
    origin = (LABEL_MARGIN, LABEL_MARGIN + height)
    cv2.putText(out, text, origin, LABEL_FONT, LABEL_SCALE, (255, 255, 255), 1, cv2.LINE_AA)
    return out


def contact_sheet(robot: str) -> np.ndarray:
    """The sheet as one RGB image."""
    rows = []
    with CellEnv(render=True, robot=robot) as env:
        for scene, task_id in enumerate(TASKS, start=1):
            frames = episode_frames(env, task_id)
            tiles = [_labelled(frames[m][c], f'S{scene} {m} {c}') for m in MOMENTS for c in CAMERAS]
            rows.append(np.hstack(tiles))
    return np.vstack(rows)


def cell_picture(robot: str) -> np.ndarray:
    """An overview of the cell (the first scene at its start) from the front right, 640x480."""
    with CellEnv(render=False, robot=robot) as env:
        env.reset(registry.get_task(TASKS[0]), seed=1)
        view = mujoco.MjvCamera()
        view.lookat[:] = OVERVIEW_LOOKAT
        view.distance, view.azimuth, view.elevation = OVERVIEW_DISTANCE, OVERVIEW_AZIMUTH, OVERVIEW_ELEVATION
        with mujoco.Renderer(env.cell.model, height=480, width=640) as renderer:
            renderer.update_scene(env.data, camera=view)
            return renderer.render().copy()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robot', choices=robot_names(), default=DEFAULT_ROBOT)
    parser.add_argument('--out', type=Path, default=DOCS, help='folder for the PNG files (default docs/)')
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, image in (
        (f'{args.robot}_contact_sheet.png', contact_sheet(args.robot)),
        (f'{args.robot}_cell.png', cell_picture(args.robot)),
    ):
        cv2.imwrite(str(args.out / name), np.ascontiguousarray(image[..., ::-1]), [cv2.IMWRITE_PNG_COMPRESSION, 9])
        print(args.out / name)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
