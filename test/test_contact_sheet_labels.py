"""tools/make_contact_sheet.py: each tile's label is drawn once, inside the box its text measures."""

from __future__ import annotations

import importlib.util

import cv2
import numpy as np
from eval_process import REPO


def load_tool():
    spec = importlib.util.spec_from_file_location('make_contact_sheet', REPO / 'tools' / 'make_contact_sheet.py')
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_tile_label_is_drawn_once_inside_its_text_box(monkeypatch):
    tool = load_tool()
    calls = []
    put_text = cv2.putText

    def counting(image, text, org, font, scale, colour, thickness=1, *args):
        calls.append((text, org, font, scale, thickness))
        return put_text(image, text, org, font, scale, colour, thickness, *args)

    monkeypatch.setattr(tool.cv2, 'putText', counting)
    text = 'S1 start cam_left_wrist'
    labelled = tool._labelled(np.full((240, 320, 3), 128, dtype=np.uint8), text)
    # Two draws with different stroke widths do not line up (OpenCV advances glyphs by the stroke): a ghost label.
    assert len(calls) == 1, calls
    [(_, (x, _), font, scale, thickness)] = calls
    (width, _), _ = cv2.getTextSize(text, font, scale, thickness)
    ink = np.flatnonzero((labelled[..., 0] > 200).any(axis=0))
    assert ink.size and x - 1 <= ink.min() and ink.max() <= x + width + 1, (ink.min(), ink.max(), x, width)
