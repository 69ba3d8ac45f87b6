"""Scripted pick / place motions for golden tests, on one fixed timeline (seconds).

Timeline of ``pick`` (t0 = 0):
    0.0-1.5  EE from home to ``approach`` (the grasp point: object xy + ``offset``, TCP 0.04 m above its centre)
    2.0-2.3  gripper 1 → 0 (crosses 0.35 at 2.195 s: first sample 2.22 s at 1/0.06 Hz, 2.20 s at 100 Hz)
    2.5-3.5  object and EE rise by ``lift``
    pickup:  3.5-5.0 EE back home, the object carried along at its lifted height (so ``lift`` is its highest rise)
    place:   3.5-5.0 carry to above ``place``; 5.0-5.5 lower to ``place``; 5.6-5.9 gripper 0 → 1 (crosses 0.7
             at 5.81 s: sample 5.82 s at 1/0.06 Hz); 6.0-6.3 retreat 0.08 m up; 6.3-7.5 EE home.
Frame period of the published protocol: 0.06 s, i.e. ``RATE`` = 1/0.06 Hz.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from robofollow_ros.benchmark.types import Arm, Layout
from robofollow_ros.referee.synthetic import Motion

RATE = 1 / 0.06
VARIANT = 'published'
"""Variant ``score`` uses when none is given (set per test by the ``scoring_variant`` fixture)."""
HOME: dict[Arm, tuple[float, float, float]] = {'left': (-0.30, -0.30, 0.95), 'right': (0.30, -0.30, 0.95)}
TCP_ABOVE = 0.04

Point = tuple[float, float, float]


def add(p: Sequence[float], q: Sequence[float]) -> Point:
    return (p[0] + q[0], p[1] + q[1], p[2] + q[2])


def standing(layout: Layout, z: Mapping[str, float] | None = None) -> dict[str, Point]:
    """Nominal object centres of ``layout``; height from ``z`` per name (default 0.76)."""
    z = z or {}
    return {p.name: (p.xy[0], p.xy[1], z.get(p.name, 0.76)) for p in layout.placements}


def still(motion: Motion, positions: Mapping[str, Point]) -> Motion:
    """Every object at rest at ``positions``."""
    for name, position in positions.items():
        motion.obj(name, (0.0, position))
    return motion


def pick(
    motion: Motion,
    *,
    arm: Arm,
    name: str,
    start: Point,
    offset: tuple[float, float] = (0.0, 0.0),
    lift: float = 0.10,
    place: Point | None = None,
    release: bool = True,
    t0: float = 0.0,
    home: Point | None = None,
) -> Motion:
    """Script one arm picking ``name`` (and placing it at ``place`` if given); see the module timeline."""
    home = home or HOME[arm]
    grasp = (start[0] + offset[0], start[1] + offset[1], start[2] + TCP_ABOVE)
    up = add(grasp, (0, 0, lift))
    held_up = add(start, (0, 0, lift))
    ee_keys = [(t0, home), (t0 + 1.5, grasp), (t0 + 2.5, grasp), (t0 + 3.5, up)]
    obj_keys = [(t0, start), (t0 + 2.5, start), (t0 + 3.5, held_up)]
    grip_keys = [(t0 + 2.0, 1.0), (t0 + 2.3, 0.0)]
    if place is None:
        ee_keys.append((t0 + 5.0, home))
        obj_keys.append((t0 + 5.0, (home[0], home[1], held_up[2])))
    else:
        above = add(place, (offset[0], offset[1], TCP_ABOVE + lift))
        down = add(place, (offset[0], offset[1], TCP_ABOVE))
        ee_keys += [(t0 + 5.0, above), (t0 + 5.5, down), (t0 + 6.0, down), (t0 + 6.3, add(down, (0, 0, 0.08)))]
        ee_keys.append((t0 + 7.5, home))
        obj_keys += [(t0 + 5.0, add(place, (0, 0, lift))), (t0 + 5.5, place)]
        if release:
            grip_keys += [(t0 + 5.6, 0.0), (t0 + 5.9, 1.0)]
        else:
            obj_keys.append((t0 + 7.5, (home[0], home[1], held_up[2])))
    motion.ee(arm, *ee_keys)
    motion.grip(arm, *grip_keys)
    motion.obj(name, *obj_keys)
    return motion


def score(task, motion: Motion, layout: Layout, *, rate: float = RATE, **kwargs) -> dict:  # type: ignore[no-untyped-def]
    """Score ``motion`` sampled at ``rate`` (under ``VARIANT`` unless ``variant`` is given) and return the record."""
    from robofollow_ros.referee.score import score_episode

    kwargs.setdefault('variant', VARIANT)
    return score_episode(task, motion.sample(rate), layout=layout, **kwargs).to_record()


def stage_scores(record: dict) -> list[tuple[str, float, float]]:
    """(name, intent, exec) of each gated stage of a record."""
    return [(s['name'], s['intent'], s['exec']) for s in record['stages']]
