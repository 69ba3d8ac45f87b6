"""Gripper events (protocol §4.2): close and open events, the first arm to close, the wrong-arm flag.

Events are sample indices of the trajectory being scored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from robofollow_ros.benchmark.types import Arm, other_arm


def close_transitions(grip: np.ndarray, threshold: float) -> np.ndarray:
    """Indices t >= 1 with ``grip[t-1] > threshold`` and ``grip[t] <= threshold``."""
    return np.flatnonzero((grip[:-1] > threshold) & (grip[1:] <= threshold)) + 1


def close_event(grip: np.ndarray, threshold: float) -> int | None:
    """The first close transition; without one, the first sample at or below ``threshold``; else ``None``."""
    transitions = close_transitions(grip, threshold)
    if transitions.size:
        return int(transitions[0])
    closed = np.flatnonzero(grip <= threshold)
    return int(closed[0]) if closed.size else None


def close_starts(grip: np.ndarray, threshold: float) -> np.ndarray:
    """Every close transition, plus sample 0 if the gripper starts closed (S4 sequence evaluator)."""
    transitions = close_transitions(grip, threshold)
    if grip.size and grip[0] <= threshold:
        return np.concatenate(([0], transitions))
    return transitions


def open_event(grip: np.ndarray, after: int, threshold: float) -> int | None:
    """The first opening after sample ``after``.

    The search starts at ``max(1, min(after + 1, n - 1))``: the first t there with ``grip[t-1] < threshold``
    and ``grip[t] >= threshold``; without such a transition the first t there with ``grip[t] >= threshold``.
    """
    n = grip.size
    start = max(1, min(after + 1, n - 1))
    if start >= n:
        return None
    tail = grip[start:]
    rising = np.flatnonzero((grip[start - 1 : n - 1] < threshold) & (tail >= threshold))
    if rising.size:
        return start + int(rising[0])
    opened = np.flatnonzero(tail >= threshold)
    return start + int(opened[0]) if opened.size else None


def first_close_arm(arm: Arm, close_expected: int | None, close_other: int | None) -> Arm | None:
    """The arm that closed first; the designated ``arm`` wins ties; ``None`` if neither closed."""
    if close_expected is not None and (close_other is None or close_expected <= close_other):
        return arm
    if close_other is not None:
        return other_arm(arm)
    return None


@dataclass(frozen=True)
class GripperEvents:
    """The gripper events of one episode relative to the designated arm.

    Attributes:
        arm: the designated arm.
        close_expected: first close of the designated arm (stage 1's instant t*).
        close_other: first close of the other arm.
        open_after_close: first opening of the designated arm after ``close_expected``.
        first_close_arm: which arm closed first.
        wrong_arm: the other arm ever closed or it closed first (protocol §4.2; Scenes 1-3 penalty).
    """

    arm: Arm
    close_expected: int | None
    close_other: int | None
    open_after_close: int | None
    first_close_arm: Arm | None
    wrong_arm: bool


def gripper_events(
    grip: Mapping[Arm, np.ndarray], arm: Arm, *, close_threshold: float, open_threshold: float
) -> GripperEvents:
    """Compute the events of protocol §4.2 for designated ``arm`` with the action's close threshold."""
    close_expected = close_event(grip[arm], close_threshold)
    close_other = close_event(grip[other_arm(arm)], close_threshold)
    opened = None if close_expected is None else open_event(grip[arm], close_expected, open_threshold)
    first = first_close_arm(arm, close_expected, close_other)
    return GripperEvents(
        arm=arm,
        close_expected=close_expected,
        close_other=close_other,
        open_after_close=opened,
        first_close_arm=first,
        wrong_arm=close_other is not None or first != arm,
    )
