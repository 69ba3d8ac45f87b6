"""Layouts and tasks written by hand from the protocol (protocol §2), independent of the benchmark registry.

Only what the referee reads matters here: object names, kinds (object / bowl / label) and sizes.
Positions in the placements are the nominal ones; the trajectories carry the real poses.
"""

from __future__ import annotations

from robofollow_ros.benchmark.types import Conditional, GroundTruth, Layout, ObjectSpec, Placement, Task

RGBA = (0.5, 0.5, 0.5, 1.0)


def _placements(items: list[tuple[str, str, tuple[float, ...], tuple[float, float]]]) -> tuple[Placement, ...]:
    return tuple(Placement(ObjectSpec(name, shape, size, RGBA), xy) for name, shape, size, xy in items)  # type: ignore[arg-type]


S1 = Layout(
    'default',
    1,
    _placements(
        [
            ('red_sphere', 'sphere', (0.02,), (-0.14, -0.04)),
            ('yellow_block_1', 'box', (0.02, 0.02, 0.02), (-0.02, -0.04)),
            ('red_cylinder', 'cylinder', (0.025, 0.025), (0.10, -0.04)),
            ('yellow_block_2', 'box', (0.02, 0.02, 0.02), (-0.14, -0.18)),
            ('green_sphere', 'sphere', (0.02,), (-0.02, -0.18)),
            ('yellow_block_3', 'box', (0.02, 0.02, 0.02), (0.10, -0.18)),
        ]
    ),
)

S2 = Layout(
    'default',
    2,
    _placements(
        [
            ('large_red_cylinder', 'cylinder', (0.030, 0.035), (-0.14, -0.04)),
            ('large_blue_cube', 'box', (0.03, 0.03, 0.03), (-0.14, -0.13)),
            ('small_red_cube', 'box', (0.02, 0.02, 0.02), (-0.03, -0.04)),
            ('small_blue_cylinder', 'cylinder', (0.02, 0.025), (-0.03, -0.13)),
            ('green_bowl', 'bowl', (0.06, 0.04), (0.07, -0.10)),
            ('yellow_bowl', 'bowl', (0.08, 0.05), (0.16, -0.10)),
        ]
    ),
)

SLAB = (0.018, 0.028, 0.013)
LABEL = (0.03475, 0.03475, 0.001)
S3 = Layout(
    'default',
    3,
    _placements(
        [
            ('red_bar_2', 'box', SLAB, (-0.09, -0.17)),
            ('green_bar_3', 'box', SLAB, (-0.09, -0.09)),
            ('yellow_bar_4', 'box', SLAB, (0.01, -0.17)),
            ('blue_bar_5', 'box', SLAB, (0.01, -0.09)),
            ('green_label_1', 'label', LABEL, (-0.19, -0.13)),
            ('blue_label_6', 'label', LABEL, (0.11, -0.13)),
        ]
    ),
)

S4_1 = Layout(
    'scene4_1',
    4,
    _placements(
        [
            ('bowl', 'bowl', (0.06, 0.04), (-0.14, -0.06)),
            ('red_cube_in_bowl', 'box', (0.024, 0.024, 0.024), (-0.14, -0.06)),
            ('yellow_cylinder', 'cylinder', (0.024, 0.025), (-0.02, -0.06)),
            ('blue_cube_right', 'box', (0.024, 0.024, 0.024), (0.10, -0.06)),
            ('green_cylinder_top', 'cylinder', (0.024, 0.025), (0.10, -0.06)),
            ('blue_sphere', 'sphere', (0.024,), (-0.14, -0.18)),
            ('red_sphere', 'sphere', (0.024,), (-0.02, -0.18)),
        ]
    ),
)


def task(
    task_id: str,
    truth: GroundTruth,
    layout: Layout,
    *,
    level: int = 0,
    instruction: str = 'do the task',
    conditional: Conditional | None = None,
) -> Task:
    """An evaluation task around ``truth``."""
    return Task(
        task_id=task_id,
        scene=truth.scene,
        level=level,
        layout=layout.name,
        config=layout.name,
        instruction=instruction,
        truth=truth,
        conditional=conditional,
    )
