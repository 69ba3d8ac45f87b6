"""The camera's extrinsic from the table board: every seen board tag's four corners solved together in one PnP.

One tag alone is not trusted: a small planar square has two near-equal PnP solutions, and the study on this cell
saw one 8 cm tag flip by up to 636 mm; the corners of several tags spread over the table pin the pose down.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros.errors import CalibrationError
from robofollow_ros.tracking.camera import CameraPose, Intrinsics, project
from robofollow_ros.tracking.markers import BoardTag
from robofollow_ros.tracking.pose import Detection

MIN_TAGS = 3


@dataclass(frozen=True)
class Extrinsic:
    """A solved camera pose with its error: RMS and worst corner reprojection (px) and the tags used."""

    camera: CameraPose
    rms_px: float
    max_px: float
    tag_ids: tuple[int, ...]


def calibrate_extrinsic(
    detections: Mapping[int, Detection],
    board: Sequence[BoardTag],
    intrinsics: Intrinsics,
    *,
    min_tags: int = MIN_TAGS,
    max_rms_px: float = 1.5,
) -> Extrinsic:
    """The camera pose in the world from the board tags seen in one image (``detections`` by id; other ids are
    ignored).

    Raises:
        CalibrationError: fewer than ``min_tags`` board tags seen, no solution, or an RMS reprojection error
            above ``max_rms_px`` (a moved tag, a wrong board description, wrong intrinsics).
    """
    import cv2

    if min_tags < 2:
        raise CalibrationError(f'min_tags must be at least 2 (one tag flips), got {min_tags}')
    seen = [tag for tag in board if tag.id in detections]
    if len(seen) < min_tags:
        raise CalibrationError(
            f'{len(seen)} board tag(s) seen ({", ".join(str(t.id) for t in seen) or "none"}); '
            f'at least {min_tags} are needed (one tag alone flips)'
        )
    world = np.concatenate([tag.corners_world() for tag in seen])
    pixels = np.concatenate([np.asarray(detections[tag.id].corners, dtype=np.float64).reshape(4, 2) for tag in seen])
    # IPPE gives both planar solutions without an initial guess; Levenberg-Marquardt refines each on all corners and
    # the one that fits better is kept. The corners are taken about their centroid: in world coordinates (the plane
    # 0.74 m up, far from the origin) IPPE's start was off by hundreds of pixels and LM could settle on the mirror
    # pose for a board whose tags the camera sees from one side.
    centre = world.mean(axis=0)
    local = (world - centre).reshape(-1, 1, 3)
    found, rvecs, tvecs, _ = cv2.solvePnPGeneric(
        local, pixels.reshape(-1, 1, 2), intrinsics.matrix, intrinsics.dist, flags=cv2.SOLVEPNP_IPPE
    )
    if not found:
        raise CalibrationError('PnP found no camera pose for the board')
    fits = []
    for start_r, start_t in zip(rvecs, tvecs, strict=True):
        rvec, tvec = cv2.solvePnPRefineLM(
            local, pixels.reshape(-1, 1, 2), intrinsics.matrix, intrinsics.dist, start_r.copy(), start_t.copy()
        )
        rotation, _ = cv2.Rodrigues(rvec)
        camera = CameraPose.from_world_to_camera(rvec, tvec.reshape(3) - rotation @ centre)
        residuals = np.linalg.norm(project(intrinsics, camera, world) - pixels, axis=1)
        fits.append((float(np.sqrt(np.mean(residuals**2))), camera, residuals))
    rms, camera, residuals = min(fits, key=lambda fit: fit[0])
    if rms > max_rms_px:
        raise CalibrationError(
            f'board reprojection error {rms:.2f} px > {max_rms_px} px: check the board and intrinsics'
        )
    return Extrinsic(camera=camera, rms_px=rms, max_px=float(residuals.max()), tag_ids=tuple(t.id for t in seen))


def board_residual(
    detections: Mapping[int, Detection],
    board: Sequence[BoardTag],
    intrinsics: Intrinsics,
    camera: CameraPose,
    *,
    min_tags: int = MIN_TAGS,
) -> float | None:
    """RMS pixel distance between the board tags' corners seen in one image and where ``camera`` (the pose the
    tracker believes) projects them; ``None`` when fewer than ``min_tags`` board tags are seen. A camera moved
    since it was calibrated shows here first: its board no longer lands where the frozen pose says."""
    seen = [tag for tag in board if tag.id in detections]
    if len(seen) < min_tags:
        return None
    world = np.concatenate([tag.corners_world() for tag in seen])
    pixels = np.concatenate([np.asarray(detections[tag.id].corners, dtype=np.float64).reshape(4, 2) for tag in seen])
    residuals = np.linalg.norm(project(intrinsics, camera, world) - pixels, axis=1)
    return float(np.sqrt(np.mean(residuals**2)))


def pose_difference(a: CameraPose, b: CameraPose) -> tuple[float, float]:
    """(position distance in metres, rotation angle in degrees) between two camera poses."""
    relative = a.rotation.T @ b.rotation
    angle = float(np.degrees(np.arccos(np.clip((np.trace(relative) - 1.0) / 2.0, -1.0, 1.0))))
    return float(np.linalg.norm(a.position - b.position)), angle


def single_tag_pose(detection: Detection, tag: BoardTag, intrinsics: Intrinsics) -> CameraPose:
    """The camera pose from one tag alone (IPPE_SQUARE), for showing why it is not trusted; never used to
    calibrate."""
    import cv2

    ok, rvec, tvec = cv2.solvePnP(
        tag.corners_world().reshape(-1, 1, 3) - [tag.x, tag.y, tag.corners_world()[0, 2]],
        np.asarray(detection.corners, dtype=np.float64).reshape(-1, 1, 2),
        intrinsics.matrix,
        intrinsics.dist,
        flags=cv2.SOLVEPNP_IPPE_SQUARE,
    )
    if not ok:
        raise CalibrationError(f'PnP found no pose for tag {tag.id}')
    r_cw, _ = cv2.Rodrigues(rvec)
    # The tag frame's origin is the tag's centre on the table; shift back to the world's.
    offset = np.array([tag.x, tag.y, tag.corners_world()[0, 2]])
    return CameraPose.from_world_to_camera(rvec, tvec.reshape(3) - r_cw @ offset)
