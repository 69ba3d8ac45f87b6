"""Scene 4 (negation, sequencing, conditionals): slots, objects, layouts, labels and evaluation tasks."""

from __future__ import annotations

SLOTS: dict[int, tuple[float, float]] = {
    1: (-0.14, -0.06),
    2: (-0.02, -0.06),
    3: (0.10, -0.06),
    4: (-0.14, -0.18),
    5: (-0.02, -0.18),
    6: (0.10, -0.18),
}
