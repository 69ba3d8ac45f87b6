"""Everything a scorer needs about one episode, computed once."""

from __future__ import annotations

from dataclasses import dataclass

from robofollow_ros.benchmark.types import Arm, GroundTruth, Layout, Task, Variant
from robofollow_ros.referee.config import RefereeConfig, VariantRules
from robofollow_ros.referee.events import GripperEvents
from robofollow_ros.referee.signals import EpisodeSignals


@dataclass(frozen=True)
class EpisodeContext:
    """A task's ground truth, its layout, the constants, the variant's rules, the signals and the gripper events."""

    task: Task
    truth: GroundTruth
    layout: Layout
    config: RefereeConfig
    signals: EpisodeSignals
    events: GripperEvents
    variant: Variant
    rules: VariantRules

    @property
    def arm(self) -> Arm:
        """The designated arm."""
        return self.truth.arm

    @property
    def source(self) -> str:
        """The object the designated arm must take."""
        return self.truth.source

    @property
    def scene(self) -> int:
        """The scene family (1-4)."""
        return self.truth.scene
