"""The cell URDFs (every robot): load with yourdfpy, declare limits, match their generators, meshes resolve, and
the arms reach every layout."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yourdfpy

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.scene4 import SLOTS
from robofollow_ros.benchmark.types import ARMS, TABLE_Z
from robofollow_ros.resources import share_file
from robofollow_ros.robot.assets import PIPER_LICENSE
from robofollow_ros.robot.description import load_robot
from robofollow_ros.robot.specs import get_robot_spec, robot_names
from robofollow_ros.sim.constants import OPERATION_AREA
from robofollow_ros.sim.kinematics import Kinematics
from robofollow_ros.sim.model import CellModel
from robofollow_ros.sim.motion import MotionPlanner

pytestmark = pytest.mark.sim
ROOT = Path(__file__).resolve().parents[1]


GENERATORS = {'primitive': 'make_cell_urdf.py', 'aloha': 'make_aloha_urdf.py', 'piper': 'make_piper_urdf.py'}


@pytest.fixture(scope='module', params=robot_names())
def robot(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope='module')
def urdf(robot: str, tmp_path_factory: pytest.TempPathFactory) -> yourdfpy.URDF:
    path = tmp_path_factory.mktemp(robot) / 'cell.urdf'
    path.write_text(get_robot_spec(robot).urdf_text())
    return yourdfpy.URDF.load(str(path), load_meshes=False)


@pytest.fixture(scope='module')
def kinematics(robot: str) -> Kinematics:
    return Kinematics(CellModel.build([], robot=load_robot(robot)))


def test_yourdfpy_loads_fourteen_actuated_joints(urdf: yourdfpy.URDF, robot: str) -> None:
    spec = get_robot_spec(robot)
    expected = [f'{arm}_{joint}' for arm in ARMS for joint in spec.joints]
    expected += [f'{arm}_{spec.fingers[0]}' for arm in ARMS]
    assert sorted(urdf.actuated_joint_names) == sorted(expected)
    for arm in ARMS:
        assert urdf.joint_map[f'{arm}_{spec.fingers[1]}'].mimic.joint == f'{arm}_{spec.fingers[0]}'
    assert 'world' in urdf.link_map and 'table' in urdf.link_map
    assert {'cam_high_link', 'left_wrist_camera_link', 'right_wrist_camera_link', 'left_tcp', 'right_tcp'} <= set(
        urdf.link_map
    )


def test_every_mesh_resolves_to_an_installed_file(urdf: yourdfpy.URDF, robot: str) -> None:
    meshes = [
        geometry.mesh.filename
        for link in urdf.link_map.values()
        for element in (*link.visuals, *link.collisions)
        if (geometry := element.geometry).mesh is not None
    ]
    assert bool(meshes) == bool(get_robot_spec(robot).mesh_packages)
    for filename in meshes:
        assert Path(filename).is_file(), filename


def test_every_moving_joint_has_position_velocity_and_effort_limits(urdf: yourdfpy.URDF) -> None:
    moving = [j for j in urdf.joint_map.values() if j.type in ('revolute', 'prismatic')]
    assert len(moving) == 16
    for joint in moving:
        assert joint.limit is not None, joint.name
        assert joint.limit.lower < joint.limit.upper, joint.name
        assert joint.limit.velocity > 0 and joint.limit.effort > 0, joint.name


def test_every_moving_link_has_positive_mass_and_inertia(urdf: yourdfpy.URDF) -> None:
    children = {j.child for j in urdf.joint_map.values() if j.type in ('revolute', 'prismatic')}
    for name in children:
        inertial = urdf.link_map[name].inertial
        assert inertial is not None and inertial.mass > 0, name
        assert np.all(np.linalg.eigvalsh(inertial.inertia) > 0), name


def test_open_gripper_clears_the_largest_object(kinematics: Kinematics) -> None:
    planner = MotionPlanner(kinematics)
    largest = max(
        2.0 * min(p.spec.size[0], p.spec.size[1]) if p.spec.shape == 'box' else 2.0 * p.spec.size[0]
        for scene in (1, 2, 3, 4)
        for name in registry.layout_names(scene)
        for p in registry.get_layout(scene, name).placements
        if p.spec.shape != 'label' and p.spec.shape != 'bowl'
    )
    for arm in ARMS:
        assert planner.pad_gap(arm, 1.0) >= largest + 0.008
        assert planner.pad_gap(arm, 0.0) <= 1e-9, 'closed pads touch'


def test_committed_urdf_matches_its_generator(robot: str) -> None:
    tool = ROOT / 'tools' / GENERATORS[robot]
    result = subprocess.run([sys.executable, str(tool), '--check'], check=False)
    assert result.returncode == 0, f'{get_robot_spec(robot).urdf.name} is stale: run tools/{tool.name}'


def test_table_top_is_at_protocol_height(urdf: yourdfpy.URDF) -> None:
    urdf.update_cfg(np.zeros(len(urdf.actuated_joint_names)))
    table = urdf.get_transform('table', 'world')
    assert table[2, 3] == pytest.approx(TABLE_Z)


def test_home_tcp_is_top_down_and_outside_the_operation_area(kinematics: Kinematics) -> None:
    (x0, x1), (y0, y1), (z0, z1) = OPERATION_AREA
    for arm in ARMS:
        pos, rot = kinematics.fk_matrix(arm, kinematics.home(arm))
        inside = x0 <= pos[0] <= x1 and y0 <= pos[1] <= y1 and z0 <= pos[2] <= z1
        assert not inside, (arm, pos)
        assert rot[:, 0] == pytest.approx([0.0, 0.0, -1.0], abs=1e-3)


def _nominal_targets() -> list[tuple[str, float, float, float]]:
    """(label, x, y, object-centre z) of every nominal item position of every layout, the S4 slots, and the S1
    relative-placement targets of the published expert (protocol §8.1)."""
    targets = []
    for scene in (1, 2, 3, 4):
        for name in registry.layout_names(scene):
            layout = registry.get_layout(scene, name)
            for placement in layout.placements:
                x, y = placement.xy
                spec = placement.spec
                z = TABLE_Z + 2.0 * spec.half_height if placement.on else TABLE_Z + spec.half_height
                targets.append((f'{name}/{placement.name}', x, y, z))
    targets += [(f'slot{slot}', x, y, TABLE_Z + 0.024) for slot, (x, y) in SLOTS.items()]
    block = TABLE_Z + 0.02
    for name in registry.layout_names(1):
        for placement in registry.get_layout(1, name).placements:
            if placement.name.startswith('yellow_block'):
                continue
            x, y = placement.xy
            reach = placement.spec.size[0] + 0.02
            targets += [
                (f'{name}/right of {placement.name}', x + reach + 0.06, y, block),
                (f'{name}/left of {placement.name}', x - reach - 0.04, y, block),
                (f'{name}/behind {placement.name}', x, y + 0.06, block),
                (f'{name}/in front of {placement.name}', x, y - 0.05, block),
            ]
    return targets


@pytest.mark.parametrize('arm', ARMS)
def test_both_arms_reach_every_nominal_position_from_above(kinematics: Kinematics, arm: str) -> None:
    planner = MotionPlanner(kinematics)
    failures = []
    for label, x, y, z in _nominal_targets():
        for dx, dy in ((0.0, 0.0), (0.015, 0.015), (-0.015, -0.015)):
            for height in (planner.grasp_height(z), planner.grasp_height(z) + 0.10):
                for yaw in (0.0, math.pi / 2.0):
                    solution = kinematics.solve(arm, [x + dx, y + dy, height], yaw=yaw)
                    if not solution.success:
                        failures.append((label, dx, dy, round(height, 3), yaw))
    assert not failures, failures[:10]


def test_the_piper_kinematics_licence_and_provenance_ship_beside_the_piper_urdf() -> None:
    licence = share_file(PIPER_LICENSE)
    assert licence.read_text(encoding='utf-8').startswith('MIT License\n\nCopyright (c) 2024 RosenYin')
    provenance = licence.with_name('README.md').read_text(encoding='utf-8')
    assert 'ac41fcbcdda598f01b51cf6175ed9a24d0dacadc' in provenance  # the piper_ros commit
    assert '555f61b6d6ec6950d87269798b3f34552387fcf8c31234660827f5c6743a9c66' in provenance  # the file's sha256
    assert licence.parent.parent == get_robot_spec('piper').urdf.parent


@pytest.mark.parametrize(('attribute', 'value'), [('velocity', None), ('upper', 'wide')])
def test_a_urdf_limit_that_is_not_a_number_is_a_clear_simulation_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attribute: str, value: str | None
) -> None:
    import dataclasses
    import xml.etree.ElementTree as ET

    from robofollow_ros.errors import SimulationError
    from robofollow_ros.robot import description

    spec = get_robot_spec('primitive')
    tree = ET.parse(spec.urdf)
    joint = next(j for j in tree.getroot().iter('joint') if j.get('name') == 'left_joint2')
    limit = joint.find('limit')
    assert limit is not None
    if value is None:
        del limit.attrib[attribute]
    else:
        limit.set(attribute, value)
    broken = tmp_path / 'broken.urdf'
    tree.write(broken)
    monkeypatch.setattr(description, 'get_robot_spec', lambda name: dataclasses.replace(spec, urdf=broken))
    with pytest.raises(SimulationError, match=rf"URDF joint 'left_joint2': <limit {attribute}=.*> is not a number"):
        description.load_robot.__wrapped__('broken')
