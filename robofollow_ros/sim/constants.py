"""Every tunable number of the simulated cell in one place: physics, control, spawning, cameras, contacts."""

from __future__ import annotations

from fractions import Fraction

from robofollow_ros.benchmark.types import TABLE_Z
from robofollow_ros.state_layout import HEAD_CAMERA, LEFT_WRIST_CAMERA, RIGHT_WRIST_CAMERA

TIMESTEP = 0.004
"""Physics step (s): the protocol's 250 Hz, with the implicitfast integrator."""
SOLVER_ITERATIONS = 30
SOLVER_LS_ITERATIONS = 10
MULTI_CCD = True
"""Multiple contact points per convex-convex pair (MuJoCo's multiccd): a cylinder resting on a cylinder gets a ring of
contacts instead of one point that can flip to a horizontal normal and kick the stack."""
IMPRATIO = 30.0
"""Frictional-to-normal impedance ratio: with the stiff finger contacts it keeps friction grasps from creeping
(measured < 0.15 mm/s for every object kind; ~2 mm/s at the default 1)."""

ROW_SECONDS = 0.06
"""Nominal duration of one executed action row (protocol §1.5: ~0.06 s per frame)."""
ROW_FPS = 1 / Fraction(str(ROW_SECONDS))
"""Frames per second of anything recorded once per row (demonstrations, trial videos): exactly 50/3."""
GRIP_SPEED = 5.0
"""Gripper speed limit in normalised units per second: a full close or open takes at least 0.2 s (50 steps at the
protocol's 250 Hz, which is what the published executor spends on a gripper-only row)."""

FINGER_FRICTION = (1.5, 0.02, 0.0001)
"""Finger pads: sliding, torsional, rolling friction. Pads have contact priority over objects (see OBJECT_PRIORITY), so
their friction, condim 4 and stiff contact parameters govern every finger-object contact."""
FINGER_SOLREF = (0.008, 1.0)
"""Stiffest contact time constant MuJoCo allows at this timestep (2 steps)."""
FINGER_SOLIMP = (0.95, 0.99, 0.001, 0.5, 2.0)
FINGER_PRIORITY = 2
OBJECT_PRIORITY = 1
"""Objects outrank the table so that the protocol's object friction, not the table's, governs sliding on the table."""
TABLE_FRICTION = (0.5, 0.005, 0.0001)
ARM_FRICTION = (0.6, 0.005, 0.0001)
OBJECT_TORSION = 0.005
OBJECT_ROLLING = 0.0001
OBJECT_CONDIM = 3
OBJECT_SOLREF = (0.008, 1.0)
"""Object contacts as stiff as the timestep allows (2 steps): with MuJoCo's default 0.02 s an object dropped into a
bowl sank 4-6 mm into its floor on impact."""

ENV_BIT, OBJECT_BIT, LEFT_ARM_BIT, RIGHT_ARM_BIT = 1, 2, 4, 8
"""Collision groups: objects collide with everything; each arm with the table, objects and the other arm, never with
itself; static scenery (table, static bowl) never with static scenery."""
COLLISION = {
    'env': (ENV_BIT, OBJECT_BIT | LEFT_ARM_BIT | RIGHT_ARM_BIT),
    'object': (OBJECT_BIT, ENV_BIT | OBJECT_BIT | LEFT_ARM_BIT | RIGHT_ARM_BIT),
    'left': (LEFT_ARM_BIT, ENV_BIT | OBJECT_BIT | RIGHT_ARM_BIT),
    'right': (RIGHT_ARM_BIT, ENV_BIT | OBJECT_BIT | LEFT_ARM_BIT),
    'none': (0, 0),
}

SPAWN_CLEARANCE_BOX = 0.001
"""Protocol §2.0: a cube's centre spawns at table + half-size + 0.001; spheres and cylinders touch the table."""
STACK_CLEARANCE = 0.002
"""Protocol §2.4: a stacked object's centre spawns at the support's top + half-height + 0.002."""
IN_BOWL_DROP = 0.015
"""Protocol §2.4: the object inside the bowl is dropped from rim + half-height + 0.015."""
SETTLE_SECONDS = 0.72
"""Each settling phase of the spawn procedure: 180 steps at the protocol's 250 Hz."""

BOWL_WALLS = 16
BOWL_WALL_THICKNESS = 0.005
BOWL_BASE_FRACTION = 0.6
"""The bowl's base disc radius as a fraction of its outer radius; the walls flare out from it to the rim."""
BOWL_BASE_THICKNESS = 0.006
BOWL_MASS_DEFAULT = 0.15

CAMERA_LINKS = {
    HEAD_CAMERA: 'cam_high_link',
    LEFT_WRIST_CAMERA: 'left_wrist_camera_link',
    RIGHT_WRIST_CAMERA: 'right_wrist_camera_link',
}
"""The URDF link each camera is mounted on."""
CAMERA_NEAR = 0.005
"""Near clipping plane (m). MuJoCo's default is 1 % of the model extent (~6.7 m with the floor and backdrop), which
cut a held object out of the wrist cameras; the pads are ~0.05 m from a wrist camera."""
CAMERA_FAR = 10.0
"""Far clipping plane (m): the backdrop is ~2 m from every camera."""
IMAGE_WIDTH = 320
IMAGE_HEIGHT = 240

OPERATION_AREA = ((-0.20, 0.15), (-0.15, 0.15), (TABLE_Z, 1.0))
"""Protocol §1.4: the idle arm's TCP must never enter this box (x, y, z ranges)."""
