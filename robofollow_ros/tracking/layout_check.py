"""The layout check before a trial on a real cell: are the objects where the episode's layout puts them?

Pure (no clock, no ROS): measured object poses (x, y in world metres, yaw in radians, e.g. from the tracker's
``ObjectPose``) against the layout's places (the nominal xy, or the trial's perturbed xy from
``benchmark.perturbed_positions``). Every object starts at yaw 0 (``sim.spawn`` places them unrotated), so the
target yaw is 0.

Rotational symmetry (the registry names shapes and sizes, not symmetries, so the rule is the shape's):

* sphere, upright cylinder, bowl: any yaw is the same object, so rotation is not checked;
* box whose two horizontal half-extents are equal (the cubes): every quarter turn is the same, rotation is
  compared modulo 90°;
* any other box and the labels (Scene 3's bars and target squares): a half turn is the same, modulo 180°.

A tag on the object breaks none of these for the benchmark: the referee scores the objects, not their tags.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from robofollow_ros.benchmark.types import Layout, ObjectSpec
from robofollow_ros.errors import LayoutError

TARGET_YAW = 0.0
"""Every object's yaw in a layout (radians): ``sim.spawn`` places them unrotated."""
SQUARE_TOLERANCE = 1e-6
"""Two half-extents closer than this (m) make a square footprint."""


@dataclass(frozen=True)
class Tolerances:
    """How far an object may be from its place and still pass.

    ``position_mm`` (8 mm): well above the tracker's error (p95 0.25-1.5 mm on synthetic 640x480 images, issue 21's
    target p95 5 mm), so tracking noise does not fail a correct layout, and below the ±10-15 mm the seeded
    perturbation moves objects by, so a passed placement error is smaller than the variation the trial's seed asks
    for. ``rotation_deg`` (10°): 2.5 times issue 21's yaw target (p95 4°); a bar or cube turned by 10° changes
    its grasp little, by 30° it is a different scene.
    """

    position_mm: float = 8.0
    rotation_deg: float = 10.0

    def __post_init__(self) -> None:
        for name in ('position_mm', 'rotation_deg'):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0.0:
                raise LayoutError(f'layout check tolerance {name} must be a positive number, got {value!r}')


DEFAULT_TOLERANCES = Tolerances()


@dataclass(frozen=True)
class ObjectCheck:
    """One object's measured pose against its place.

    ``displacement_mm`` is the xy distance; ``dx_mm``, ``dy_mm`` its components (measured - target);
    ``rotation_deg`` the smallest yaw difference modulo the object's symmetry (None: a round object, not checked);
    ``symmetry_deg`` that period (360 for none, 180, 90; None for round).
    """

    name: str
    target: tuple[float, float, float]
    measured: tuple[float, float, float]
    displacement_mm: float
    dx_mm: float
    dy_mm: float
    rotation_deg: float | None
    symmetry_deg: float | None
    displaced: bool
    rotated: bool

    @property
    def passed(self) -> bool:
        """Within both tolerances."""
        return not (self.displaced or self.rotated)

    def describe(self) -> str:
        """One line: the object, its displacement and rotation, and what failed."""
        text = f'{self.name}: {self.displacement_mm:.1f} mm'
        text += f' (dx {round(self.dx_mm, 1) + 0.0:+.1f}, dy {round(self.dy_mm, 1) + 0.0:+.1f})'
        if self.rotation_deg is not None:
            text += f', {self.rotation_deg:.1f}°'
        problems = [what for what, bad in (('displaced', self.displaced), ('rotated', self.rotated)) if bad]
        return f'{text}: {" and ".join(problems) if problems else "ok"}'


@dataclass(frozen=True)
class LayoutCheck:
    """The whole layout's check: per object, the layout's objects that were not measured (``missing``), measured
    names the layout does not have (``unexpected``, reported, never failing), the tolerances used and the
    operator's ``override`` (why a failed check was accepted; None when there was none)."""

    layout: str
    objects: tuple[ObjectCheck, ...]
    missing: tuple[str, ...]
    unexpected: tuple[str, ...]
    tolerances: Tolerances
    override: str | None = None
    failures: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        failed = [check.describe() for check in self.objects if not check.passed]
        failed += [f'{name}: not seen' for name in self.missing]
        object.__setattr__(self, 'failures', tuple(failed))

    @property
    def passed(self) -> bool:
        """Every object of the layout seen and within tolerance."""
        return not self.failures

    @property
    def accepted(self) -> bool:
        """The trial may start: passed, or failed and overridden by the operator."""
        return self.passed or self.override is not None

    def summary(self) -> str:
        """One line for the operator."""
        if self.passed:
            worst = max((c.displacement_mm for c in self.objects), default=0.0)
            return f'layout {self.layout}: {len(self.objects)} object(s) in place (worst {worst:.1f} mm)'
        text = f'layout {self.layout}: {len(self.failures)} problem(s): {"; ".join(self.failures)}'
        if self.override is not None:
            text += f' (overridden: {self.override})'
        return text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record of the check (what a trial's record stores)."""
        return {
            'layout': self.layout,
            'passed': self.passed,
            'accepted': self.accepted,
            'override': self.override,
            'tolerances': {
                'position_mm': self.tolerances.position_mm,
                'rotation_deg': self.tolerances.rotation_deg,
            },
            'missing': list(self.missing),
            'unexpected': list(self.unexpected),
            'objects': [
                {
                    'name': c.name,
                    'target': list(c.target),
                    'measured': list(c.measured),
                    'displacement_mm': round(c.displacement_mm, 3),
                    'rotation_deg': None if c.rotation_deg is None else round(c.rotation_deg, 3),
                    'symmetry_deg': c.symmetry_deg,
                    'passed': c.passed,
                }
                for c in self.objects
            ],
        }


def symmetry_deg(spec: ObjectSpec) -> float | None:
    """The yaw period of an object (degrees): None for a round one (any yaw), 90 for a square box, else 180."""
    if spec.shape in ('sphere', 'cylinder', 'bowl'):
        return None
    if abs(spec.size[0] - spec.size[1]) < SQUARE_TOLERANCE:
        return 90.0
    return 180.0


def yaw_difference_deg(measured: float, target: float, period_deg: float) -> float:
    """The smallest |measured - target| (radians in, degrees out) modulo ``period_deg``: 0 .. period / 2."""
    difference = math.degrees(measured - target) % period_deg
    return min(difference, period_deg - difference)


def target_places(
    layout: Layout, positions: Mapping[str, tuple[float, float]] | None = None
) -> dict[str, tuple[float, float, float]]:
    """Each object's place (x, y, yaw): ``positions`` (a trial's perturbed xy) where given, else the nominal."""
    places: dict[str, tuple[float, float, float]] = {}
    for placement in layout.placements:
        x, y = (positions or {}).get(placement.name, placement.xy)
        places[placement.name] = (float(x), float(y), TARGET_YAW)
    return places


def check_layout(
    layout: Layout,
    measured: Mapping[str, Sequence[float]],
    *,
    positions: Mapping[str, tuple[float, float]] | None = None,
    tolerances: Tolerances = Tolerances(),
    override: str | None = None,
    yaw_unmeasured: Collection[str] = (),
) -> LayoutCheck:
    """Compare ``measured`` poses (name -> (x, y, yaw): metres, radians) with ``layout``'s places.

    ``positions`` are the trial's perturbed xy (``benchmark.perturbed_positions``); without them the nominal xy.
    ``yaw_unmeasured`` names objects whose measured yaw says nothing about them, so only their place is checked (a
    support whose tag the object on it covers: the tracker gives it the yaw of the object on top).
    ``override`` is the operator's reason for accepting a failed check: it is recorded in the result (and makes
    ``accepted`` true), never silently applied.

    Raises:
        LayoutError: a measured pose is not three finite numbers, or ``override`` is given but blank.
    """
    if override is not None and not override.strip():
        raise LayoutError('a layout check override needs a reason (one line saying why the layout is accepted)')
    places = target_places(layout, positions)
    checks: list[ObjectCheck] = []
    for placement in layout.placements:
        name = placement.name
        if name not in measured:
            continue
        pose = tuple(float(v) for v in measured[name])
        if len(pose) != 3 or not all(math.isfinite(v) for v in pose):
            raise LayoutError(
                f'measured pose of {name} must be three finite numbers (x, y, yaw), got {measured[name]!r}'
            )
        tx, ty, tyaw = places[name]
        dx, dy = (pose[0] - tx) * 1000.0, (pose[1] - ty) * 1000.0
        distance = math.hypot(dx, dy)
        period = symmetry_deg(placement.spec)
        rotation = None if period is None or name in yaw_unmeasured else yaw_difference_deg(pose[2], tyaw, period)
        checks.append(
            ObjectCheck(
                name=name,
                target=(tx, ty, tyaw),
                measured=(pose[0], pose[1], pose[2]),
                displacement_mm=distance,
                dx_mm=dx,
                dy_mm=dy,
                rotation_deg=rotation,
                symmetry_deg=period,
                displaced=distance > tolerances.position_mm,
                rotated=rotation is not None and rotation > tolerances.rotation_deg,
            )
        )
    return LayoutCheck(
        layout=layout.name,
        objects=tuple(checks),
        missing=tuple(p.name for p in layout.placements if p.name not in measured),
        unexpected=tuple(sorted(set(measured) - set(layout.object_names))),
        tolerances=tolerances,
        override=override,
    )
