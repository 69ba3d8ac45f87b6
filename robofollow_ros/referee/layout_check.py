"""Checking that recorded frames were recorded in the layout of the task they are scored as.

A task's ground truth only means something in its own layout: scored against frames of another layout,
an episode earns 0/0 (or, worse, a score) for a behaviour nobody asked for. The frames carry the evidence:
the objects they name, and where those objects start. An episode matches a layout when it records exactly
the layout's objects and every object's first recorded position lies within its seeded perturbation
(protocol §2.0) plus ``START_TOLERANCE_M`` of the layout's nominal position. Layouts of one scene differ
by at least 0.08 m for some object while the perturbation is at most 0.021 m, so the check separates them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from robofollow_ros.benchmark.types import Layout, Task
from robofollow_ros.errors import TrajectoryError
from robofollow_ros.referee.trajectory import Trajectory

START_TOLERANCE_M = 0.03
"""Allowed start offset beyond the perturbation: spawn placement measured within 0.002 m of nominal + offset."""


def _start_xy(positions: np.ndarray) -> tuple[int, np.ndarray] | None:
    finite = np.flatnonzero(np.isfinite(positions[:, :2]).all(axis=1))
    return None if finite.size == 0 else (int(finite[0]), positions[finite[0], :2])


def _allowed(layout: Layout, name: str) -> float:
    placement = layout.placement(name)
    while placement.on is not None or placement.inside is not None:
        placement = layout.placement(placement.on or placement.inside or '')
    perturb = placement.spec.perturb
    return math.hypot(perturb.rx, perturb.ry) + START_TOLERANCE_M


def misplaced(obj_pos: Mapping[str, np.ndarray], layout: Layout) -> list[tuple[str, int, np.ndarray, float]]:
    """Objects of ``layout`` whose first recorded xy is farther from its nominal place than allowed.

    Returns:
        ``(name, frame, xy, distance)`` per misplaced object, farthest first; objects never recorded
        are not judged here.
    """
    found = []
    for placement in layout.placements:
        positions = obj_pos.get(placement.name)
        start = None if positions is None else _start_xy(np.asarray(positions, dtype=float))
        if start is None:
            continue
        frame, xy = start
        distance = float(np.hypot(*(xy - np.asarray(placement.xy))))
        if distance > _allowed(layout, placement.name):
            found.append((placement.name, frame, xy, distance))
    return sorted(found, key=lambda item: -item[3])


def _fits(trajectory: Trajectory, layout: Layout) -> bool:
    return set(trajectory.obj_pos) == set(layout.object_names) and not misplaced(trajectory.obj_pos, layout)


def check_recorded_layout(trajectory: Trajectory, *, task: Task, layout: Layout, others: tuple[Layout, ...]) -> None:
    """Refuse ``trajectory`` unless its objects and their start positions are those of ``layout``.

    Args:
        trajectory: the recorded frames.
        task: the task the frames are scored as (for the message).
        layout: the task's layout.
        others: the other layouts of the task's scene, to name the one the frames fit, if any.

    Raises:
        TrajectoryError: extra or missing objects, or an object starting away from its place in ``layout``.
    """
    recorded = set(trajectory.obj_pos)
    expected = set(layout.object_names)
    fitting = [other.name for other in others if other.name != layout.name and _fits(trajectory, other)]
    hint = f'; the frames fit layout {" / ".join(map(repr, fitting))}' if fitting else ''
    about = f'task {task.task_id} is set in layout {layout.name!r}'
    if recorded != expected:
        parts = []
        if recorded - expected:
            parts.append(f'objects not in that layout: {", ".join(sorted(recorded - expected))}')
        if expected - recorded:
            parts.append(f'layout objects never recorded: {", ".join(sorted(expected - recorded))}')
        raise TrajectoryError(f'{about}, but the frames do not hold its objects ({"; ".join(parts)}){hint}')
    wrong = misplaced(trajectory.obj_pos, layout)
    if wrong:
        name, frame, xy, distance = wrong[0]
        nominal = layout.placement(name).xy
        more = f' (and {len(wrong) - 1} more object(s))' if len(wrong) > 1 else ''
        raise TrajectoryError(
            f'{about}, but the frames start elsewhere: {name} is at ({xy[0]:.3f}, {xy[1]:.3f}) in frame {frame}, '
            f'{distance:.3f} m from its place ({nominal[0]:.3f}, {nominal[1]:.3f}), more than the '
            f'{_allowed(layout, name):.3f} m allowed{more}{hint}'
        )
