"""Generate ``urdf/aloha_cell.urdf``: two ViperX 300 6DoF arms (the ALOHA robot) on the robofollow table.

The arms' kinematics, inertias and mesh placements are read from gym-aloha 0.1.5's MJCF, kept unchanged with its
meshes and license in ``meshes/vx300s/`` (``vx300s_left.xml``); meshes are referenced as
``package://robofollow/meshes/vx300s/<file>.stl`` (installed as ``share/robofollow/meshes/vx300s/``) and resolved
when the simulator loads the file (``robofollow_ros.robot.assets``); run with ``--resolve OUT`` to write a copy with
absolute ``file://`` mesh paths for tools without the ament index. Run ``python tools/make_aloha_urdf.py`` after
changing a constant below and commit both files (a test fails when they differ).

Changes against the MJCF, on purpose: each finger's slide joint is re-zeroed at its closed stop (0.021 m) so that
both fingers move 0 (closed) .. 0.036 m (open) along their own axis, like the primitive cell's fingers; the right
finger mimics the left one in the URDF. Velocity limits and efforts are the Dynamixel servos' (XM540-W270 on joints
1-5, two of them on the shoulder and the elbow; XM430-W350 on the wrist rotation and the gripper). The table,
``cam_high_link`` and the frame conventions are those of ``tools/make_cell_urdf.py``.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np
from make_cell_urdf import UrdfBuilder, Vec3, add_head_camera, document, table_cell, write_or_check
from transforms3d.euler import euler2mat, mat2euler
from transforms3d.quaternions import quat2mat

from robofollow_ros.robot.assets import VX300S_URI

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / 'urdf' / 'aloha_cell.urdf'
ASSETS = ROOT / 'meshes' / 'vx300s'
"""gym-aloha 0.1.5's ViperX MJCF and meshes, unchanged (see its README.md)."""
MESH_URI = VX300S_URI

BASE_XY = {'left': (-0.25, -0.35), 'right': (0.25, -0.35)}
"""Both bases on the near edge facing +y (docs/cell.md §0: every layout position reachable with margin)."""
JOINTS = ('waist', 'shoulder', 'elbow', 'forearm_roll', 'wrist_angle', 'wrist_rotate')
VELOCITY = math.pi
"""rad/s: the Interbotix ViperX 300 6DoF limit for every arm joint."""
EFFORT = (10.6, 21.2, 21.2, 10.6, 10.6, 4.1)
"""N m: stall torques of XM540-W270 (x2 on the shoulder and the elbow) and XM430-W350 (wrist rotation)."""
FINGER_CLOSED = 0.021
FINGER_OPEN = 0.057
FINGER_VELOCITY = 0.2
FINGER_EFFORT = 15.0
TCP_X = 0.1287
"""TCP along the gripper link's +x: between the finger pads, 0.025 m behind the fingertips (as in the primitive
cell), measured from the finger meshes' convex hulls (test/test_sim_urdf.py checks it)."""
WRIST_CAMERA_XYZ = (0.0, 0.0, 0.12)
WRIST_CAMERA_PITCH = 0.45
"""Wrist cameras sit on top of the gripper (its +z side) and look forward-down at the fingers, as on an ALOHA."""
HEAD_CAMERA_XYZ = (0.0, -0.36, 1.32)
HEAD_CAMERA_TARGET = (0.0, 0.0, 0.74)

SKIPPED_BODIES = ('camera_focus',)


def _rotation(element: ET.Element) -> np.ndarray:
    if element.get('quat'):
        return quat2mat([float(v) for v in element.get('quat', '').split()])
    if element.get('euler'):
        return euler2mat(*(float(v) for v in element.get('euler', '').split()), axes='rxyz')
    return np.eye(3)


def _origin(element: ET.Element) -> tuple[Vec3, Vec3]:
    xyz = tuple(float(v) for v in element.get('pos', '0 0 0').split())
    rpy = tuple(float(v) for v in mat2euler(_rotation(element), axes='sxyz'))
    return xyz, rpy  # type: ignore[return-value]


def _local(name: str) -> str:
    return name.split('/', 1)[1] if '/' in name else 'base_link'


def _meshes(assets: Path) -> dict[str, tuple[str, str]]:
    root = ET.parse(assets / 'vx300s_dependencies.xml').getroot()
    return {m.get('name', ''): (m.get('file', ''), m.get('scale', '1 1 1')) for m in root.iter('mesh')}


def _shapes(body: ET.Element, meshes: dict[str, tuple[str, str]], material: str) -> tuple:
    shapes = []
    for geom in body.findall('geom'):
        file, scale = meshes[geom.get('mesh', '')]
        xyz, rpy = _origin(geom)
        shapes.append(('mesh', {'filename': MESH_URI + file, 'scale': scale}, xyz, rpy, material))
    return tuple(shapes)


def _inertial(body: ET.Element) -> dict:
    inertial = body.find('inertial')
    if inertial is None:
        return {}
    rot = _rotation(inertial)
    inertia = rot @ np.diag([float(v) for v in inertial.get('diaginertia', '').split()]) @ rot.T
    return {
        'mass': float(inertial.get('mass', '0')),
        'com': tuple(float(v) for v in inertial.get('pos', '').split()),
        'full_inertia': inertia,
    }


def add_arm(b: UrdfBuilder, side: str, arm: ET.Element, meshes: dict[str, tuple[str, str]]) -> None:
    p = f'{side}_'

    def visit(body: ET.Element, parent: str | None) -> None:
        local = _local(body.get('name', ''))
        if local in SKIPPED_BODIES:
            return
        link = p + local
        material = 'finger' if 'finger' in local else 'viperx'
        b.link(link, shapes=_shapes(body, meshes, material), **_inertial(body))
        joint = body.find('joint')
        if parent is None:
            x, y = BASE_XY[side]
            b.joint(f'{p}base_joint', 'fixed', 'table', link, xyz=(x, y, 0.0), rpy=(0.0, 0.0, math.pi / 2.0))
        elif joint is None:
            xyz, rpy = _origin(body)
            b.joint(f'{link}_joint', 'fixed', parent, link, xyz=xyz, rpy=rpy)
        elif joint.get('type') == 'slide':
            low, high = (float(v) for v in joint.get('range', '').split())
            sign = 1.0 if low > 0.0 else -1.0
            axis = sign * np.array([float(v) for v in joint.get('axis', '').split()])
            xyz = np.array([float(v) for v in body.get('pos', '').split()]) + FINGER_CLOSED * axis
            finger = _local(joint.get('name', ''))
            b.joint(
                f'{p}{finger}',
                'prismatic',
                parent,
                link,
                xyz=tuple(xyz),
                axis=tuple(axis),
                limit=(0.0, FINGER_OPEN - FINGER_CLOSED, FINGER_VELOCITY, FINGER_EFFORT),
                mimic=f'{p}left_finger' if finger == 'right_finger' else None,
            )
        else:
            name = _local(joint.get('name', ''))
            low, high = (float(v) for v in joint.get('range', '').split())
            xyz, rpy = _origin(body)
            b.joint(
                f'{p}{name}',
                'revolute',
                parent,
                link,
                xyz=xyz,
                rpy=rpy,
                axis=tuple(float(v) for v in joint.get('axis', '').split()),
                limit=(low, high, VELOCITY, EFFORT[JOINTS.index(name)]),
            )
        for child in body.findall('body'):
            visit(child, link)

    visit(arm, None)
    b.link(f'{p}tcp')
    b.joint(f'{p}tcp_joint', 'fixed', f'{p}gripper_link', f'{p}tcp', xyz=(TCP_X, 0.0, 0.0))
    b.link(f'{p}wrist_camera_link')
    b.joint(
        f'{p}wrist_camera_joint',
        'fixed',
        f'{p}gripper_link',
        f'{p}wrist_camera_link',
        xyz=WRIST_CAMERA_XYZ,
        rpy=(0.0, WRIST_CAMERA_PITCH, 0.0),
    )


def build(assets: Path) -> ET.Element:
    """Return the ``<robot>`` element of the ALOHA cell from the ViperX MJCF in ``assets``."""
    arm = ET.parse(assets / 'vx300s_left.xml').getroot().find('body')
    if arm is None:
        raise SystemExit(f'{assets / "vx300s_left.xml"} has no arm body')
    meshes = _meshes(assets)
    b = table_cell('aloha_cell', {'viperx': (0.13, 0.13, 0.14, 1.0), 'finger': (0.30, 0.30, 0.32, 1.0)})
    add_arm(b, 'left', arm, meshes)
    add_arm(b, 'right', arm, meshes)
    add_head_camera(b, HEAD_CAMERA_XYZ, HEAD_CAMERA_TARGET)
    return b.robot


def render(assets: Path) -> str:
    """The URDF document as text."""
    return document(build(assets), 'make_aloha_urdf.py')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', type=Path, default=OUT, help='output path (default: urdf/aloha_cell.urdf)')
    parser.add_argument('--check', action='store_true', help='exit 1 if the file on disk differs from the generated')
    parser.add_argument(
        '--resolve',
        type=Path,
        default=None,
        help='write a copy with file:// mesh paths of meshes/vx300s here',
    )
    args = parser.parse_args()
    assets = ASSETS
    text = render(assets)
    if args.resolve is not None and not args.check:
        return write_or_check(text.replace(MESH_URI, f'file://{assets}/'), args.resolve, check=False)
    return write_or_check(text, args.out, check=args.check)


if __name__ == '__main__':
    raise SystemExit(main())
