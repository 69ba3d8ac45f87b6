"""Scene 3: which slab the expert carries the source right over.

The task's truth names it (``route_references``): "via X" passes over X, "around X" over X's partner,
which the variant decides (by name when published, by column when corrected); the referee scores the
same pair.
"""

from __future__ import annotations

from robofollow_ros.benchmark import scene3
from robofollow_ros.benchmark.types import GroundTruth, Layout


def route_objects(truth: GroundTruth, layout: Layout) -> tuple[str, ...]:
    """Slabs to pass right over, in the order they are crossed (one for every Scene 3 task)."""
    if truth.route_object is None:
        return ()
    correct, _ = scene3.route_references(truth)
    return (correct,)
