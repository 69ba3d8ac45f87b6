"""Marker configuration (``config/markers/<name>.yaml``): which ArUco tag each object carries, how big, how it is
mounted, and the table board's tags that fix the world frame.

Mounting: ``top`` is a tag printed on the object's flat top face (boxes, upright cylinders, Scene 3's labels);
``plate`` is a tag on a thin plate fixed to an object without a flat top: on top of a sphere (raising the tag
``height`` above the table) or a tab at a bowl's foot (``offset`` from the bowl's centre, so the bowl stays open).
``height`` is the tag's height above the surface the object stands on (the table when it rests on it); ``offset``
is the tag centre in the object's frame (x, y in metres, turning with the object's yaw).

Marker-frame convention: seen from above, the tag's image x points along the object's +x and the image's up along
its +y; OpenCV's corner order (top-left, top-right, bottom-right, bottom-left) is then (-s/2, s/2), (s/2, s/2),
(s/2, -s/2), (-s/2, -s/2) in the tag's frame, s the black square's side (``size``, without the white border).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from robofollow_ros.benchmark.types import TABLE_Z, ObjectSpec
from robofollow_ros.errors import MarkerConfigError, RoboFollowError
from robofollow_ros.fields import FieldReader
from robofollow_ros.resources import share_candidates, share_file
from robofollow_ros.textfiles import read_yaml

MARKER_FOLDER = 'config/markers'
DICTIONARY = 'DICT_4X4_50'
DICTIONARY_SIZE = 50
# A 4x4 tag is 6 modules wide with its black border; the white quiet zone adds one module each side.
MODULES = 6
QUIET_MODULES = 1
Mount = Literal['top', 'plate']
MOUNTS: tuple[Mount, ...] = ('top', 'plate')
SCENES = (1, 2, 3, 4)


def corners_local(size: float) -> np.ndarray:
    """The tag's four corners (4, 2) in its own frame, in OpenCV's detection order."""
    h = size / 2.0
    return np.array([[-h, h], [h, h], [h, -h], [-h, -h]])


def tag_image(tag_id: int, *, pixels_per_module: int) -> np.ndarray:
    """The printed tag ``tag_id`` (grey uint8, square): the 6x6-module DICT_4X4_50 pattern with its white quiet zone,
    ``pixels_per_module`` pixels per module; row 0 is the tag's top (its +y side, see the module docstring)."""
    import cv2

    dictionary = cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50)
    inner = cv2.aruco.generateImageMarker(dictionary, tag_id, MODULES * pixels_per_module, borderBits=1)
    pad = QUIET_MODULES * pixels_per_module
    return np.asarray(cv2.copyMakeBorder(inner, pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=255))


def printed_side(size: float) -> float:
    """The side of a printed tag with its white quiet zone (what must fit on a face)."""
    return size * (MODULES + 2 * QUIET_MODULES) / MODULES


@dataclass(frozen=True)
class ObjectMarker:
    """The tag one object carries."""

    scene: int
    name: str
    id: int
    size: float
    mount: Mount
    height: float
    offset: tuple[float, float] = (0.0, 0.0)


@dataclass(frozen=True)
class BoardTag:
    """A tag lying flat on the table at a known place (the calibration board)."""

    id: int
    size: float
    x: float
    y: float
    yaw: float

    def corners_world(self) -> np.ndarray:
        """The tag's corners (4, 3) in the world, OpenCV's order, on the table top."""
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        local = corners_local(self.size) @ np.array([[c, s], [-s, c]])
        return np.column_stack([local + np.array([self.x, self.y]), np.full(4, TABLE_Z)])


@dataclass(frozen=True)
class MarkerConfig:
    """A checked marker configuration."""

    path: Path
    board: tuple[BoardTag, ...]
    objects: Mapping[int, Mapping[str, ObjectMarker]]

    def scene(self, scene: int) -> Mapping[str, ObjectMarker]:
        """The markers of one scene's objects by object name."""
        return self.objects.get(scene, {})


def marker_path(name: str) -> Path:
    """The shipped configuration ``name`` (``config/markers/<name>.yaml``), or ``name`` itself when it is a path."""
    if name.endswith(('.yaml', '.yml')):
        return Path(name)
    try:
        return share_file(f'{MARKER_FOLDER}/{name}.yaml')
    except RoboFollowError:
        known: tuple[str, ...] = ()
        for candidate in share_candidates():
            if (candidate / MARKER_FOLDER).is_dir():
                known = tuple(sorted(p.stem for p in (candidate / MARKER_FOLDER).glob('*.yaml')))
                break
        raise MarkerConfigError(
            f'unknown marker configuration {name!r}; choose one of {", ".join(known) or "(none installed)"} '
            'or give a path to a .yaml file'
        ) from None


def load_markers(name: str = 'default') -> MarkerConfig:
    """Load and check a marker configuration by name or path.

    Raises:
        MarkerConfigError: unreadable file, bad YAML, or a field missing, unknown, of the wrong kind, out of range or
            a tag id used twice; one line naming the file and the field.
    """
    path = marker_path(name)
    data = read_yaml(path, what='marker configuration', error=MarkerConfigError)
    return parse_markers(data, path=path)


def parse_markers(data: object, *, path: Path) -> MarkerConfig:
    """Check an already parsed configuration (see ``load_markers``); ``path`` names it in errors."""
    reader = _MarkerReader(path)
    top = reader.mapping(data, '', required=('dictionary', 'board', 'objects'))
    if top['dictionary'] != DICTIONARY:
        reader.fail('dictionary', f'must be {DICTIONARY} (the only dictionary supported), got {top["dictionary"]!r}')
    board_data = top['board']
    if not isinstance(board_data, list) or not board_data:
        reader.fail('board', 'must be a non-empty list of tags')
    board = tuple(reader.board_tag(entry, f'board[{index}]') for index, entry in enumerate(board_data))
    objects_data = reader.mapping(top['objects'], 'objects', required=(), optional=tuple(f'scene{n}' for n in SCENES))
    objects: dict[int, dict[str, ObjectMarker]] = {}
    for key, scene_data in objects_data.items():
        scene = int(key.removeprefix('scene'))
        if not isinstance(scene_data, dict) or not scene_data:
            reader.fail(f'objects.{key}', 'must be a non-empty mapping of object name to marker')
        objects[scene] = {
            str(name): reader.object_marker(entry, f'objects.{key}.{name}', scene=scene, name=str(name))
            for name, entry in scene_data.items()
        }
    return MarkerConfig(path=path, board=board, objects=objects)


class _MarkerReader(FieldReader):
    """A marker configuration's fields; tag ids are unique across the board and every scene."""

    def __init__(self, path: Path) -> None:
        super().__init__('marker configuration', path, error=MarkerConfigError)
        self.used: dict[int, str] = {}

    def tag_id(self, value: object, field: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(field, f'must be an integer tag id, got {value!r}')
        if not 0 <= value < DICTIONARY_SIZE:
            self.fail(field, f'{value} is not a {DICTIONARY} id (0..{DICTIONARY_SIZE - 1})')
        if value in self.used:
            self.fail(field, f'tag id {value} is already used by {self.used[value]}')
        self.used[value] = field
        return value

    def board_tag(self, entry: object, field: str) -> BoardTag:
        tag = self.mapping(entry, field, required=('id', 'size', 'x', 'y', 'yaw'))
        return BoardTag(
            id=self.tag_id(tag['id'], f'{field}.id'),
            size=self.number(tag['size'], f'{field}.size', low=0.0, high=0.5, low_open=True),
            x=self.number(tag['x'], f'{field}.x', low=-2.0, high=2.0),
            y=self.number(tag['y'], f'{field}.y', low=-2.0, high=2.0),
            yaw=math.radians(self.number(tag['yaw'], f'{field}.yaw', low=-180.0, high=180.0)),
        )

    def object_marker(self, entry: object, field: str, *, scene: int, name: str) -> ObjectMarker:
        item = self.mapping(entry, field, required=('id', 'size', 'mount', 'height'), optional=('offset',))
        mount: Mount = 'top' if self.choice(item['mount'], f'{field}.mount', MOUNTS) == 'top' else 'plate'
        offset_data = item.get('offset', [0.0, 0.0])
        if not isinstance(offset_data, list) or len(offset_data) != 2:
            self.fail(f'{field}.offset', f'must be two numbers [x, y], got {offset_data!r}')
        x, y = (self.number(v, f'{field}.offset[{i}]', low=-0.5, high=0.5) for i, v in enumerate(offset_data))
        return ObjectMarker(
            scene=scene,
            name=name,
            id=self.tag_id(item['id'], f'{field}.id'),
            size=self.number(item['size'], f'{field}.size', low=0.0, high=0.2, low_open=True),
            mount=mount,
            height=self.number(item['height'], f'{field}.height', low=0.0, high=0.5),
            offset=(x, y),
        )


def top_height(spec: ObjectSpec) -> float:
    """The height of an object's top face above what it stands on."""
    return 2.0 * spec.half_height if spec.shape != 'bowl' else spec.size[1]


def registry_problems(config: MarkerConfig, layouts: Mapping[int, tuple[Mapping[str, ObjectSpec], ...]]) -> list[str]:
    """What is wrong between a configuration and the benchmark's layouts (empty when nothing is): an object of a
    layout without a marker, a ``top`` tag on an object without a flat top, at the wrong height or wider than the
    face, a marker for an object no layout has.

    ``layouts`` maps each scene to its layouts' objects (name -> spec); see ``registry_layouts``.
    """
    problems: list[str] = []
    for scene, scene_layouts in layouts.items():
        markers = config.scene(scene)
        seen: set[str] = set()
        for objects in scene_layouts:
            for name, spec in objects.items():
                if name in seen:
                    continue
                seen.add(name)
                marker = markers.get(name)
                if marker is None:
                    problems.append(f'scene {scene}: {name} has no marker')
                    continue
                if marker.mount == 'top':
                    problems.extend(_top_face_problems(scene, name, spec, marker))
        problems.extend(f'scene {scene}: {name} has a marker but no layout has it' for name in set(markers) - seen)
    return problems


def _top_face_problems(scene: int, name: str, spec: ObjectSpec, marker: ObjectMarker) -> list[str]:
    where = f'scene {scene}: {name}'
    if spec.shape in ('sphere', 'bowl'):
        return [f'{where}: a {spec.shape} has no flat top; mount its tag on a plate']
    problems = []
    if abs(marker.height - top_height(spec)) > 1e-3:
        problems.append(f'{where}: top tag height {marker.height} is not the top face {top_height(spec):.4f}')
    side = printed_side(marker.size)
    if spec.shape == 'cylinder':
        fits = side * math.sqrt(2.0) <= 2.0 * spec.size[0] + 1e-9
    else:
        fits = side <= 2.0 * min(spec.size[0], spec.size[1]) + 1e-9
    if not fits or marker.offset != (0.0, 0.0):
        problems.append(f'{where}: a {marker.size} m tag (printed {side:.4f} m) does not fit on its top face')
    return problems


def registry_layouts() -> dict[int, tuple[dict[str, ObjectSpec], ...]]:
    """Every layout's objects of every scene, from the benchmark registry."""
    from robofollow_ros.benchmark import registry

    return {
        scene: tuple(
            {p.name: p.spec for p in registry.get_layout(scene, name).placements}
            for name in registry.layout_names(scene)
        )
        for scene in SCENES
    }
