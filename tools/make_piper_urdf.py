"""Generate ``urdf/piper_cell.urdf``: two AgileX Piper arms on the robofollow table, built from primitives.

The six arm joints are facts of AgileX's ``piper_description`` as the piper-planner 0.1.3 wheel ships them
(``piper_kinematics.urdf``, MIT, ``urdf/piper/README.md`` records the file, its commit and its licence): each joint's
origin, axis and inertial values are copied as numbers below; the position limits are those of
``config/robots/piper.yaml``'s ``upstream.facts`` (the kinematics file's joint1 upper limit reads 2.168 where every
other Piper description has 2.618; joint4 and joint6 reach +-1.832 and +-3.14 there), the velocities the
3 rad/s of ``piper_description.xacro``. The file has no gripper: the parallel gripper is a palm box and two
prismatic fingers named as piper_description's gripper joints, ``joint7`` and ``joint8`` (each 0 .. 0.035 m, 0.07 m
full opening; ``joint8`` mimics ``joint7``), fingertips 0.135 m in front of the flange (``piper_description``'s
``link_ik`` lies 0.13503 m along the tool axis). The visual and collision geometry are boxes and cylinders
approximating each link's extent, not the AgileX meshes.

Frames follow ``tools/make_cell_urdf.py``: each base is yawed +90 degrees so that the arm's zero-pose reach points
along world +y; ``<arm>_gripper_base`` turns the flange frame (+z out of the flange) into the project's gripper frame
(+x toward the fingertips, +y the closing axis, which is the joint2 axis when joints 4-6 are at zero), and the
``<arm>_tcp`` link lies between the finger pads, 0.025 m behind the fingertips. The Piper's joint5 turns only
+-1.22 rad, so a top-down gripper cannot rise far above its shoulder: each arm stands on a pedestal that puts its
base 0.22 m above the table top (docs/real-cell.md, "The Piper cell").

Run ``python tools/make_piper_urdf.py`` after changing a constant below and commit both files (a test fails when
they differ).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree as ET

from make_cell_urdf import (
    AXIS_RPY,
    UrdfBuilder,
    Vec3,
    add_head_camera,
    box,
    box_inertia,
    cyl,
    document,
    table_cell,
    write_or_check,
)

OUT = Path(__file__).resolve().parents[1] / 'urdf' / 'piper_cell.urdf'

BASE_XY = {'left': (-0.08, -0.34), 'right': (0.08, -0.34)}
"""Bases 0.16 m apart behind the operation area: both arms reach every layout position from above."""
PEDESTAL_HEIGHT = 0.22
PEDESTAL_SIZE = (0.11, 0.11)
BASE_RADIUS = 0.05
BASE_HEIGHT = 0.09


@dataclass(frozen=True)
class PiperJoint:
    """One arm joint as piper_kinematics.urdf states it, and the link it moves (mass kg, centre of mass m,
    inertia kg m^2 as ixx ixy ixz iyy iyz izz about the centre of mass, link axes)."""

    name: str
    xyz: Vec3
    rpy: Vec3
    lower: float
    upper: float
    mass: float
    com: Vec3
    inertia: tuple[float, float, float, float, float, float]


AXIS = (0.0, 0.0, 1.0)
"""Every Piper arm joint turns about its own +z."""
VELOCITY = 3.0
"""rad/s, every arm joint (piper_description.xacro; config/robots/piper.yaml streams at most this)."""
EFFORT = 100.0
"""N m, every arm joint (as the Piper descriptions state it; the simulation does not limit the servo torque)."""
BASE_MASS = 1.02
BASE_COM = (-0.00473641164191482, 2.56829134630247e-05, 0.041451518036016)
BASE_INERTIA = (0.00267433, -0.00000073, -0.00017389, 0.00282612, 0.0000004, 0.00089624)
JOINTS = (
    PiperJoint(
        'joint1',
        (0.0, 0.0, 0.123),
        (0.0, 0.0, 0.0),
        -2.618,
        2.618,
        0.71,
        (0.000121504734057468, 0.000104632162460536, -0.00438597309559853),
        (0.00048916, -0.00000036, -0.00000224, 0.00040472, -0.00000242, 0.00043982),
    ),
    PiperJoint(
        'joint2',
        (0.0, 0.0, 0.0),
        (1.5708, -0.1359, -3.1416),
        0.0,
        3.14,
        1.17,
        (0.198666145229743, -0.010926924140076, 0.00142121714502687),
        (0.00116918, -0.00180037, 0.00025146, 0.06785384, -0.00000455, 0.06774489),
    ),
    PiperJoint(
        'joint3',
        (0.28503, 0.0, 0.0),
        (0.0, 0.0, -1.7939),
        -2.967,
        0.0,
        0.5,
        (-0.0202737662122021, -0.133914995944595, -0.000458682652737356),
        (0.01361711, 0.00165794, -0.00000048, 0.00045024, -0.00000045, 0.01380322),
    ),
    PiperJoint(
        'joint4',
        (-0.021984, -0.25075, 0.0),
        (1.5708, 0.0, 0.0),
        -1.832,
        1.832,
        0.38,
        (-9.66635791618542e-05, 0.000876064475651083, -0.00496880904640868),
        (0.00018501, 0.00000054, 0.00000120, 0.00018965, -0.00000841, 0.00015484),
    ),
    PiperJoint(
        'joint5',
        (0.0, 0.0, 0.0),
        (-1.5708, 0.0, 0.0),
        -1.22,
        1.22,
        0.383,
        (-4.10554118924211e-05, -0.0566486692356075, -0.0037205791677906),
        (0.00166169, 0.00000006, -0.00000007, 0.00018510, 0.00001026, 0.00164321),
    ),
    PiperJoint(
        'joint6',
        (8.8259e-05, -0.091, 0.0),
        (1.5708, 0.0, 0.0),
        -3.14,
        3.14,
        0.007,
        (-8.82590762930069e-05, 9.0598378529832e-06, -0.002),
        (5.73015540542155e-07, 0.0, 0.0, 5.73015540542155e-07, 0.0, 1.06738869138926e-06),
    ),
)

PALM_LENGTH = 0.085
PALM_SIZE = (PALM_LENGTH, 0.11, 0.05)
PALM_MASS = 0.35
FINGER_LENGTH = 0.05
FINGER_THICKNESS = 0.01
FINGER_WIDTH = 0.02
FINGER_MASS = 0.03
FINGER_TRAVEL = 0.035
"""Each finger's stroke (m): the Piper gripper opens 0.07 m (piper_sdk's gripper range)."""
FINGER_VELOCITY = 0.2
FINGER_EFFORT = 15.0
TCP_X = PALM_LENGTH + FINGER_LENGTH / 2.0
WRIST_CAMERA_XYZ = (0.05, 0.0, -0.065)
WRIST_CAMERA_PITCH = 0.55
"""Wrist cameras sit under the palm (its -z side), pitched toward the fingers, as on the primitive cell."""
HEAD_CAMERA_XYZ = (0.0, -0.34, 1.66)
HEAD_CAMERA_TARGET = (0.0, -0.09, 0.74)


def segment(start: Vec3, end: Vec3) -> tuple[Vec3, Vec3, float]:
    """Centre, rpy and length of a cylinder (its axis along local z) running from ``start`` to ``end``."""
    dx, dy, dz = (e - s for s, e in zip(start, end, strict=True))
    centre = ((start[0] + end[0]) / 2.0, (start[1] + end[1]) / 2.0, (start[2] + end[2]) / 2.0)
    rpy = (0.0, math.atan2(math.hypot(dx, dy), dz), math.atan2(dy, dx))
    return centre, rpy, math.sqrt(dx * dx + dy * dy + dz * dz)


def rod(start: Vec3, end: Vec3, radius: float, material: str, *, trim: float = 0.0) -> tuple:
    """A cylinder shape from ``start`` to ``end``, shortened by ``trim`` at both ends."""
    centre, rpy, length = segment(start, end)
    return ('cylinder', cyl(radius, length - 2.0 * trim), centre, rpy, material)


def hub(radius: float, length: float, axis: str, material: str, xyz: Vec3 = (0.0, 0.0, 0.0)) -> tuple:
    """A joint housing: a cylinder about ``axis`` centred at ``xyz``."""
    return ('cylinder', cyl(radius, length), xyz, AXIS_RPY[axis], material)


def tensor(inertia: tuple[float, float, float, float, float, float]) -> list[list[float]]:
    """The symmetric 3x3 inertia matrix of (ixx, ixy, ixz, iyy, iyz, izz)."""
    ixx, ixy, ixz, iyy, iyz, izz = inertia
    return [[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]


LINK_SHAPES = {
    'link1': (hub(0.045, 0.05, 'z', 'piper_light', (0.0, 0.0, -0.03)), hub(0.04, 0.09, 'z', 'piper_light')),
    'link2': (
        rod((0.0, 0.0, 0.0), JOINTS[2].xyz, 0.03, 'piper_light', trim=0.03),
        hub(0.042, 0.09, 'z', 'piper_dark'),
    ),
    'link3': (
        rod((0.0, 0.0, 0.0), JOINTS[3].xyz, 0.026, 'piper_light', trim=0.03),
        hub(0.036, 0.075, 'z', 'piper_dark'),
    ),
    'link4': (hub(0.032, 0.06, 'y', 'piper_dark'),),
    'link5': (rod((0.0, 0.0, 0.0), JOINTS[5].xyz, 0.028, 'piper_light', trim=0.02),),
    'link6': (hub(0.032, 0.012, 'z', 'piper_dark', (0.0, 0.0, -0.006)),),
}
"""Each moving link's approximate extent in its own frame (hubs about the joint axes, rods along the links)."""


def add_arm(b: UrdfBuilder, side: str) -> None:
    """One Piper arm with its pedestal, gripper, TCP and wrist camera, every name prefixed ``<side>_``."""
    p = f'{side}_'
    x, y = BASE_XY[side]
    pedestal = (*PEDESTAL_SIZE, PEDESTAL_HEIGHT)
    b.link(
        f'{p}pedestal',
        shapes=(('box', box(pedestal), (0.0, 0.0, PEDESTAL_HEIGHT / 2.0), (0.0, 0.0, 0.0), 'pedestal'),),
    )
    b.joint(f'{p}pedestal_joint', 'fixed', 'table', f'{p}pedestal', xyz=(x, y, 0.0))
    b.link(
        f'{p}base_link',
        mass=BASE_MASS,
        com=BASE_COM,
        full_inertia=tensor(BASE_INERTIA),
        shapes=(hub(BASE_RADIUS, BASE_HEIGHT, 'z', 'piper_dark', (0.0, 0.0, BASE_HEIGHT / 2.0)),),
    )
    b.joint(
        f'{p}base_joint',
        'fixed',
        f'{p}pedestal',
        f'{p}base_link',
        xyz=(0.0, 0.0, PEDESTAL_HEIGHT),
        rpy=(0.0, 0.0, math.pi / 2.0),
    )
    parent = f'{p}base_link'
    for index, joint in enumerate(JOINTS, start=1):
        link = f'{p}link{index}'
        b.link(
            link,
            mass=joint.mass,
            com=joint.com,
            full_inertia=tensor(joint.inertia),
            shapes=LINK_SHAPES[f'link{index}'],
        )
        b.joint(
            f'{p}{joint.name}',
            'revolute',
            parent,
            link,
            xyz=joint.xyz,
            rpy=joint.rpy,
            axis=AXIS,
            limit=(joint.lower, joint.upper, VELOCITY, EFFORT),
            damping=0.5,
        )
        parent = link
    add_gripper(b, p)


def add_gripper(b: UrdfBuilder, p: str) -> None:
    """Palm, two prismatic fingers, the TCP and the wrist camera on ``<p>link6``'s flange."""
    gripper = f'{p}gripper_base'
    b.link(
        gripper,
        mass=PALM_MASS,
        com=(PALM_LENGTH / 2.0, 0.0, 0.0),
        inertia=box_inertia(PALM_MASS, PALM_SIZE),
        shapes=(('box', box(PALM_SIZE), (PALM_LENGTH / 2.0, 0.0, 0.0), (0.0, 0.0, 0.0), 'piper_dark'),),
    )
    b.joint(f'{p}gripper_joint', 'fixed', f'{p}link6', gripper, rpy=(0.0, -math.pi / 2.0, 0.0))
    finger_size = (FINGER_LENGTH, FINGER_THICKNESS, FINGER_WIDTH)
    for finger, joint, sign in (('left', 'joint7', 1.0), ('right', 'joint8', -1.0)):
        name = f'{p}finger_{finger}'
        centre = (FINGER_LENGTH / 2.0, sign * FINGER_THICKNESS / 2.0, 0.0)
        b.link(
            name,
            mass=FINGER_MASS,
            com=centre,
            inertia=box_inertia(FINGER_MASS, finger_size),
            shapes=(('box', box(finger_size), centre, (0.0, 0.0, 0.0), 'finger'),),
        )
        b.joint(
            f'{p}{joint}',
            'prismatic',
            gripper,
            name,
            xyz=(PALM_LENGTH, 0.0, 0.0),
            axis=(0.0, sign, 0.0),
            limit=(0.0, FINGER_TRAVEL, FINGER_VELOCITY, FINGER_EFFORT),
            damping=2.0,
            mimic=f'{p}joint7' if joint == 'joint8' else None,
        )
    b.link(f'{p}tcp')
    b.joint(f'{p}tcp_joint', 'fixed', gripper, f'{p}tcp', xyz=(TCP_X, 0.0, 0.0))
    b.link(f'{p}wrist_camera_link')
    b.joint(
        f'{p}wrist_camera_joint',
        'fixed',
        gripper,
        f'{p}wrist_camera_link',
        xyz=WRIST_CAMERA_XYZ,
        rpy=(0.0, -WRIST_CAMERA_PITCH, 0.0),
    )


def build() -> ET.Element:
    """Return the ``<robot>`` element of the Piper cell."""
    b = table_cell(
        'piper_cell',
        {
            'pedestal': (0.35, 0.35, 0.37, 1.0),
            'piper_light': (0.80, 0.82, 0.86, 1.0),
            'piper_dark': (0.16, 0.16, 0.18, 1.0),
            'finger': (0.10, 0.10, 0.10, 1.0),
        },
    )
    add_arm(b, 'left')
    add_arm(b, 'right')
    add_head_camera(b, HEAD_CAMERA_XYZ, HEAD_CAMERA_TARGET)
    return b.robot


def render() -> str:
    """The URDF document as text."""
    return document(build(), 'make_piper_urdf.py')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', type=Path, default=OUT, help='output path (default: urdf/piper_cell.urdf)')
    parser.add_argument('--check', action='store_true', help='exit 1 if the file on disk differs from the generated')
    args = parser.parse_args()
    return write_or_check(render(), args.out, check=args.check)


if __name__ == '__main__':
    raise SystemExit(main())
