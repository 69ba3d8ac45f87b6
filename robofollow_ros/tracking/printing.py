"""Printable tag images of a marker configuration: one PNG per tag at its true size, and a list of where each goes.

Each PNG is the tag with its one-module white quiet zone (``markers.tag_image``), and its pHYs chunk gives the
physical resolution, so printing it at 100 % (no "fit to page") reproduces the configured black-square side. Above
the tag a strip with an arrow and ``TOP`` marks its top edge and below it a strip says its id (``CAPTION_MODULES``
tall each, outside the quiet zone: cut them off along the quiet zone's edge), so that a cut-out tag can still be
told and turned the right way. The
index (``markers.md``) says per tag which object it goes on, how (``top``: centred on the top face, the tag's top
edge toward +y of the object, i.e. away from the robot when the object stands unrotated; ``plate``: on a 3 mm plate
on top of a sphere, or on a tab at a bowl's foot at the configured offset) and the sizes to check with a ruler.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robofollow_ros.tracking.markers import MODULES, QUIET_MODULES, MarkerConfig, printed_side, tag_image

METRES_PER_INCH = 0.0254
CAPTION_MODULES = 2
"""Height of the strips above (top edge mark) and below (id) the tag, in tag modules."""


@dataclass(frozen=True)
class PrintedTag:
    """One written tag image."""

    path: Path
    tag_id: int
    where: str
    size_m: float
    dots_per_inch: float


def write_tag(path: Path, tag_id: int, *, size: float, dpi: float) -> float:
    """Write tag ``tag_id`` whose black square is ``size`` metres as a PNG for ``dpi``; the exact resolution written
    (pixels are whole modules, so the file's resolution is adjusted to keep the printed size exact)."""
    from matplotlib.image import imsave

    side_m = printed_side(size)
    modules = MODULES + 2 * QUIET_MODULES
    per_module = max(1, round(side_m / METRES_PER_INCH * dpi / modules))
    image = tag_image(tag_id, pixels_per_module=per_module)
    exact_dpi = image.shape[0] / (side_m / METRES_PER_INCH)
    path.parent.mkdir(parents=True, exist_ok=True)
    imsave(
        path, captioned(image, tag_id, strip=CAPTION_MODULES * per_module), cmap='gray', vmin=0, vmax=255, dpi=exact_dpi
    )
    return exact_dpi


def captioned(image: np.ndarray, tag_id: int, *, strip: int) -> np.ndarray:
    """``image`` (a square tag, grey) with a strip above marking its top edge (an arrow and ``TOP``) and one below
    naming its id, each ``strip`` pixels tall and drawn in grey, so that nothing in them looks like a tag's black."""
    import cv2

    side = image.shape[1]
    top = np.full((strip, side), 255, dtype=np.uint8)
    bottom = np.full((strip, side), 255, dtype=np.uint8)
    ink = 96
    middle, tip, base = side // 2, strip // 6, strip - strip // 6
    half = max(1, (base - tip) // 2)
    arrow = np.array([[middle, tip], [middle - half, base], [middle + half, base]], dtype=np.int32)
    cv2.fillPoly(top, [arrow], ink)
    _label(top, 'TOP', x=middle + half + strip // 4, ink=ink)
    _label(bottom, f'id {tag_id}', x=strip // 4, ink=ink)
    return np.vstack([top, image, bottom])


def _label(strip: np.ndarray, text: str, *, x: int, ink: int) -> None:
    """``text`` in ``strip``, as tall as fits in its height and the width right of ``x``."""
    import cv2

    height, width = strip.shape
    font = cv2.FONT_HERSHEY_SIMPLEX
    (w, h), _ = cv2.getTextSize(text, font, 1.0, 1)
    scale = min(0.6 * height / h, max(1, width - x - height // 4) / w)
    thickness = max(1, round(scale * 1.5))
    (_, h), _ = cv2.getTextSize(text, font, scale, thickness)
    cv2.putText(strip, text, (x, (height + h) // 2), font, scale, ink, thickness, cv2.LINE_AA)


def write_tags(config: MarkerConfig, out: Path, *, dpi: float = 300.0) -> list[PrintedTag]:
    """Every tag of ``config`` under ``out`` (``board/``, ``scene<N>/``) and ``out/markers.md``; what was written."""
    written = []
    for tag in config.board:
        path = out / 'board' / f'tag{tag.id:02d}.png'
        where = f'table board at x {tag.x * 100:+.1f} cm, y {tag.y * 100:+.1f} cm, yaw {tag.yaw:g}°'
        written.append(PrintedTag(path, tag.id, where, tag.size, write_tag(path, tag.id, size=tag.size, dpi=dpi)))
    for scene in sorted(config.objects):
        for name, marker in sorted(config.scene(scene).items()):
            path = out / f'scene{scene}' / f'{name}_tag{marker.id:02d}.png'
            how = 'on its top face' if marker.mount == 'top' else 'on a 3 mm plate (sphere top or bowl tab)'
            offset = (
                f', centre at ({marker.offset[0] * 100:+.1f}, {marker.offset[1] * 100:+.1f}) cm'
                if any(marker.offset)
                else ''
            )
            where = f'scene {scene} {name}, {how}, {marker.height * 1000:.0f} mm above its support{offset}'
            dots = write_tag(path, marker.id, size=marker.size, dpi=dpi)
            written.append(PrintedTag(path, marker.id, where, marker.size, dots))
    lines = [
        f'# Tags of {config.path.name} (ArUco DICT_4X4_50)',
        '',
        'Print every PNG at 100 % (no scaling); measure the black square and the whole tag before mounting.',
        "A tag's top edge (the side the arrow marked TOP points to) goes to the object's +y: away from the robot",
        'when the object stands unrotated. Cut each tag out along the outer edge of its white border: the strips',
        'above (TOP) and below (its id) are not part of it.',
        '',
        '| file | id | where | black square (mm) | with the white border (mm) |',
        '|---|---|---|---|---|',
    ]
    lines += [
        f'| {tag.path.relative_to(out)} | {tag.tag_id} | {tag.where} | {tag.size_m * 1000:.1f} | '
        f'{printed_side(tag.size_m) * 1000:.1f} |'
        for tag in written
    ]
    (out / 'markers.md').write_text('\n'.join(lines) + '\n', encoding='utf-8')
    return written
