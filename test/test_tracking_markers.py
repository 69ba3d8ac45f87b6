"""Marker configuration (config/markers/*.yaml): the shipped one gives every object of every layout of the four
scenes a tag that fits where it is mounted, and a wrong configuration is refused in one line naming the field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from robofollow_ros.benchmark import registry
from robofollow_ros.errors import MarkerConfigError
from robofollow_ros.tracking.markers import (
    load_markers,
    marker_path,
    parse_markers,
    registry_layouts,
    registry_problems,
)

SHIPPED = marker_path('default')


def shipped() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load(SHIPPED.read_text()))


def test_every_object_of_every_layout_has_a_fitting_marker() -> None:
    config = load_markers('default')
    assert registry_problems(config, registry_layouts()) == []
    for scene in (1, 2, 3, 4):
        for layout in registry.layout_names(scene):
            for placement in registry.get_layout(scene, layout).placements:
                marker = config.scene(scene)[placement.name]
                if placement.spec.shape in ('sphere', 'bowl'):
                    assert marker.mount == 'plate', placement.name
    ids = [m.id for scene in config.objects.values() for m in scene.values()] + [t.id for t in config.board]
    assert len(ids) == len(set(ids))
    assert len(config.board) >= 3


def test_registry_check_names_what_is_wrong() -> None:
    data = shipped()
    del data['objects']['scene4']['blue_sphere']
    data['objects']['scene1']['red_sphere']['mount'] = 'top'
    data['objects']['scene1']['yellow_block_1']['size'] = 0.04
    data['objects']['scene3']['red_bar_2']['height'] = 0.03
    data['objects']['scene2']['ghost'] = {'id': 49, 'size': 0.02, 'mount': 'top', 'height': 0.01}
    problems = registry_problems(parse_markers(data, path=Path('x.yaml')), registry_layouts())
    assert sorted(problems) == sorted(
        [
            'scene 4: blue_sphere has no marker',
            'scene 1: red_sphere: a sphere has no flat top; mount its tag on a plate',
            'scene 1: yellow_block_1: a 0.04 m tag (printed 0.0533 m) does not fit on its top face',
            'scene 3: red_bar_2: top tag height 0.03 is not the top face 0.0260',
            'scene 2: ghost has a marker but no layout has it',
        ]
    )


def _set(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        data = data[key]
    if value is KeyError:
        del data[path[-1]]
    else:
        data[path[-1]] = value


@pytest.mark.parametrize(
    ('path', 'value', 'message'),
    [
        (('objects', 'scene1', 'red_sphere', 'id'), 0, 'objects.scene1.red_sphere.id: tag id 0 is already used by'),
        (('objects', 'scene1', 'red_sphere', 'id'), 50, 'objects.scene1.red_sphere.id: 50 is not a DICT_4X4_50 id'),
        (('objects', 'scene1', 'red_sphere', 'size'), KeyError, 'objects.scene1.red_sphere.size: is missing'),
        (('objects', 'scene1', 'red_sphere', 'size'), 0.0, 'objects.scene1.red_sphere.size: 0.0 is out of range'),
        (('objects', 'scene1', 'red_sphere', 'mount'), 'glue', 'objects.scene1.red_sphere.mount: must be one of top'),
        (('objects', 'scene1', 'red_sphere', 'heigth'), 0.04, 'objects.scene1.red_sphere.heigth: is not a field'),
        (('objects', 'scene2', 'green_bowl', 'offset'), [0.1], 'objects.scene2.green_bowl.offset: must be two'),
        (('objects', 'scene5'), {}, 'objects.scene5: is not a field here'),
        (('board', 0, 'size'), 'big', 'board[0].size: must be a finite number'),
        (('board', 1, 'id'), 40, 'board[1].id: tag id 40 is already used by board[0].id'),
        (('dictionary',), 'DICT_6X6_250', 'dictionary: must be DICT_4X4_50'),
    ],
)
def test_a_wrong_field_is_named_in_one_line(path: tuple[Any, ...], value: Any, message: str) -> None:
    data = shipped()
    _set(data, path, value)
    with pytest.raises(MarkerConfigError) as caught:
        parse_markers(data, path=Path('mine.yaml'))
    text = str(caught.value)
    assert '\n' not in text
    assert text.startswith('marker configuration mine.yaml: ')
    assert message in text


def test_unreadable_or_unknown_configuration(tmp_path: Path) -> None:
    bad = tmp_path / 'bad.yaml'
    bad.write_text('board: [\n')
    with pytest.raises(MarkerConfigError, match=r'bad.yaml: not valid YAML \(.* at line 2, column 1\)'):
        load_markers(str(bad))
    with pytest.raises(MarkerConfigError, match="unknown marker configuration 'nope'; choose one of default"):
        load_markers('nope')
