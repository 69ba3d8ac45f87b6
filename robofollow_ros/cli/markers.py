"""``robofollow markers``: printable tag images of a marker configuration, at their true size."""

from __future__ import annotations

import argparse
from pathlib import Path

from robofollow_ros.errors import MarkerConfigError

HELP = 'write printable PNGs of every ArUco tag of a marker configuration and where each goes'
DESCRIPTION = """\
Write one PNG per tag of config/markers/<CONFIG>.yaml (the objects' tags per scene and the table board's)
under OUT, each at its true printed size (the PNG carries its resolution: print at 100 %, no fit to page),
and OUT/markers.md: which object each tag goes on, how it is mounted and the sizes to check with a ruler.

example:
  robofollow markers --out tags/            then print tags/board/*.png and tags/scene1/*.png
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``robofollow markers``."""
    parser.add_argument('--out', type=Path, required=True, help='folder to write the PNGs and markers.md into')
    parser.add_argument('--config', default='default', help='marker configuration: a name or a .yaml path')
    parser.add_argument('--dpi', type=float, default=300.0, help='printer resolution (default 300)')


def run(args: argparse.Namespace) -> int:
    """Write the tags; print how many and where the index is."""
    from robofollow_ros.tracking.markers import load_markers
    from robofollow_ros.tracking.printing import write_tags

    if not 72.0 <= args.dpi <= 2400.0:
        raise MarkerConfigError(f'--dpi must lie in 72..2400, got {args.dpi:g}')
    written = write_tags(load_markers(args.config), args.out, dpi=args.dpi)
    print(f'{len(written)} tags in {args.out}; where each goes: {args.out / "markers.md"}')
    return 0
