"""Scene 3: which slabs the expert carries the source right over.

The registry names the slab to pass over from the layout (``route_references``: "around X" means over
the other slab standing in X's column *in this layout*). The referee's configuration instead pairs the
slabs by name (red with green, yellow with blue), as the published scorer does; the two differ in the
swapped layouts 3.3 and 3.4 for "around" tasks. The route stage accepts any sampled frame, so the expert
passes over both slabs when they differ (neither is the slab to avoid under either reading).
"""

from __future__ import annotations

import numpy as np

from robofollow_ros.benchmark import scene3
from robofollow_ros.benchmark.types import GroundTruth, Layout
from robofollow_ros.referee.config import default_config


def referee_correct(truth: GroundTruth) -> str | None:
    """The slab the referee's name-based column pairs require passing over (None if it has no pair)."""
    partners = default_config().scene3.partners
    if truth.route_object is None or truth.route_object not in partners:
        return None
    return truth.route_object if truth.route == 'via' else partners[truth.route_object]


def route_objects(truth: GroundTruth, layout: Layout) -> tuple[str, ...]:
    """Slabs to pass right over, ordered by their x distance from the source (the order they are crossed)."""
    if truth.route_object is None:
        return ()
    correct, _ = scene3.route_references(layout, truth)
    names = [correct]
    extra = referee_correct(truth)
    if extra is not None and extra != correct:
        names.append(extra)
    source = np.asarray(layout.placement(truth.source).xy)
    return tuple(sorted(names, key=lambda name: abs(layout.placement(name).xy[0] - source[0])))
