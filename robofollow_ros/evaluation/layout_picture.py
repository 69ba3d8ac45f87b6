"""The top-down picture of a layout the operator places the objects from (issue 21), and the same in words.

Seen from above with the robot at the bottom: +x (the robot's right) to the right, +y (away from the robot) up,
world metres as in the protocol. Each object is drawn to scale at its place (its footprint, and a tick along its
+x where its yaw can be seen), the arms' bases are drawn for orientation; with ``measured`` poses the tracked
outlines are overlaid, each labelled with its displacement (mm) and rotation (degrees, modulo the object's
symmetry: ``tracking.layout_check``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from robofollow_ros.benchmark.types import Layout, ObjectSpec, Placement
from robofollow_ros.tracking.layout_check import (
    DEFAULT_TOLERANCES,
    LayoutCheck,
    Tolerances,
    check_layout,
    target_places,
)
from robofollow_ros.tracking.markers import BoardTag

WORLD_ROBOT = 'aloha'
"""The cell whose arm bases are drawn (both registered robots share the table and the bases' places)."""
MARGIN = 0.08
"""Metres shown around the objects and the bases."""


def _size_text(spec: ObjectSpec) -> str:
    """The object's size in centimetres, as an operator measures it."""
    if spec.shape == 'sphere':
        return f'sphere ⌀{200 * spec.size[0]:.1f} cm'
    if spec.shape == 'cylinder':
        return f'cylinder ⌀{200 * spec.size[0]:.1f} × {200 * spec.size[1]:.1f} cm'
    if spec.shape == 'bowl':
        return f'bowl ⌀{200 * spec.size[0]:.1f} cm'
    dims = ' × '.join(f'{200 * half:.1f}' for half in spec.size[:3])
    return f'{"label" if spec.shape == "label" else "box"} {dims} cm'


def _support(placement: Placement) -> str:
    if placement.on is not None:
        return f', on {placement.on}'
    if placement.inside is not None:
        return f', in {placement.inside}'
    return ''


def signed_cm(metres: float) -> str:
    """``+1.5``, ``-0.3``, ``+0.0`` (never ``-0.0``: a coordinate a hair below zero is zero to the operator)."""
    return f'{round(100.0 * metres, 1) + 0.0:+.1f}'


def layout_text(layout: Layout, *, positions: Mapping[str, tuple[float, float]] | None = None) -> str:
    """Where to place each object, one line each: name, size, x and y (cm, world frame: x to the robot's right,
    y away from the robot, origin at the table's centre line), yaw and what it stands on.

    ``positions`` are a trial's perturbed xy (``benchmark.perturbed_positions``); without them the nominal places.
    """
    places = target_places(layout, positions)
    lines = [
        f'Layout {layout.name} (scene {layout.scene}'
        + (f', {layout.description}' if layout.description else '')
        + "): x to the robot's right, y away from the robot, centimetres; every object unrotated: "
        'sizes are x × y × z.'
    ]
    for placement in layout.placements:
        x, y, yaw = places[placement.name]
        lines.append(
            f'  {placement.name}: x {signed_cm(x)}, y {signed_cm(y)}, yaw {round(math.degrees(yaw)) + 0}° '
            f'({_size_text(placement.spec)}{_support(placement)})'
        )
    return '\n'.join(lines)


def _footprint(spec: ObjectSpec, x: float, y: float, yaw: float, **style: Any) -> Any:
    from matplotlib.patches import Circle, Rectangle

    if spec.shape in ('sphere', 'cylinder', 'bowl'):
        return Circle((x, y), spec.size[0], **style)
    hx, hy = spec.size[0], spec.size[1]
    c, s = math.cos(yaw), math.sin(yaw)
    corner = (x - c * hx + s * hy, y - s * hx - c * hy)
    return Rectangle(corner, 2 * hx, 2 * hy, angle=math.degrees(yaw), rotation_point='xy', **style)


def _yaw_tick(axis: Any, spec: ObjectSpec, x: float, y: float, yaw: float, **style: Any) -> None:
    if spec.shape in ('sphere', 'cylinder', 'bowl'):
        return
    reach = spec.size[0]
    axis.plot([x, x + reach * math.cos(yaw)], [y, y + reach * math.sin(yaw)], **style)


def arm_bases() -> dict[str, tuple[float, float]]:
    """Each arm's base (its waist axis) in the world's xy, from the URDF."""
    import numpy as np

    from robofollow_ros.robot.kinematics import forward_kinematics

    bases: dict[str, tuple[float, float]] = {}
    for arm, chain in forward_kinematics(WORLD_ROBOT).chains.items():
        position, rotation = np.zeros(3), np.eye(3)
        for link in chain:
            position = position + rotation @ link.translation
            rotation = rotation @ link.rotation
            if link.axis is not None:
                break
        bases[arm] = (float(position[0]), float(position[1]))
    return bases


def _bounds(points: Sequence[tuple[float, float]]) -> tuple[float, float, float, float]:
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    return min(xs) - MARGIN, max(xs) + MARGIN, min(ys) - MARGIN, max(ys) + MARGIN


def write_layout_picture(
    layout: Layout,
    path: str | Path,
    *,
    positions: Mapping[str, tuple[float, float]] | None = None,
    measured: Mapping[str, Sequence[float]] | None = None,
    tolerances: Tolerances = DEFAULT_TOLERANCES,
    board: Sequence[BoardTag] = (),
    title: str = '',
) -> Path:
    """Write a top-down PNG of ``layout`` to ``path`` and return the path.

    ``positions``: the trial's perturbed xy (``benchmark.perturbed_positions``), else the nominal places.
    ``measured``: tracked poses, name -> (x, y, yaw) in metres and radians: drawn dashed over the places, each with
    its displacement and rotation, red where ``tracking.layout_check.check_layout`` fails it with ``tolerances``.
    ``board``: the calibration board's tags (``tracking.markers.load_markers().board``) to draw, grey with their ids.
    """
    # A Figure without pyplot: no global figure registry or backend switch, so an evaluator node may draw from any
    # thread of its executor.
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle, Polygon, Rectangle

    out = Path(path)
    places = target_places(layout, positions)
    bases = arm_bases()
    check: LayoutCheck | None = None
    if measured is not None:
        check = check_layout(layout, measured, positions=positions, tolerances=tolerances)
    extent = list(bases.values()) + [(p[0], p[1]) for p in places.values()]
    extent += [(float(m[0]), float(m[1])) for m in (measured or {}).values()]
    extent += [(tag.x, tag.y) for tag in board]
    x0, x1, y0, y1 = _bounds(extent)
    scale = 9.0 / max(x1 - x0, y1 - y0)
    width, height = scale * (x1 - x0), max(5.0, scale * (y1 - y0))
    figure = Figure(figsize=(width + 5.2, height + 0.8))
    axis, legend = figure.subplots(1, 2, gridspec_kw={'width_ratios': [width, 5.2]})
    axis.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor=(0.93, 0.89, 0.83), edgecolor='none', zorder=0))
    for arm, (bx, by) in bases.items():
        axis.add_patch(Circle((bx, by), 0.045, facecolor='0.35', edgecolor='black', zorder=1))
        axis.text(bx, by, f'{arm}\narm\nbase', ha='center', va='center', fontsize=8, color='white', zorder=2)
        axis.annotate('', (bx, by + 0.1), xytext=(bx, by + 0.05), arrowprops={'arrowstyle': '->', 'color': '0.35'})
    for tag in board:
        corners = tag.corners_world()[:, :2]
        axis.add_patch(Polygon(corners, closed=True, facecolor='0.82', edgecolor='0.4', zorder=1))
        axis.text(tag.x, tag.y, f'tag {tag.id}', ha='center', va='center', fontsize=7, color='0.2', zorder=2)
    # Supports first, so what stands on or in them is drawn on top.
    ordered = sorted(layout.placements, key=lambda p: p.on is not None or p.inside is not None)
    numbers = {p.name: index for index, p in enumerate(layout.placements, start=1)}
    badges: dict[tuple[float, float], list[int]] = {}
    for placement in ordered:
        spec = placement.spec
        x, y, yaw = places[placement.name]
        badges.setdefault((round(x, 3), round(y, 3)), []).append(numbers[placement.name])
        rgb = spec.rgba[:3]
        axis.add_patch(_footprint(spec, x, y, yaw, facecolor=(*rgb, 0.85), edgecolor='black', linewidth=1.0, zorder=2))
        _yaw_tick(axis, spec, x, y, yaw, color='black', linewidth=1.5, zorder=3)
    for (x, y), group in badges.items():
        axis.text(
            x,
            y,
            '/'.join(str(n) for n in group),
            ha='center',
            va='center',
            fontsize=9,
            fontweight='bold',
            zorder=6,
            bbox={'boxstyle': 'circle,pad=0.2', 'facecolor': 'white', 'alpha': 0.85, 'edgecolor': 'black'},
        )
    if check is not None and measured is not None:
        _overlay(axis, layout, measured, check)
    _legend(legend, layout, places, numbers, check, height=height + 0.8)
    axis.set_xlim(x0, x1)
    axis.set_ylim(y0, y1)
    axis.set_aspect('equal')
    axis.set_xlabel("x (m): the robot's right →")
    axis.set_ylabel('y (m): away from the robot ↑')
    axis.grid(alpha=0.35, linewidth=0.5)
    heading = title or f'Layout {layout.name} (scene {layout.scene}), seen from above'
    if check is not None:
        heading += f'\n{"in place" if check.passed else f"{len(check.failures)} problem(s)"}'
        heading += f' (tolerance {check.tolerances.position_mm:g} mm, {check.tolerances.rotation_deg:g}°)'
        if check.missing:
            heading += f'; not seen: {", ".join(check.missing)}'
    axis.set_title(heading, fontsize=11)
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=100)
    return out


def _overlay(axis: Any, layout: Layout, measured: Mapping[str, Sequence[float]], check: LayoutCheck) -> None:
    for result in check.objects:
        spec = layout.spec(result.name)
        mx, my, myaw = (float(v) for v in measured[result.name])
        colour = 'tab:green' if result.passed else 'red'
        axis.add_patch(
            _footprint(spec, mx, my, myaw, facecolor='none', edgecolor=colour, linewidth=1.6, linestyle='--', zorder=4)
        )
        _yaw_tick(axis, spec, mx, my, myaw, color=colour, linewidth=1.5, zorder=4)
        tx, ty, _ = result.target
        if result.displacement_mm > 0.5:
            axis.annotate(
                '', (mx, my), xytext=(tx, ty), arrowprops={'arrowstyle': '->', 'color': colour, 'linewidth': 1.2}
            )
        text = f'{result.displacement_mm:.0f} mm'
        if result.rotation_deg is not None:
            text += f', {result.rotation_deg:.0f}°'
        reach = spec.size[0]
        axis.text(
            mx + reach + 0.004,
            my + reach * 0.5,
            text,
            color=colour,
            fontsize=8,
            fontweight='bold',
            ha='left',
            va='bottom',
            zorder=7,
            bbox={'boxstyle': 'round,pad=0.15', 'facecolor': 'white', 'alpha': 0.8, 'edgecolor': 'none'},
        )


def _legend(
    axis: Any,
    layout: Layout,
    places: Mapping[str, tuple[float, float, float]],
    numbers: Mapping[str, int],
    check: LayoutCheck | None,
    *,
    height: float,
) -> None:
    """The numbered list beside the drawing: each object's place and size and, with a check, what was measured
    (red where it failed)."""
    fontsize = 9.0
    step = fontsize * 1.45 / 72.0 / (0.9 * height)
    by_name = {} if check is None else {c.name: c for c in check.objects}
    axis.axis('off')
    axis.text(
        0.0,
        1.0,
        'Objects: centre x, y; unrotated, sizes x × y × z',
        fontsize=fontsize + 1,
        va='top',
        transform=axis.transAxes,
        fontweight='bold',
    )
    top = 1.0 - 2 * step
    for placement in layout.placements:
        x, y, _ = places[placement.name]
        lines = [
            f'{numbers[placement.name]:>2} {placement.name}{_support(placement)}',
            f'   x {signed_cm(x)}  y {signed_cm(y)} cm  {_size_text(placement.spec)}',
        ]
        colour = 'black'
        if check is not None:
            result = by_name.get(placement.name)
            if result is None:
                lines.append('   NOT SEEN')
                colour = 'red'
            else:
                lines.append(f'   measured {result.describe().split(": ", 1)[1]}')
                colour = 'black' if result.passed else 'red'
        axis.text(
            0.0,
            top,
            '\n'.join(lines),
            fontsize=fontsize,
            family='monospace',
            color=colour,
            va='top',
            transform=axis.transAxes,
            linespacing=1.2,
        )
        top -= (len(lines) + 0.5) * step
