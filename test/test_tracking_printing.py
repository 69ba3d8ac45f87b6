"""``robofollow markers``: every tag of the configuration as a PNG that decodes to its id and prints at its size."""

from __future__ import annotations

import struct
from pathlib import Path

import cv2
import numpy as np

from robofollow_ros.cli import main
from robofollow_ros.tracking.markers import MODULES, QUIET_MODULES, load_markers, printed_side
from robofollow_ros.tracking.printing import CAPTION_MODULES


def _physical_side_m(path: Path) -> float:
    """The printed side of a square PNG from its pHYs chunk (pixels per metre)."""
    data = path.read_bytes()
    at = data.index(b'pHYs')
    per_metre_x, _per_metre_y, unit = struct.unpack('>IIB', data[at + 4 : at + 13])
    assert unit == 1
    width = struct.unpack('>I', data[16:20])[0]
    return width / per_metre_x


def test_every_tag_is_written_at_its_size_and_decodes_to_its_id(tmp_path: Path) -> None:
    out = tmp_path / 'tags'
    assert main(['markers', '--out', str(out), '--dpi', '150']) == 0
    config = load_markers('default')
    expected = {tag.id: tag.size for tag in config.board}
    expected |= {marker.id: marker.size for scene in config.objects for marker in config.scene(scene).values()}
    files = sorted(out.rglob('*.png'))
    assert len(files) == len(expected)
    detector = cv2.aruco.ArucoDetector(cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50))
    index = (out / 'markers.md').read_text(encoding='utf-8')
    for path in files:
        tag_id = int(path.stem.rsplit('tag', 1)[1])
        image = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
        framed = np.pad(image, 40, constant_values=255)
        _corners, ids, _rejected = detector.detectMarkers(framed)
        assert ids is not None and ids.ravel().tolist() == [tag_id], path
        assert abs(_physical_side_m(path) - printed_side(expected[tag_id])) < 1e-4, path
        assert f'| {path.relative_to(out)} | {tag_id} |' in index
        # A strip above marks the top edge, one below names the id; the quiet zone between stays white.
        side = image.shape[1]
        strip = CAPTION_MODULES * side // (MODULES + 2 * QUIET_MODULES)
        assert image.shape[0] == side + 2 * strip, path
        top, tag, bottom = image[:strip], image[strip : strip + side], image[strip + side :]
        assert (top < 200).sum() > strip and (bottom < 200).sum() > strip
        assert (tag[: side // 8] == 255).all() and (tag[-(side // 8) :] == 255).all()
        assert (top[:, : side // 3] == 255).all()  # the arrow and TOP lie right of the middle's left third


def test_a_printer_resolution_out_of_range_is_one_line(tmp_path: Path, capsys) -> None:
    assert main(['markers', '--out', str(tmp_path), '--dpi', '5']) == 2
    assert capsys.readouterr().err.strip().endswith('--dpi must lie in 72..2400, got 5')
