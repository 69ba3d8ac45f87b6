"""The layout check before a trial (tracking/layout_check.py): an object displaced by 3 cm or turned by 30° fails,
a correct layout seen with realistic tracking noise (about 1 mm and 2°) passes, round objects' yaw and square
objects' quarter turns are not errors, a missing object fails, and an override is recorded, never implied."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robofollow_ros.benchmark import registry
from robofollow_ros.errors import LayoutError
from robofollow_ros.tracking.layout_check import Tolerances, check_layout, symmetry_deg

SEED = 142


def _truth(scene: int, name: str) -> tuple[object, dict[str, tuple[float, float]]]:
    layout = registry.get_layout(scene, name)
    return layout, registry.perturbed_positions(layout, seed=SEED)


def _noisy(
    positions: dict[str, tuple[float, float]], rng: np.random.Generator
) -> dict[str, tuple[float, float, float]]:
    return {
        name: (x + rng.normal(0.0, 0.001), y + rng.normal(0.0, 0.001), math.radians(rng.normal(0.0, 2.0)))
        for name, (x, y) in positions.items()
    }


@pytest.mark.parametrize('scene', [1, 2, 3, 4])
def test_a_correct_layout_with_tracking_noise_passes(scene: int) -> None:
    rng = np.random.default_rng(scene)
    for name in registry.layout_names(scene):
        layout, positions = _truth(scene, name)
        for _ in range(20):
            check = check_layout(layout, _noisy(positions, rng), positions=positions)
            assert check.passed, check.summary()
            assert check.accepted and not check.missing


def test_a_3_cm_displacement_fails_in_any_direction() -> None:
    layout, positions = _truth(1, 'default')
    rng = np.random.default_rng(0)
    for name in layout.object_names:
        for angle in np.linspace(0.0, 2 * math.pi, 8, endpoint=False):
            measured = _noisy(positions, rng)
            x, y, yaw = measured[name]
            measured[name] = (x + 0.03 * math.cos(angle), y + 0.03 * math.sin(angle), yaw)
            check = check_layout(layout, measured, positions=positions)
            assert not check.passed and not check.accepted
            (bad,) = [c for c in check.objects if not c.passed]
            assert bad.name == name and bad.displaced and 25.0 < bad.displacement_mm < 35.0
            assert check.failures[0].startswith(f'{name}: ')


def test_checked_against_the_trials_perturbed_places_not_the_nominal() -> None:
    layout, positions = _truth(1, 'default')
    nominal = {p.name: (p.xy[0], p.xy[1], 0.0) for p in layout.placements}
    assert check_layout(layout, nominal).passed
    moved = [n for n in layout.object_names if math.dist(positions[n], layout.placement(n).xy) > 0.008]
    assert moved, 'the seed should move something by more than the tolerance'
    failed = {c.name for c in check_layout(layout, nominal, positions=positions).objects if not c.passed}
    assert failed == set(moved)


@pytest.mark.parametrize(('scene', 'name', 'period'), [(3, 'red_bar_2', 180.0), (2, 'large_blue_cube', 90.0)])
def test_a_30_degree_turn_fails_and_a_symmetric_turn_does_not(scene: int, name: str, period: float) -> None:
    layout, positions = _truth(scene, 'default')
    assert symmetry_deg(layout.spec(name)) == period
    rng = np.random.default_rng(1)
    for turn, fails in ((30.0, True), (-30.0, True), (period, False), (period + 1.5, False), (period - 30.0, True)):
        measured = _noisy(positions, rng)
        x, y, _ = measured[name]
        measured[name] = (x, y, math.radians(turn))
        check = check_layout(layout, measured, positions=positions)
        result = next(c for c in check.objects if c.name == name)
        assert result.rotated is fails, (turn, result)
        assert check.passed is not fails


def test_round_objects_may_have_any_yaw() -> None:
    layout, positions = _truth(1, 'default')
    measured = {n: (x, y, math.radians(137.0)) for n, (x, y) in positions.items()}
    check = check_layout(layout, measured, positions=positions)
    round_ones = {c.name for c in check.objects if c.rotation_deg is None}
    assert round_ones == {'red_sphere', 'green_sphere', 'red_cylinder'}
    assert {c.name for c in check.objects if not c.passed} == set(layout.object_names) - round_ones


def test_a_covered_support_is_checked_by_its_place_only_when_its_yaw_is_not_measured() -> None:
    """The tracker publishes a stack's support (Scene 4's blue cube under the green cylinder) with the yaw of the
    round object on it, which an operator may turn at will: the evaluator names it, and only its place counts."""
    layout, positions = _truth(4, 'scene4_1')
    (support,) = {p.on for p in layout.placements if p.on is not None}
    assert symmetry_deg(next(p.spec for p in layout.placements if p.name == support)) == 90.0
    measured = {n: (x, y, 0.0) for n, (x, y) in positions.items()}
    measured[support] = (*positions[support], math.radians(30.0))
    assert not check_layout(layout, measured, positions=positions).passed
    check = check_layout(layout, measured, positions=positions, yaw_unmeasured={support})
    assert check.passed and next(c for c in check.objects if c.name == support).rotation_deg is None
    moved = dict(measured, **{support: (positions[support][0] + 0.03, positions[support][1], 0.0)})
    assert not check_layout(layout, moved, positions=positions, yaw_unmeasured={support}).passed


def test_missing_objects_fail_and_unexpected_ones_are_only_reported() -> None:
    layout, positions = _truth(2, 'default')
    measured = {n: (x, y, 0.0) for n, (x, y) in positions.items() if n != 'green_bowl'}
    measured['stray_cup'] = (0.0, 0.0, 0.0)
    check = check_layout(layout, measured, positions=positions)
    assert check.missing == ('green_bowl',) and check.unexpected == ('stray_cup',)
    assert not check.passed and check.failures == ('green_bowl: not seen',)


def test_an_override_is_explicit_and_recorded() -> None:
    layout, positions = _truth(3, 'default')
    measured = {n: (x, y, 0.0) for n, (x, y) in positions.items()}
    x, y, _ = measured['red_bar_2']
    measured['red_bar_2'] = (x + 0.03, y, 0.0)
    check = check_layout(layout, measured, positions=positions, override='bar glued 3 cm right on this cell')
    assert not check.passed and check.accepted
    record = check.to_dict()
    assert record['override'] == 'bar glued 3 cm right on this cell'
    assert record['passed'] is False and record['accepted'] is True
    assert record['tolerances'] == {'position_mm': 8.0, 'rotation_deg': 10.0}
    assert 'overridden: bar glued' in check.summary()
    with pytest.raises(LayoutError, match='needs a reason'):
        check_layout(layout, measured, positions=positions, override='  ')


def test_tolerances_and_poses_are_checked() -> None:
    layout, positions = _truth(1, 'default')
    with pytest.raises(LayoutError, match='position_mm'):
        Tolerances(position_mm=0.0)
    measured = {n: (x, y, 0.0) for n, (x, y) in positions.items()}
    measured['red_sphere'] = (0.1, float('nan'), 0.0)
    with pytest.raises(LayoutError, match='red_sphere'):
        check_layout(layout, measured)
    tight = check_layout(
        layout,
        _noisy(positions, np.random.default_rng(3)),
        positions=positions,
        tolerances=Tolerances(position_mm=0.1, rotation_deg=0.1),
    )
    assert not tight.passed
