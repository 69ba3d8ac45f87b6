"""The extrinsic from one or more images of the table board taken by a camera that did not move.

Each board tag's corners are averaged over the images that saw it (the camera is fixed, so averaging only removes
pixel noise), then all tags are solved together (``calibration.calibrate_extrinsic``). Where an image alone sees
enough tags it is solved on its own too: images that disagree by more than ``max_spread_mm`` mean the camera or the
board moved between them, and the calibration is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros.errors import CalibrationError
from robofollow_ros.tracking.calibration import MIN_TAGS, Extrinsic, calibrate_extrinsic, pose_difference
from robofollow_ros.tracking.camera import Intrinsics
from robofollow_ros.tracking.markers import BoardTag
from robofollow_ros.tracking.pose import Detection, detect, make_detector

MAX_RMS_PX = 1.5
"""Refuse a board fit worse than this (RMS px): ``calibrate_extrinsic``'s default; the synthetic board fits to
0.3-0.65 px, a tag moved by 5 cm gives several px."""
MAX_SPREAD_MM = 5.0
"""Refuse images whose own solutions lie further apart than this (mm of camera position): a moved camera."""


@dataclass(frozen=True)
class BoardCalibration:
    """The joint solution, the board tags each image saw, and each image's own solution (None where it saw too
    few tags) with the largest distance between them (mm; 0 with fewer than two)."""

    extrinsic: Extrinsic
    seen: tuple[tuple[int, ...], ...]
    per_image: tuple[Extrinsic | None, ...]
    spread_mm: float


def calibrate_from_images(
    images: Sequence[np.ndarray],
    board: Sequence[BoardTag],
    intrinsics: Intrinsics,
    *,
    min_tags: int = MIN_TAGS,
    max_rms_px: float = MAX_RMS_PX,
    max_spread_mm: float = MAX_SPREAD_MM,
) -> BoardCalibration:
    """The camera's pose in the world from ``images`` (grey or BGR, each ``intrinsics.width`` x ``height``).

    Raises:
        CalibrationError: no image, an image of another size, fewer than ``min_tags`` board tags seen over all
            images, a fit error above ``max_rms_px``, or images that disagree (see the module's docstring).
    """
    if not images:
        raise CalibrationError('no image of the board given')
    detector = make_detector()
    board_ids = {tag.id for tag in board}
    corners: dict[int, list[np.ndarray]] = {}
    seen: list[tuple[int, ...]] = []
    per_image: list[Extrinsic | None] = []
    for index, image in enumerate(images):
        height, width = image.shape[:2]
        if (width, height) != (intrinsics.width, intrinsics.height):
            raise CalibrationError(
                f'image {index + 1} is {width}x{height} but the camera info is for '
                f'{intrinsics.width}x{intrinsics.height}'
            )
        detections = {key: d for key, d in detect(detector, image).items() if key in board_ids}
        seen.append(tuple(sorted(detections)))
        for key, detection in detections.items():
            corners.setdefault(key, []).append(np.asarray(detection.corners, dtype=np.float64).reshape(4, 2))
        single: Extrinsic | None = None
        if len(detections) >= min_tags and len(images) > 1:
            try:
                single = calibrate_extrinsic(detections, board, intrinsics, min_tags=min_tags, max_rms_px=max_rms_px)
            except CalibrationError:
                single = None
        per_image.append(single)
    averaged = {key: Detection(id=key, corners=np.mean(stack, axis=0)) for key, stack in corners.items()}
    extrinsic = calibrate_extrinsic(averaged, board, intrinsics, min_tags=min_tags, max_rms_px=max_rms_px)
    solved = [e for e in per_image if e is not None]
    spread = max(
        (1000.0 * pose_difference(a.camera, b.camera)[0] for i, a in enumerate(solved) for b in solved[i + 1 :]),
        default=0.0,
    )
    if spread > max_spread_mm:
        raise CalibrationError(
            f'the images disagree: their own solutions lie {spread:.1f} mm apart (> {max_spread_mm} mm); '
            'did the camera or the board move between them?'
        )
    return BoardCalibration(extrinsic=extrinsic, seen=tuple(seen), per_image=tuple(per_image), spread_mm=spread)
