"""The spawn procedure (protocol §2.0 / §2.4): put a layout's items on the table and let them settle.

Order: static items and table items (and the object inside a bowl, dropped from rim + half-height + 0.015) ->
settle -> (in-bowl exposure check) -> stacked items on their settled supports (support top + half-height + 0.002)
-> settle. Items waiting for a later phase are parked far from the table with gravity compensated, so they
neither fall nor touch anything. Settling is part of reset, never of the episode.
"""

from __future__ import annotations

from collections.abc import Mapping

import mujoco
import numpy as np

from robofollow_ros.benchmark.types import TABLE_Z, Layout, Placement
from robofollow_ros.errors import SimulationError
from robofollow_ros.sim.constants import (
    IN_BOWL_DROP,
    SETTLE_SECONDS,
    SPAWN_CLEARANCE_BOX,
    STACK_CLEARANCE,
)
from robofollow_ros.sim.model import CellModel
from robofollow_ros.sim.objects import bowl_inner_floor, is_static
from robofollow_ros.sim.physics import object_pose, set_object_pose

IN_BOWL_MIN_EXPOSURE = 0.012
"""Protocol §2.4: the in-bowl cube's top should stand at least this far above the bowl's rim."""
PARK_X = 5.0


def table_height(placement: Placement) -> float:
    """Spawn height of an item's centre when it stands on the table (protocol §2.0)."""
    spec = placement.spec
    if spec.shape == 'sphere':
        return TABLE_Z + spec.size[0]
    if spec.shape == 'cylinder':
        return TABLE_Z + spec.size[1]
    if spec.shape == 'label':
        return TABLE_Z + spec.size[2]
    if spec.shape == 'bowl':
        return TABLE_Z + spec.size[1] / 2.0 + (0.0 if spec.static else SPAWN_CLEARANCE_BOX)
    return TABLE_Z + spec.half_height + SPAWN_CLEARANCE_BOX


def settle(cell: CellModel, data: mujoco.MjData, seconds: float) -> None:
    """Step the physics for ``seconds`` with the current controls."""
    mujoco.mj_step(cell.model, data, nstep=cell.steps_for(seconds))


def _stack_order(layout: Layout) -> list[Placement]:
    """Stacked placements ordered so that every support comes before what stands on it."""
    pending = [p for p in layout.placements if p.on is not None]
    ordered: list[Placement] = []
    placed = {p.name for p in layout.placements if p.on is None}
    while pending:
        ready = [p for p in pending if p.on in placed]
        if not ready:
            raise SimulationError(
                f'layout {layout.name!r}: stack supports missing or cyclic: {[(p.name, p.on) for p in pending]}'
            )
        for p in ready:
            ordered.append(p)
            placed.add(p.name)
            pending.remove(p)
    return ordered


def spawn(cell: CellModel, data: mujoco.MjData, layout: Layout, positions: Mapping[str, tuple[float, float]]) -> None:
    """Place every item of ``layout`` at ``positions`` (perturbed xy) and settle; arms and controls must be set.

    Raises:
        SimulationError: an item has no position, or a stack/bowl reference is broken.
    """
    missing = [p.name for p in layout.placements if p.name not in positions]
    if missing:
        raise SimulationError(f'layout {layout.name!r}: no spawn position for {missing}')
    model = cell.model
    later = [p for p in layout.placements if p.on is not None]
    for i, placement in enumerate(later):
        body = cell.object_index[placement.name].body
        model.body_gravcomp[body] = 1.0
        set_object_pose(cell, data, placement.name, np.array([PARK_X + 0.3 * i, 0.0, 2.0]))
    in_bowl: list[Placement] = []
    for placement in layout.placements:
        if placement.on is not None:
            continue
        x, y = positions[placement.name]
        if placement.inside is not None:
            in_bowl.append(placement)
            continue
        set_object_pose(cell, data, placement.name, np.array([x, y, table_height(placement)]))
    mujoco.mj_forward(model, data)
    for placement in in_bowl:
        bowl = layout.spec(placement.inside)  # type: ignore[arg-type]
        if bowl.shape != 'bowl':
            raise SimulationError(f'{placement.name!r} is inside {bowl.name!r}, which is not a bowl')
        bowl_pos, _ = object_pose(cell, data, bowl.name)
        x, y = positions[placement.name]
        rim = bowl_pos[2] + bowl.size[1] / 2.0
        set_object_pose(cell, data, placement.name, np.array([x, y, rim + placement.spec.half_height + IN_BOWL_DROP]))
    settle(cell, data, SETTLE_SECONDS)
    for placement in in_bowl:
        bowl = layout.spec(placement.inside)  # type: ignore[arg-type]
        bowl_pos, _ = object_pose(cell, data, bowl.name)
        pos, _ = object_pose(cell, data, placement.name)
        rim = bowl_pos[2] + bowl.size[1] / 2.0
        if pos[2] + placement.spec.half_height < rim + IN_BOWL_MIN_EXPOSURE and not is_static(placement.spec):
            floor = bowl_pos[2] + bowl_inner_floor(bowl)
            raise SimulationError(
                f'{placement.name!r} sits too deep in {bowl.name!r} (top {pos[2] + placement.spec.half_height:.3f}, '
                f'rim {rim:.3f}, floor {floor:.3f}): make the bowl shallower'
            )
    if not later:
        return
    for placement in _stack_order(layout):
        support = layout.spec(placement.on)  # type: ignore[arg-type]
        support_pos, _ = object_pose(cell, data, support.name)
        z = support_pos[2] + support.half_height + placement.spec.half_height + STACK_CLEARANCE
        model.body_gravcomp[cell.object_index[placement.name].body] = 0.0
        set_object_pose(cell, data, placement.name, np.array([support_pos[0], support_pos[1], z]))
        mujoco.mj_forward(model, data)
    settle(cell, data, SETTLE_SECONDS)
