"""``SceneView``: what the expert knows about the cell at one instant (privileged poses + the layout's specs)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from robofollow_ros.benchmark.types import ARMS, Arm, Layout, ObjectSpec
from robofollow_ros.errors import PolicyError
from robofollow_ros.sim.expert.constants import SUPPORT_DROP, SUPPORT_RADIUS
from robofollow_ros.sim.rotations import yaw_of


@dataclass(frozen=True)
class SceneView:
    """Object and TCP poses from an observation, with the layout that names and sizes the objects.

    Attributes:
        layout: the episode's layout.
        object_pos: item name -> centre (3,) in the world frame.
        object_quat: item name -> orientation (w, x, y, z).
        ee_pos: arm -> measured TCP position (3,).
    """

    layout: Layout
    object_pos: dict[str, np.ndarray]
    object_quat: dict[str, np.ndarray]
    ee_pos: dict[Arm, np.ndarray]

    @classmethod
    def from_observation(cls, observation: Any, layout: Layout) -> SceneView:
        """Read the privileged poses of an ``Observation``.

        Raises:
            PolicyError: the observation lacks privileged object or TCP poses.
        """
        object_pos = getattr(observation, 'object_pos', None)
        ee_pos = getattr(observation, 'ee_pos', None)
        if not object_pos or not ee_pos:
            raise PolicyError('the expert needs privileged observations (object_pos / ee_pos): use the simulated cell')
        missing = [name for name in layout.object_names if name not in object_pos]
        if missing:
            raise PolicyError(f'the observation lacks poses of {", ".join(missing)}')
        quat = getattr(observation, 'object_quat', None) or {}
        return cls(
            layout=layout,
            object_pos={name: np.asarray(value, dtype=np.float64) for name, value in object_pos.items()},
            object_quat={name: np.asarray(value, dtype=np.float64) for name, value in quat.items()},
            ee_pos={arm: np.asarray(ee_pos[arm], dtype=np.float64) for arm in ARMS},
        )

    def spec(self, name: str) -> ObjectSpec:
        """The object's spec (shape, size)."""
        return self.layout.spec(name)

    def pos(self, name: str) -> np.ndarray:
        """The object's centre (3,)."""
        return self.object_pos[name].copy()

    def xy(self, name: str) -> np.ndarray:
        """The object's centre in the table plane (2,)."""
        return self.object_pos[name][:2].copy()

    def yaw(self, name: str) -> float:
        """The object's yaw about world z (0 when its orientation is unknown)."""
        quat = self.object_quat.get(name)
        return 0.0 if quat is None else yaw_of(quat)

    def graspables(self) -> tuple[str, ...]:
        """Names of the objects that can be picked up (no bowls, no labels)."""
        return tuple(p.name for p in self.layout.placements if p.spec.kind == 'object')

    def support_of(self, name: str) -> str | None:
        """The graspable object ``name`` rests on, if any (the nearest lower one within the support radius)."""
        here = self.object_pos[name]
        best: tuple[float, str] | None = None
        for other in self.graspables():
            if other == name:
                continue
            there = self.object_pos[other]
            gap = float(here[2] - there[2])
            beneath = gap >= SUPPORT_DROP and float(np.linalg.norm(here[:2] - there[:2])) <= SUPPORT_RADIUS
            if beneath and (best is None or gap < best[0]):
                best = (gap, other)
        return None if best is None else best[1]

    def container_of(self, name: str) -> str | None:
        """The bowl whose rim encloses ``name`` in xy, if any."""
        here = self.object_pos[name]
        for placement in self.layout.placements:
            if placement.spec.kind != 'bowl':
                continue
            rim = placement.spec.size[0]
            if float(np.linalg.norm(here[:2] - self.object_pos[placement.name][:2])) < rim:
                return placement.name
        return None

    def top_of(self, name: str) -> float:
        """Height of the top of ``name`` (its centre plus its half-height)."""
        return float(self.object_pos[name][2]) + self.spec(name).half_height


def footprint_radius(spec: ObjectSpec, direction: np.ndarray | None = None, *, yaw: float = 0.0) -> float:
    """Extent of an upright object from its centre in the table plane.

    Round objects return their radius. A box turned by ``yaw`` returns its extent along the unit vector
    ``direction`` (its worst case, the half-diagonal, when ``direction`` is None).
    """
    if spec.shape in ('sphere', 'cylinder', 'bowl'):
        return float(spec.size[0])
    hx, hy = float(spec.size[0]), float(spec.size[1])
    if direction is None:
        return math.hypot(hx, hy)
    cos, sin = math.cos(yaw), math.sin(yaw)
    along_x = abs(float(direction[0]) * cos + float(direction[1]) * sin)
    along_y = abs(-float(direction[0]) * sin + float(direction[1]) * cos)
    return hx * along_x + hy * along_y
