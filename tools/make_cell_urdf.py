"""Generate ``urdf/robofollow_cell.urdf``: the robofollow dual-arm cell built from primitives.

Run ``python tools/make_cell_urdf.py`` after changing a constant below and commit both files. The URDF is
standard (box / cylinder / sphere geometry, revolute and prismatic joints, one mimic finger per gripper) so that
robot_state_publisher can use it; MuJoCo-specific settings are added by ``robofollow_ros.sim.model`` via MjSpec.

Frames: ``world`` is the protocol frame (table top z = 0.74, +x robot's right, +y away from the robot, +z up).
Each arm base is yawed by +90 degrees so that the arm's own +x (its zero-pose reach direction) points along
world +y. Per arm: waist yaw (joint1), shoulder pitch (joint2), elbow pitch (joint3), forearm roll (joint4),
wrist pitch (joint5), wrist roll (joint6), two prismatic fingers sliding along the gripper's local y axis.
The ``<arm>_tcp`` frame lies between the finger pads; its +x axis points from the wrist toward the fingertips.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree as ET

OUT = Path(__file__).resolve().parents[1] / 'urdf' / 'robofollow_cell.urdf'

TABLE_TOP_Z = 0.74
TABLE_THICKNESS = 0.04
TABLE_X = (-0.60, 0.60)
TABLE_Y = (-0.62, 0.32)
TABLE_LEG_RADIUS = 0.025

BASE_XY = {'left': (-0.28, -0.44), 'right': (0.28, -0.44)}
BASE_HEIGHT = 0.05
WAIST_HEIGHT = 0.07
UPPER_ARM = 0.35
FOREARM_TO_ROLL = 0.15
ROLL_TO_WRIST = 0.20
WRIST_TO_FLANGE = 0.06
PALM_LENGTH = 0.04
FINGER_LENGTH = 0.05
FINGER_THICKNESS = 0.01
FINGER_WIDTH = 0.02
FINGER_TRAVEL = 0.045
TCP_X = PALM_LENGTH + FINGER_LENGTH / 2.0

HEAD_CAMERA_XYZ = (0.0, -0.62, 1.26)
HEAD_CAMERA_TARGET = (0.0, -0.08, 0.74)
WRIST_CAMERA_XYZ = (0.0, 0.0, -0.065)
WRIST_CAMERA_PITCH = 0.55


@dataclass(frozen=True)
class JointSpec:
    """One revolute arm joint: axis in the parent link frame, limits (rad), velocity (rad/s), effort (N m)."""

    name: str
    xyz: tuple[float, float, float]
    axis: tuple[float, float, float]
    lower: float
    upper: float
    velocity: float
    effort: float


ARM_JOINTS = (
    JointSpec('joint1', (0.0, 0.0, BASE_HEIGHT), (0, 0, 1), -2.9, 2.9, 2.0, 40.0),
    JointSpec('joint2', (0.0, 0.0, WAIST_HEIGHT), (0, 1, 0), -1.9, 1.9, 2.0, 60.0),
    JointSpec('joint3', (0.0, 0.0, UPPER_ARM), (0, 1, 0), -1.9, 2.5, 2.0, 40.0),
    JointSpec('joint4', (FOREARM_TO_ROLL, 0.0, 0.0), (1, 0, 0), -3.0, 3.0, 3.0, 10.0),
    JointSpec('joint5', (ROLL_TO_WRIST, 0.0, 0.0), (0, 1, 0), -1.9, 2.3, 3.0, 10.0),
    JointSpec('joint6', (WRIST_TO_FLANGE, 0.0, 0.0), (1, 0, 0), -3.1, 3.1, 3.0, 6.0),
)
FINGER_VELOCITY = 0.25
FINGER_EFFORT = 15.0


def fmt(values: tuple[float, ...] | list[float]) -> str:
    """Space-separated numbers with enough digits for millimetre geometry and inertias."""
    return ' '.join(f'{v:.9g}' for v in values)


def box_inertia(mass: float, size: tuple[float, float, float]) -> tuple[float, float, float]:
    """Principal inertias of a solid box with full edge lengths ``size``."""
    x, y, z = size
    return (mass * (y * y + z * z) / 12.0, mass * (x * x + z * z) / 12.0, mass * (x * x + y * y) / 12.0)


def cylinder_inertia(mass: float, radius: float, length: float, axis: str) -> tuple[float, float, float]:
    """Principal inertias of a solid cylinder whose axis is ``x``, ``y`` or ``z``."""
    along = mass * radius * radius / 2.0
    across = mass * (3.0 * radius * radius + length * length) / 12.0
    return {'x': (along, across, across), 'y': (across, along, across), 'z': (across, across, along)}[axis]


Vec3 = tuple[float, float, float]
Shape = tuple[str, dict[str, str], Vec3, Vec3, str]

AXIS_RPY = {'x': (0.0, math.pi / 2.0, 0.0), 'y': (math.pi / 2.0, 0.0, 0.0), 'z': (0.0, 0.0, 0.0)}


class UrdfBuilder:
    """Collects links and joints into one ``<robot>`` element."""

    def __init__(self, name: str) -> None:
        self.robot = ET.Element('robot', name=name)
        self._materials: set[str] = set()

    def material(self, name: str, rgba: tuple[float, float, float, float]) -> None:
        if name not in self._materials:
            element = ET.SubElement(self.robot, 'material', name=name)
            ET.SubElement(element, 'color', rgba=fmt(rgba))
            self._materials.add(name)

    def link(
        self,
        name: str,
        *,
        mass: float | None = None,
        com: tuple[float, float, float] = (0.0, 0.0, 0.0),
        inertia: tuple[float, float, float] = (0.0, 0.0, 0.0),
        shapes: tuple[Shape, ...] = (),
        collide: bool = True,
        full_inertia: Sequence[Sequence[float]] | None = None,
    ) -> None:
        """Add a link; ``shapes`` are (geometry tag, attributes, xyz, rpy, material) used for visual and collision.

        ``inertia`` holds principal moments about ``com``; ``full_inertia`` (3x3, link axes) replaces it.
        """
        element = ET.SubElement(self.robot, 'link', name=name)
        if mass is not None:
            inertial = ET.SubElement(element, 'inertial')
            ET.SubElement(inertial, 'origin', xyz=fmt(com), rpy='0 0 0')
            ET.SubElement(inertial, 'mass', value=f'{mass:.6g}')
            tensor = (
                full_inertia
                if full_inertia is not None
                else [[inertia[i] * (i == j) for j in range(3)] for i in range(3)]
            )
            ET.SubElement(
                inertial,
                'inertia',
                **{f'i{"xyz"[i]}{"xyz"[j]}': f'{tensor[i][j]:.6g}' for i in range(3) for j in range(i, 3)},
            )
        for tag, attrs, xyz, rpy, material in shapes:
            visual = ET.SubElement(element, 'visual')
            ET.SubElement(visual, 'origin', xyz=fmt(xyz), rpy=fmt(rpy))
            ET.SubElement(ET.SubElement(visual, 'geometry'), tag, **attrs)
            ET.SubElement(visual, 'material', name=material)
            if collide:
                collision = ET.SubElement(element, 'collision')
                ET.SubElement(collision, 'origin', xyz=fmt(xyz), rpy=fmt(rpy))
                ET.SubElement(ET.SubElement(collision, 'geometry'), tag, **attrs)

    def joint(
        self,
        name: str,
        kind: str,
        parent: str,
        child: str,
        *,
        xyz: tuple[float, float, float] = (0.0, 0.0, 0.0),
        rpy: tuple[float, float, float] = (0.0, 0.0, 0.0),
        axis: tuple[float, float, float] | None = None,
        limit: tuple[float, float, float, float] | None = None,
        damping: float | None = None,
        mimic: str | None = None,
    ) -> None:
        """Add a joint; ``limit`` is (lower, upper, velocity, effort)."""
        element = ET.SubElement(self.robot, 'joint', name=name, type=kind)
        ET.SubElement(element, 'parent', link=parent)
        ET.SubElement(element, 'child', link=child)
        ET.SubElement(element, 'origin', xyz=fmt(xyz), rpy=fmt(rpy))
        if axis is not None:
            ET.SubElement(element, 'axis', xyz=fmt(axis))
        if limit is not None:
            lower, upper, velocity, effort = limit
            ET.SubElement(
                element,
                'limit',
                lower=f'{lower:.6g}',
                upper=f'{upper:.6g}',
                velocity=f'{velocity:.6g}',
                effort=f'{effort:.6g}',
            )
        if damping is not None:
            ET.SubElement(element, 'dynamics', damping=f'{damping:.6g}', friction='0')
        if mimic is not None:
            ET.SubElement(element, 'mimic', joint=mimic, multiplier='1', offset='0')


def cyl(radius: float, length: float) -> dict[str, str]:
    return {'radius': f'{radius:.6g}', 'length': f'{length:.6g}'}


def box(size: tuple[float, float, float]) -> dict[str, str]:
    return {'size': fmt(size)}


def add_table(b: UrdfBuilder) -> None:
    sx = TABLE_X[1] - TABLE_X[0]
    sy = TABLE_Y[1] - TABLE_Y[0]
    cx = (TABLE_X[0] + TABLE_X[1]) / 2.0
    cy = (TABLE_Y[0] + TABLE_Y[1]) / 2.0
    top = ('box', box((sx, sy, TABLE_THICKNESS)), (cx, cy, -TABLE_THICKNESS / 2.0), (0.0, 0.0, 0.0), 'table_wood')
    b.link('table', shapes=(top,))
    leg_length = TABLE_TOP_Z - TABLE_THICKNESS
    legs = tuple(
        (
            'cylinder',
            cyl(TABLE_LEG_RADIUS, leg_length),
            (x, y, -TABLE_THICKNESS - leg_length / 2.0),
            (0.0, 0.0, 0.0),
            'table_leg',
        )
        for x in (TABLE_X[0] + 0.06, TABLE_X[1] - 0.06)
        for y in (TABLE_Y[0] + 0.06, TABLE_Y[1] - 0.06)
    )
    b.link('table_legs', shapes=legs, collide=False)
    b.joint('table_joint', 'fixed', 'world', 'table', xyz=(0.0, 0.0, TABLE_TOP_Z))
    b.joint('table_legs_joint', 'fixed', 'table', 'table_legs')


def add_arm(b: UrdfBuilder, side: str) -> None:
    p = f'{side}_'
    dark, light, grip = 'arm_dark', 'arm_light', 'gripper'
    x, y = BASE_XY[side]
    b.link(
        f'{p}base_link',
        mass=1.5,
        com=(0, 0, BASE_HEIGHT / 2),
        inertia=cylinder_inertia(1.5, 0.06, BASE_HEIGHT, 'z'),
        shapes=(('cylinder', cyl(0.06, BASE_HEIGHT), (0, 0, BASE_HEIGHT / 2), (0, 0, 0), dark),),
    )
    b.joint(f'{p}base_joint', 'fixed', 'table', f'{p}base_link', xyz=(x, y, 0.0), rpy=(0.0, 0.0, math.pi / 2.0))
    links = (
        (
            f'{p}link1',
            0.8,
            (0, 0, WAIST_HEIGHT / 2),
            cylinder_inertia(0.8, 0.045, WAIST_HEIGHT, 'z'),
            (('cylinder', cyl(0.045, WAIST_HEIGHT), (0, 0, WAIST_HEIGHT / 2), (0, 0, 0), light),),
        ),
        (
            f'{p}link2',
            0.9,
            (0, 0, UPPER_ARM / 2),
            cylinder_inertia(0.9, 0.03, UPPER_ARM, 'z'),
            (
                ('cylinder', cyl(0.03, UPPER_ARM - 0.02), (0, 0, UPPER_ARM / 2), (0, 0, 0), dark),
                ('cylinder', cyl(0.038, 0.07), (0, 0, 0), AXIS_RPY['y'], light),
            ),
        ),
        (
            f'{p}link3',
            0.5,
            (FOREARM_TO_ROLL / 2, 0, 0),
            cylinder_inertia(0.5, 0.028, FOREARM_TO_ROLL, 'x'),
            (
                ('cylinder', cyl(0.028, FOREARM_TO_ROLL), (FOREARM_TO_ROLL / 2, 0, 0), AXIS_RPY['x'], light),
                ('cylinder', cyl(0.034, 0.06), (0, 0, 0), AXIS_RPY['y'], dark),
            ),
        ),
        (
            f'{p}link4',
            0.4,
            (ROLL_TO_WRIST / 2, 0, 0),
            cylinder_inertia(0.4, 0.025, ROLL_TO_WRIST, 'x'),
            (('cylinder', cyl(0.025, ROLL_TO_WRIST - 0.02), (ROLL_TO_WRIST / 2, 0, 0), AXIS_RPY['x'], dark),),
        ),
        (
            f'{p}link5',
            0.25,
            (WRIST_TO_FLANGE / 2, 0, 0),
            cylinder_inertia(0.25, 0.025, WRIST_TO_FLANGE, 'x'),
            (
                ('cylinder', cyl(0.028, 0.05), (0, 0, 0), AXIS_RPY['y'], light),
                ('cylinder', cyl(0.022, WRIST_TO_FLANGE), (WRIST_TO_FLANGE / 2, 0, 0), AXIS_RPY['x'], light),
            ),
        ),
        (
            f'{p}link6',
            0.3,
            (PALM_LENGTH / 2, 0, 0),
            box_inertia(0.3, (PALM_LENGTH, 0.12, 0.04)),
            (('box', box((PALM_LENGTH, 0.12, 0.04)), (PALM_LENGTH / 2, 0, 0), (0, 0, 0), grip),),
        ),
    )
    parent = f'{p}base_link'
    for spec, (name, mass, com, inertia, shapes) in zip(ARM_JOINTS, links, strict=True):
        b.link(name, mass=mass, com=com, inertia=inertia, shapes=shapes)
        b.joint(
            f'{p}{spec.name}',
            'revolute',
            parent,
            name,
            xyz=spec.xyz,
            axis=spec.axis,
            limit=(spec.lower, spec.upper, spec.velocity, spec.effort),
            damping=0.5,
        )
        parent = name
    finger_size = (FINGER_LENGTH, FINGER_THICKNESS, FINGER_WIDTH)
    for finger, sign in (('left', 1.0), ('right', -1.0)):
        name = f'{p}finger_{finger}'
        centre = (FINGER_LENGTH / 2, sign * FINGER_THICKNESS / 2, 0.0)
        b.link(
            name,
            mass=0.05,
            com=centre,
            inertia=box_inertia(0.05, finger_size),
            shapes=(('box', box(finger_size), centre, (0, 0, 0), 'finger'),),
        )
        b.joint(
            f'{p}finger_{finger}_joint',
            'prismatic',
            f'{p}link6',
            name,
            xyz=(PALM_LENGTH, 0.0, 0.0),
            axis=(0.0, sign, 0.0),
            limit=(0.0, FINGER_TRAVEL, FINGER_VELOCITY, FINGER_EFFORT),
            damping=2.0,
            mimic=f'{p}finger_left_joint' if finger == 'right' else None,
        )
    b.link(f'{p}tcp')
    b.joint(f'{p}tcp_joint', 'fixed', f'{p}link6', f'{p}tcp', xyz=(TCP_X, 0.0, 0.0))
    b.link(f'{p}wrist_camera_link')
    b.joint(
        f'{p}wrist_camera_joint',
        'fixed',
        f'{p}link6',
        f'{p}wrist_camera_link',
        xyz=WRIST_CAMERA_XYZ,
        rpy=(0.0, -WRIST_CAMERA_PITCH, 0.0),
    )


def add_head_camera(b: UrdfBuilder, xyz: Vec3 = HEAD_CAMERA_XYZ, target: Vec3 = HEAD_CAMERA_TARGET) -> None:
    """``cam_high_link`` at ``xyz`` with its +x (the ROS optical forward) pointing at ``target``."""
    dx, dy, dz = (t - c for t, c in zip(target, xyz, strict=True))
    yaw = math.atan2(dy, dx)
    pitch = -math.atan2(dz, math.hypot(dx, dy))
    b.link('cam_high_link')
    b.joint('cam_high_joint', 'fixed', 'world', 'cam_high_link', xyz=xyz, rpy=(0.0, pitch, yaw))


def table_cell(name: str, materials: dict[str, tuple[float, float, float, float]]) -> UrdfBuilder:
    """A builder holding the ``world`` link, the table and the table's and the given ``materials``."""
    b = UrdfBuilder(name)
    for material, rgba in {
        'table_wood': (0.62, 0.50, 0.38, 1.0),
        'table_leg': (0.25, 0.25, 0.25, 1.0),
        **materials,
    }.items():
        b.material(material, rgba)
    b.link('world')
    add_table(b)
    return b


def build() -> ET.Element:
    """Return the ``<robot>`` element of the whole cell."""
    b = table_cell(
        'robofollow_cell',
        {
            'arm_dark': (0.18, 0.18, 0.20, 1.0),
            'arm_light': (0.72, 0.72, 0.74, 1.0),
            'gripper': (0.30, 0.30, 0.34, 1.0),
            'finger': (0.10, 0.10, 0.10, 1.0),
        },
    )
    add_arm(b, 'left')
    add_arm(b, 'right')
    add_head_camera(b)
    return b.robot


def document(robot: ET.Element, tool: str) -> str:
    """The URDF document of ``robot`` as text, headed by a note naming the generating ``tool``."""
    ET.indent(robot, space='  ')
    header = f'<?xml version="1.0"?>\n<!-- Generated by tools/{tool}; edit that script, not this file. -->\n'
    return header + ET.tostring(robot, encoding='unicode') + '\n'


def write_or_check(text: str, out: Path, *, check: bool) -> int:
    """Write ``text`` to ``out``; with ``check``, only return 1 if the file differs (0 if it is up to date)."""
    if check:
        return 0 if out.exists() and out.read_text() == text else 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return 0


def render() -> str:
    """The URDF document as text."""
    return document(build(), 'make_cell_urdf.py')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', type=Path, default=OUT, help='output path (default: urdf/robofollow_cell.urdf)')
    parser.add_argument('--check', action='store_true', help='exit 1 if the file on disk differs from the generated')
    args = parser.parse_args()
    return write_or_check(render(), args.out, check=args.check)


if __name__ == '__main__':
    raise SystemExit(main())
