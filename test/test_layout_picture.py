"""The operator's layout picture and text (evaluation/layout_picture.py): a PNG showing each object at its place,
with the tracked poses overlaid (red where the check fails), and the same places in words."""

from __future__ import annotations

import math

import numpy as np

from robofollow_ros.benchmark import registry
from robofollow_ros.evaluation.layout_picture import arm_bases, layout_text, signed_cm, write_layout_picture


def _red_pixels(path: object) -> int:
    from PIL import Image

    image = np.asarray(Image.open(path).convert('RGB')).astype(int)
    # matplotlib's 'red' overlay: pure red, nothing of the objects' colours is that saturated.
    return int(np.sum((image[..., 0] > 230) & (image[..., 1] < 30) & (image[..., 2] < 30)))


def test_the_picture_is_written_and_marks_what_the_check_fails(tmp_path: object) -> None:
    layout = registry.get_layout(3, 'default')
    positions = registry.perturbed_positions(layout, seed=142)
    plain = write_layout_picture(layout, tmp_path / 'plain.png', positions=positions)  # type: ignore[operator]
    assert plain.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    good = {n: (x + 0.001, y, math.radians(2.0)) for n, (x, y) in positions.items()}
    ok = write_layout_picture(layout, tmp_path / 'ok.png', positions=positions, measured=good)  # type: ignore[operator]
    bad = dict(good)
    x, y, _ = bad['red_bar_2']
    bad['red_bar_2'] = (x + 0.03, y, 0.0)
    wrong = write_layout_picture(layout, tmp_path / 'sub' / 'bad.png', positions=positions, measured=bad)  # type: ignore[operator]
    assert wrong.is_file()
    assert _red_pixels(plain) == 0 and _red_pixels(ok) == 0
    assert _red_pixels(wrong) > 200


def test_the_text_says_where_each_object_goes() -> None:
    layout = registry.get_layout(4, 'scene4.8')
    positions = registry.perturbed_positions(layout, seed=142)
    text = layout_text(layout, positions=positions)
    for name, (x, y) in positions.items():
        line = next(line for line in text.splitlines() if line.strip().startswith(f'{name}:'))
        assert f'x {signed_cm(x)}, y {signed_cm(y)}' in line
    assert 'green_cylinder_top' in text and 'on blue_cube_right' in text
    assert 'in bowl' in text


def test_a_coordinate_a_hair_below_zero_reads_zero() -> None:
    assert (signed_cm(-1e-5), signed_cm(-0.0004), signed_cm(-0.0006), signed_cm(0.0151)) == (
        '+0.0',
        '+0.0',
        '-0.1',
        '+1.5',
    )
    layout = registry.get_layout(3, 'default')
    nominal = layout_text(layout)
    on_the_line = {name: (-1e-6, y) for name, (_, y) in registry.perturbed_positions(layout, seed=142).items()}
    assert '-0.0' not in layout_text(layout, positions=on_the_line) and '-0°' not in nominal


def test_the_arm_bases_come_from_the_urdf() -> None:
    bases = arm_bases()
    assert np.allclose(bases['left'], (-0.25, -0.35))
    assert np.allclose(bases['right'], (0.25, -0.35))
