"""Where each object of a layout goes, for the operator of a real cell: a top-down picture and a text listing.

Positions are the layout's ``xy`` in the ``world`` frame (m): x to the right of the cell, y away from the robots.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from robofollow_ros.benchmark.types import Layout

TABLE_HALF_EXTENT = 0.45
"""Half of the drawn table area (m) around the world origin."""


def layout_text(layout: Layout) -> str:
    """One line per object: its name, shape, where it goes (x, y in cm) and what it stands on or lies in."""
    lines = [f'layout {layout.name} (scene {layout.scene}): x to the right, y away from the robots, in cm']
    for placement in layout.placements:
        x, y = placement.xy
        where = f' on {placement.on}' if placement.on else f' in {placement.inside}' if placement.inside else ''
        slot = f' (slot {placement.slot})' if placement.slot is not None else ''
        position = f'x {x * 100:+6.1f}  y {y * 100:+6.1f}'
        lines.append(f'  {placement.name:<28} {placement.spec.shape:<8} {position}{where}{slot}')
    return '\n'.join(lines)


def write_layout_picture(
    layout: Layout,
    path: Path,
    *,
    measured: Mapping[str, tuple[float, float]] | None = None,
    title: str = '',
) -> Path:
    """Draw ``layout`` from above into ``path`` (PNG): each object as a disc in its colour at its ``xy``, named;
    ``measured`` positions (m), when given, as crosses beside them. Returns ``path``."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(6.0, 6.0))
    try:
        for placement in layout.placements:
            x, y = placement.xy
            radius = max(0.015, float(placement.spec.size[0]))
            axes.add_patch(plt.Circle((x, y), radius, color=placement.spec.rgba[:3], alpha=0.8, ec='black', lw=0.5))
            axes.annotate(
                placement.name,
                (x, y),
                xytext=(0, radius * 400 + 4),
                textcoords='offset points',
                ha='center',
                fontsize=7,
            )
        for name, (x, y) in (measured or {}).items():
            axes.plot([x], [y], 'kx')
            axes.annotate(name, (x, y), xytext=(4, -8), textcoords='offset points', fontsize=6, color='0.3')
        axes.set_xlim(-TABLE_HALF_EXTENT, TABLE_HALF_EXTENT)
        axes.set_ylim(-TABLE_HALF_EXTENT, TABLE_HALF_EXTENT)
        axes.set_aspect('equal')
        axes.set_xlabel('x (m), to the right')
        axes.set_ylabel('y (m), away from the robots')
        axes.set_title(title or f'layout {layout.name}', fontsize=9)
        axes.grid(True, lw=0.3)
        figure.savefig(path, dpi=100)
    finally:
        plt.close(figure)
    return path
