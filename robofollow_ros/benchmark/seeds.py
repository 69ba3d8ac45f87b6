"""Trial seeds and seeded layout perturbation (protocol §1.7, §2.0).

``trial_seed`` reproduces the published seeds. ``perturbed_positions`` is our deterministic
perturbation: a ``numpy.random.default_rng(seed)`` draws, in placement order, one offset per
perturbed item (Scenes 1-3, following each object's own rule) or one per occupied slot (Scene 4, in slot
order). Items lying in a bowl or stacked on another item take the offset of what they rest on, so a
stack or a filled bowl moves as one.
"""

from __future__ import annotations

import hashlib

import numpy as np

from robofollow_ros.benchmark.constants import BASE_SEED, SEED_OFFSET_MODULUS, SEED_ROUND_STRIDE
from robofollow_ros.benchmark.types import Layout, Perturbation


def seed_offset(task_id: str) -> int:
    """The task's seed offset: the first 8 hex digits of MD5(task ID) as an integer, mod 1000."""
    return int(hashlib.md5(task_id.encode('utf-8')).hexdigest()[:8], 16) % SEED_OFFSET_MODULUS


def trial_seed(task_id: str, round: int) -> int:
    """Seed of trial ``round`` (1..10) of ``task_id``: 42 + 100 * round + seed_offset(task_id)."""
    return BASE_SEED + SEED_ROUND_STRIDE * round + seed_offset(task_id)


def _draw(rng: np.random.Generator, rule: Perturbation) -> tuple[float, float]:
    if rule.mode == 'none':
        return 0.0, 0.0
    dx = float(rng.uniform(-rule.rx, rule.rx))
    if rule.mode == 'both':
        return dx, float(rng.uniform(-rule.ry, rule.ry))
    dy = float(rng.uniform(0.0, rule.ry))
    return dx, dy if rule.mode == 'up' else -dy


def _base(layout: Layout, name: str) -> str:
    placement = layout.placement(name)
    while placement.on is not None or placement.inside is not None:
        placement = layout.placement(placement.on or placement.inside or '')
    return placement.name


def perturbation_offsets(layout: Layout, *, seed: int) -> dict[str, tuple[float, float]]:
    """The xy offset applied to every item of ``layout`` for ``seed`` (zero for unperturbed items)."""
    rng = np.random.default_rng(seed)
    offsets: dict[str, tuple[float, float]] = {}
    if any(p.slot is not None for p in layout.placements):
        by_slot: dict[int, tuple[float, float]] = {}
        for slot in sorted({p.slot for p in layout.placements if p.slot is not None}):
            rule = next(p.spec.perturb for p in layout.placements if p.slot == slot and _base(layout, p.name) == p.name)
            by_slot[slot] = _draw(rng, rule)
        return {p.name: by_slot[p.slot] if p.slot is not None else (0.0, 0.0) for p in layout.placements}
    for placement in layout.placements:
        if placement.on is None and placement.inside is None:
            offsets[placement.name] = _draw(rng, placement.spec.perturb)
    return {p.name: offsets[_base(layout, p.name)] for p in layout.placements}


def perturbed_positions(layout: Layout, *, seed: int) -> dict[str, tuple[float, float]]:
    """Perturbed nominal xy of every item of ``layout`` for ``seed``; deterministic and pure."""
    offsets = perturbation_offsets(layout, seed=seed)
    return {p.name: (p.xy[0] + offsets[p.name][0], p.xy[1] + offsets[p.name][1]) for p in layout.placements}
