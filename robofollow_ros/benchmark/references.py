"""Referring expressions grounded in a layout: which object does "the ball that is not red" mean here?

Scenes 2 and 4 name objects by attributes (colour, shape, size), by position (left / right) and, in
Scene 4, by negation and support relations. A ``Descriptor`` is such a phrase as data; ``resolve``
grounds it in a ``Layout`` from the nominal positions and the stacking relations of the placements, so
that ground truth in a new layout is computed, not written down.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from robofollow_ros.benchmark.types import Layout

Side = Literal['left', 'right']
SizeWord = Literal['larger', 'smaller']

SIDE_TOLERANCE = 0.02
"""Two items whose nominal x differ by less than this (m) share a column: "left"/"right" cannot tell them apart."""


@dataclass(frozen=True)
class Traits:
    """The attributes an instruction can use to name an item."""

    colour: str
    shape: str
    size: str = ''


@dataclass(frozen=True)
class Descriptor:
    """A referring expression as data.

    Every field that is set filters the candidates; ``size`` and ``side`` then keep the larger/smaller
    or leftmost/rightmost candidate, ``not_side`` drops it. ``on`` keeps items resting on the referent
    of another descriptor. ``fallback`` names the item meant in the training configuration; it is used
    only for a conditional branch that cannot be grounded in a layout (the branch that is not taken).
    """

    text: str
    shape: str | None = None
    colour: str | None = None
    not_colour: str | None = None
    not_shape: str | None = None
    size: SizeWord | None = None
    side: Side | None = None
    not_side: Side | None = None
    touching_table: bool | None = None
    in_bowl: bool | None = None
    on: Descriptor | None = None
    fallback: str | None = None

    @property
    def slug(self) -> str:
        """The phrase without article, words joined by ``_`` (as used in task IDs)."""
        words = self.text.split()
        if words and words[0] == 'the':
            words = words[1:]
        return '_'.join(words)


def _filtered(descriptor: Descriptor, layout: Layout, traits: dict[str, Traits]) -> list[str]:
    names = []
    for placement in layout.placements:
        trait = traits[placement.name]
        wants_bowl = descriptor.shape == 'bowl'
        if (trait.shape == 'bowl') != wants_bowl or trait.shape == 'label':
            continue
        if descriptor.shape is not None and trait.shape != descriptor.shape:
            continue
        if descriptor.colour is not None and trait.colour != descriptor.colour:
            continue
        if descriptor.not_colour is not None and trait.colour == descriptor.not_colour:
            continue
        if descriptor.not_shape is not None and trait.shape == descriptor.not_shape:
            continue
        touching = placement.on is None and placement.inside is None
        if descriptor.touching_table is not None and touching != descriptor.touching_table:
            continue
        if descriptor.in_bowl is not None and (placement.inside is not None) != descriptor.in_bowl:
            continue
        names.append(placement.name)
    if descriptor.on is not None:
        supports = set(resolve_all(descriptor.on, layout, traits))
        names = [name for name in names if layout.placement(name).on in supports]
    return names


def _extreme(names: list[str], layout: Layout, side: Side) -> list[str]:
    """The leftmost/rightmost of ``names``; every item within ``SIDE_TOLERANCE`` of it ties."""
    if not names:
        return []
    xs = {name: layout.placement(name).xy[0] for name in names}
    best = min(xs.values()) if side == 'left' else max(xs.values())
    return [name for name in names if abs(xs[name] - best) < SIDE_TOLERANCE]


def _size_rank(name: str, traits: dict[str, Traits]) -> int:
    return {'small': 0, 'large': 1}.get(traits[name].size, -1)


def resolve_all(descriptor: Descriptor, layout: Layout, traits: dict[str, Traits]) -> tuple[str, ...]:
    """Every item of ``layout`` that ``descriptor`` can mean; exactly one for a well-formed reference."""
    names = _filtered(descriptor, layout, traits)
    if descriptor.size is not None and names:
        ranks = [_size_rank(name, traits) for name in names]
        best = max(ranks) if descriptor.size == 'larger' else min(ranks)
        names = [name for name, rank in zip(names, ranks, strict=True) if rank == best]
    if descriptor.side is not None:
        names = _extreme(names, layout, descriptor.side)
    if descriptor.not_side is not None:
        dropped = set(_extreme(names, layout, descriptor.not_side))
        names = [name for name in names if name not in dropped] if len(dropped) == 1 else []
    return tuple(names)


def resolve(descriptor: Descriptor, layout: Layout, traits: dict[str, Traits]) -> str | None:
    """The one item ``descriptor`` means in ``layout``, or ``None`` if it means none or several."""
    names = resolve_all(descriptor, layout, traits)
    return names[0] if len(names) == 1 else None


def resolve_or_fallback(descriptor: Descriptor, layout: Layout, traits: dict[str, Traits]) -> str:
    """Like ``resolve`` but falls back to ``descriptor.fallback``; raises ``ValueError`` without one."""
    name = resolve(descriptor, layout, traits)
    if name is not None:
        return name
    if descriptor.fallback is not None:
        return descriptor.fallback
    raise ValueError(f'{descriptor.text!r} does not name exactly one item in layout {layout.name!r}')
