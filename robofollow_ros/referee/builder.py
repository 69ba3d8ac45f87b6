"""``TrajectoryBuilder``: the referee's ``Trajectory`` from timestamped pose and joint samples.

The one place where asynchronous samples become trajectory frames, shared by the bag reader (offline) and the
referee node (live), so that a live score and the score of the recorded bag cannot drift apart. Frames are the
header stamps of the EE poses of both arms; every other signal is zero-order held (its latest sample at or before
the frame); frames before every required signal (both EE poses, both grippers, every object pose) has a sample
are dropped. Equal stamps are ordered by log (receive) time, then by arrival. Joint states are read by name
through the first of the given ``JointLayout``s whose gripper joints they carry (grippers back to normalised).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from robofollow_ros import topics
from robofollow_ros.benchmark.types import ARMS, Arm
from robofollow_ros.errors import LayoutError, TrajectoryError
from robofollow_ros.referee.timeline import (
    MAX_GAP_S,
    Signal,
    bridge,
    frame_times,
    gaps,
    hold,
    hold_or_nan,
)
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.state_layout import GENERIC_LAYOUT, JointLayout, Numbers, find_layout
from robofollow_ros.units import NS_PER_S


@dataclass(frozen=True)
class BuiltTrajectory:
    """What the builder assembled.

    Attributes:
        trajectory: the referee's input.
        joint_positions: (n, 14) in layout order (grippers normalised), zero-order held; NaN before a joint's
            first sample.
        frames_ns: (n,) the frame stamps.
        joints: the joint layout the joint states were read with.
    """

    trajectory: Trajectory
    joint_positions: np.ndarray
    frames_ns: np.ndarray
    joints: JointLayout


class _Samples:
    def __init__(self) -> None:
        self.stamps: list[np.ndarray] = []
        self.logs: list[np.ndarray] = []
        self.values: list[np.ndarray] = []

    def add(self, stamps: np.ndarray, values: np.ndarray, logs: np.ndarray) -> None:
        self.stamps.append(np.asarray(stamps, dtype=np.int64).reshape(-1))
        self.values.append(np.asarray(values, dtype=np.float64))
        self.logs.append(np.asarray(logs, dtype=np.int64).reshape(-1))

    def signal(self, name: str) -> Signal:
        return Signal.sorted(
            name, np.concatenate(self.stamps), np.concatenate(self.values), log_ns=np.concatenate(self.logs)
        )


class TrajectoryBuilder:
    """Collects pose and joint samples and builds the trajectory of one episode.

    Args:
        layouts: joint layouts to read joint states with, the first whose grippers are there wins (e.g. the
            robot's, then ``GENERIC_LAYOUT`` for old recordings).
        max_gap: silences of a required signal longer than this (seconds) go into ``Trajectory.gaps``.
    """

    def __init__(self, *, layouts: Sequence[JointLayout] = (GENERIC_LAYOUT,), max_gap: float = MAX_GAP_S) -> None:
        self.layouts = tuple(layouts)
        self.max_gap_ns = round(max_gap * NS_PER_S)
        self._arrivals = 0
        self._positions: dict[str, _Samples] = defaultdict(_Samples)
        self._quats: dict[str, _Samples] = defaultdict(_Samples)
        self._joints: dict[str, _Samples] = defaultdict(_Samples)

    def _log(self, log_ns: int | None, count: int = 1) -> np.ndarray:
        if log_ns is not None:
            return np.full(count, log_ns, dtype=np.int64)
        start = self._arrivals
        self._arrivals += count
        return np.arange(start, start + count, dtype=np.int64)

    def add_pose(
        self,
        topic: str,
        stamp_ns: int,
        position: Sequence[float],
        quat: Sequence[float],
        *,
        log_ns: int | None = None,
    ) -> None:
        """Add one PoseStamped sample of an EE pose or object pose topic (``quat`` is w, x, y, z)."""
        self.add_poses(
            topic,
            np.array([stamp_ns]),
            np.asarray(position, dtype=np.float64).reshape(1, 3),
            np.asarray(quat, dtype=np.float64).reshape(1, 4),
            log_ns=None if log_ns is None else np.array([log_ns]),
        )

    def add_poses(
        self,
        topic: str,
        stamp_ns: np.ndarray,
        positions: np.ndarray,
        quats: np.ndarray,
        *,
        log_ns: np.ndarray | None = None,
    ) -> None:
        """Add a batch of samples of one pose topic: (k,) stamps, (k, 3) positions, (k, 4) quaternions."""
        topic = topics.resolve(topic)  # a node's (relative) name and a bag's name of a topic are one signal
        count = len(stamp_ns)
        logs = self._log(None, count) if log_ns is None else np.asarray(log_ns, dtype=np.int64)
        self._positions[topic].add(stamp_ns, np.asarray(positions).reshape(count, 3), logs)
        self._quats[topic].add(stamp_ns, np.asarray(quats).reshape(count, 4), logs)

    def add_joint_state(
        self, stamp_ns: int, names: Sequence[str], positions: Numbers, *, log_ns: int | None = None
    ) -> None:
        """Add one JointState sample (any joints; the layout's grippers are required to build)."""
        logs = self._log(log_ns)
        for name, position in zip(names, positions, strict=False):
            self._joints[name].add(np.array([stamp_ns]), np.array([float(position)]), logs)

    def _missing_gripper(self, present: Mapping[str, object]) -> str:
        arm = next((arm for arm in ARMS if not any(layout.grippers[arm] in present for layout in self.layouts)), None)
        if arm is None:
            return f'the gripper joints in {topics.resolve(topics.JOINT_STATES)} belong to different robots'
        names = list(dict.fromkeys(layout.grippers[arm] for layout in self.layouts))
        return f'no gripper data for the {arm} arm ({_or(names)} in {topics.resolve(topics.JOINT_STATES)})'

    def _pose_signals(self, topic: str) -> tuple[Signal, Signal] | None:
        if topic not in self._positions:
            return None
        return self._positions[topic].signal(topic), self._quats[topic].signal(topic)

    def build(
        self, *, since_ns: int | None = None, origin_ns: int = 0, frames_are_rows: bool = False
    ) -> BuiltTrajectory:
        """The trajectory of the samples added so far.

        Args:
            since_ns: ignore frames stamped before this (samples before it still seed the zero-order hold).
            origin_ns: stamp that becomes ``t = 0``.
            frames_are_rows: the EE pose stamps are one per executed action row (``Trajectory.frames_are_rows``).

        Raises:
            TrajectoryError: no EE pose or gripper data for an arm, or no frame after every required signal began.
        """
        ee: dict[Arm, tuple[Signal, Signal]] = {}
        for arm in ARMS:
            topic = topics.resolve(topics.ee_pose_topic(arm))
            signals = self._pose_signals(topic)
            if signals is None:
                raise TrajectoryError(f'no EE pose data for the {arm} arm ({topic})')
            ee[arm] = signals
        joints = {
            name: samples.signal(f'{topics.resolve(topics.JOINT_STATES)}[{name}]')
            for name, samples in self._joints.items()
        }
        try:
            layout = find_layout(joints, self.layouts)
        except LayoutError:
            raise TrajectoryError(self._missing_gripper(joints)) from None
        grip = {arm: joints[layout.grippers[arm]] for arm in ARMS}
        objects: dict[str, tuple[Signal, Signal]] = {}
        for topic in sorted(self._positions):
            name = topics.object_name_from_topic(topic)
            signals = self._pose_signals(topic)
            if name is not None and signals is not None:
                objects[name] = signals
        # Frames start once the arms are known; an object first seen a little later (a camera's first image after
        # the reset) was where it is first seen since the start: its first pose is held back to the first frame,
        # so that a tracked episode starts when the same episode from the simulation's truth does.
        arms_known = [*(ee[arm][0] for arm in ARMS), *grip.values()]
        required = [*arms_known, *(pose for pose, _ in objects.values())]
        frames = frame_times([ee[arm][0] for arm in ARMS], arms_known)
        if since_ns is not None:
            frames = frames[frames >= since_ns]
        latest = max(required, key=lambda signal: signal.first_ns)
        if frames.size == 0 or latest.first_ns > frames[-1]:
            raise TrajectoryError(
                f'no EE pose after every required signal has appeared '
                f'({latest.name} starts at {latest.first_ns / NS_PER_S:.3f} s)'
            )
        trajectory = Trajectory(
            t=(frames - origin_ns) / NS_PER_S,
            ee={arm: hold(ee[arm][0], frames) for arm in ARMS},
            grip={arm: hold(grip[arm], frames) / layout.gripper_scale for arm in ARMS},
            # An object's position across a long silence (its tag hidden: a pose source that never invents one)
            # is bridged linearly; its orientation is held.
            obj_pos={name: bridge(pose, frames, max_gap_ns=self.max_gap_ns) for name, (pose, _) in objects.items()},
            ee_quat={arm: hold(ee[arm][1], frames) for arm in ARMS},
            obj_quat={name: hold(quat, frames) for name, (_, quat) in objects.items()},
            gaps=tuple(
                (start - origin_ns / NS_PER_S, end - origin_ns / NS_PER_S)
                for start, end in gaps(required, frames, max_gap_ns=self.max_gap_ns)
            ),
            frames_are_rows=frames_are_rows,
        )
        held = np.stack([hold_or_nan(joints.get(name), frames) for name in layout.names], axis=1)
        return BuiltTrajectory(trajectory, layout.from_joints(held), frames, layout)


def _or(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f'{", ".join(names[:-1])} or {names[-1]}'


def empty_trajectory() -> Trajectory:
    """A trajectory without frames (scored as unscored: nothing was recorded)."""
    return Trajectory(
        t=np.zeros(0),
        ee={arm: np.zeros((0, 3)) for arm in ARMS},
        grip={arm: np.zeros(0) for arm in ARMS},
        obj_pos={},
    )
