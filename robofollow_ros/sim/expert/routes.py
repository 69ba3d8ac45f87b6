"""Scene 3: which slab the expert carries the source right over.

The registry names it from the layout (``route_references``): "via X" passes over X, "around X" over the
other slab standing in X's column in this layout; the referee scores the same pair.
"""

from __future__ import annotations

from robofollow_ros.benchmark import scene3
from robofollow_ros.benchmark.types import GroundTruth, Layout


def route_objects(truth: GroundTruth, layout: Layout) -> tuple[str, ...]:
    """Slabs to pass right over, in the order they are crossed (one for every Scene 3 task)."""
    if truth.route_object is None:
        return ()
    correct, _ = scene3.route_references(layout, truth)
    return (correct,)
