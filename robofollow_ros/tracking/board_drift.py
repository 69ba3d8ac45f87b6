"""Has the camera moved since it was calibrated? Told from the table board in every image.

With a frozen calibration the tracker believes the camera stands where ``robofollow calibrate`` found it. A camera
bumped by 1 mm / 0.2 degrees afterwards shifts every tracked pose by about 2 mm (2 mm / 0.5 degrees: 5 mm, 7 mm at
p95; docs/real-cell.md), with nothing else to show it. The board shows it: its tags no longer land where the frozen
pose projects them. What is measured is the *excess* of that residual over the residual of the pose the board
gives in the same image (``calibrate_extrinsic``): blur, noise, JPEG and exposure move the detected corners for
both poses alike and leave the excess near zero (at most 0.02 px on the cell's renders under every degradation
of ``bench_tracker --degrade``, where the plain residual rose to 0.76 px), while a moved camera raises it (1 mm /
0.2 degrees: 0.73-2.27 px, median 1.52; 0.5 mm / 0.1 degrees: median 0.70; 32 layouts each).
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros.errors import CalibrationError
from robofollow_ros.tracking.calibration import board_residual, calibrate_extrinsic, pose_difference
from robofollow_ros.tracking.camera import CameraPose, Intrinsics
from robofollow_ros.tracking.markers import BoardTag
from robofollow_ros.tracking.pose import Detection

MOVED_EXCESS_PX = 0.5
"""Median excess (px) over the recent images above which the camera has moved since its calibration."""
WINDOW = 15
"""Images the median is taken over."""
MIN_IMAGES = 5
"""Images that must show the board before anything is said."""
WITHHELD_MM = 5.0
"""Once moved: the pose error (mm, on the table under the board) the camera's move predicts, above which the tracker
publishes no pose (0.78 m from the board, 1 mm / 0.2 degrees predicts 3.7 mm, and the tracker measured 1.9 / 5.1 mm
median / max: poses go on; 2 mm / 0.5 degrees predicts 8.8 mm, measured 4.8 / 9.9 mm: withheld)."""

ONE_IMAGE_MARGIN = 1.5
"""How much more than ``WITHHELD_MM`` one image's own drift must predict to withhold its poses before the median does
(one image's fit of the move is noisier: at 0.3 degrees, 4.1 mm predicted, one image in seven gave over 5 mm;
2 mm / 0.5 degrees predicts 8.8 mm)."""


@dataclass(frozen=True)
class BoardDrift:
    """The board in one image against the frozen calibration: ``excess_px`` (the frozen pose's corner residual
    minus the image's own best fit's), and where the board puts the camera now relative to the frozen pose
    (``moved_mm``, ``moved_deg``)."""

    excess_px: float
    moved_mm: float
    moved_deg: float


class BoardWatch:
    """Follows the board's drift image by image; ``moved`` once the median excess of the last ``WINDOW`` images
    (at least ``MIN_IMAGES``) reaches ``MOVED_EXCESS_PX``."""

    def __init__(self, board: Sequence[BoardTag], *, threshold_px: float = MOVED_EXCESS_PX) -> None:
        self.board = tuple(board)
        self.threshold_px = threshold_px
        self.recent: deque[BoardDrift] = deque(maxlen=WINDOW)
        corners = [tag.corners_world().mean(axis=0) for tag in self.board]
        self.board_centre = np.mean(corners, axis=0) if corners else np.zeros(3)
        self.distance_m = 0.0
        self.last: BoardDrift | None = None
        """The last image's drift (None: that image did not show the board)."""

    def observe(
        self, detections: Mapping[int, Detection], intrinsics: Intrinsics, frozen: CameraPose
    ) -> BoardDrift | None:
        """This image's drift (``None``: too few board tags seen, or no pose fits them; nothing is recorded)."""
        self.last = None
        residual = board_residual(detections, self.board, intrinsics, frozen)
        if residual is None:
            return None
        try:
            fit = calibrate_extrinsic(detections, self.board, intrinsics, max_rms_px=float('inf'))
        except CalibrationError:
            return None
        distance, angle = pose_difference(fit.camera, frozen)
        self.distance_m = float(np.linalg.norm(np.asarray(frozen.position) - self.board_centre))
        drift = BoardDrift(max(0.0, residual - fit.rms_px), 1000.0 * distance, angle)
        self.recent.append(drift)
        self.last = drift
        return drift

    @property
    def moved(self) -> bool:
        return len(self.recent) >= MIN_IMAGES and self.median_excess >= self.threshold_px

    @property
    def withheld(self) -> bool:
        """Whether the camera moved so far that no pose may be published (``WITHHELD_MM``): over the recent images,
        or in the last one alone by ``ONE_IMAGE_MARGIN`` more (the first images after a bump, before the median
        turns, would otherwise publish poses up to 10 mm off; one image's excess stays within 0.02 px under every
        degradation measured, against the 0.5 px threshold)."""
        if self.moved and self.pose_error_mm > WITHHELD_MM:
            return True
        last = self.last
        return (
            last is not None
            and last.excess_px >= self.threshold_px
            and self.error_mm(last) > ONE_IMAGE_MARGIN * WITHHELD_MM
        )

    def error_mm(self, drift: BoardDrift) -> float:
        """The pose error on the table one image's drift predicts (its shift plus its turn at the board's
        distance)."""
        return drift.moved_mm + 1000.0 * self.distance_m * math.tan(math.radians(drift.moved_deg))

    @property
    def median_excess(self) -> float:
        return statistics.median(d.excess_px for d in self.recent) if self.recent else 0.0

    @property
    def pose_error_mm(self) -> float:
        """The pose error the camera's move predicts on the table: its shift plus its turn seen at the board's
        distance (medians over the recent images)."""
        if not self.recent:
            return 0.0
        shift = statistics.median(d.moved_mm for d in self.recent)
        turn = statistics.median(d.moved_deg for d in self.recent)
        return self.error_mm(BoardDrift(self.median_excess, shift, turn))

    def summary(self) -> dict[str, float | bool]:
        """What the tracker's status says about the camera (medians over the recent images)."""
        if not self.recent:
            return {'moved': False, 'withheld': False}
        return {
            'moved': self.moved,
            'withheld': self.withheld,
            'excess_px': round(self.median_excess, 3),
            'moved_mm': round(statistics.median(d.moved_mm for d in self.recent), 2),
            'moved_deg': round(statistics.median(d.moved_deg for d in self.recent), 3),
            'pose_error_mm': round(self.pose_error_mm, 1),
        }
