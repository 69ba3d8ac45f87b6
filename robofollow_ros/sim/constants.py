"""Every tunable number of the simulated cell in one place: physics, control, spawning, cameras, contacts."""

from __future__ import annotations

import math

from robofollow_ros.benchmark.types import TABLE_Z

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
GRIP_SPEED = 5.0
"""Gripper speed limit in normalised units per second: a full close or open takes at least 0.2 s (50 steps at the
protocol's 250 Hz, which is what the published executor spends on a gripper-only row)."""

ARM_KP = (900.0, 1200.0, 900.0, 250.0, 250.0, 150.0)
"""Position gains (N m / rad) of joints 1-6 of the primitive robot (ARM_* to FINGER_KV and HOME_Q are the primitive
robot's; every robot's servo values are in ``sim/robots.py``)."""
ARM_KV = (40.0, 50.0, 35.0, 8.0, 8.0, 5.0)
"""Velocity-feedback gains (N m s / rad) of joints 1-6, driven with the commanded joint velocity as feed-forward."""
ARM_ARMATURE = (0.05, 0.05, 0.04, 0.01, 0.01, 0.01)
FINGER_KP = 400.0
"""Finger position gain (N/m): holding a 4 cm object with the fingers commanded shut squeezes with ~8 N each."""
FINGER_FORCE = 15.0
"""Finger force limit (N)."""
FINGER_KV = 4.0

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

HOME_Q = (0.0, -0.5, 0.77, 0.0, math.pi / 2.0 - 0.27, 0.0)
"""Home joints of each arm (joint1..6, rad): TCP pointing straight down (joint2 + joint3 + joint5 = pi/2) at
(-/+0.28, -0.270, 0.949), 0.17 m in front of the base and 0.21 m above the table, behind the operation area."""

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
    'cam_high': 'cam_high_link',
    'cam_left_wrist': 'left_wrist_camera_link',
    'cam_right_wrist': 'right_wrist_camera_link',
}
CAMERA_FOVY = 37.0
CAMERA_NEAR = 0.005
"""Near clipping plane (m). MuJoCo's default is 1 % of the model extent (~6.7 m with the floor and backdrop), which
cut a held object out of the wrist cameras; the pads are ~0.05 m from a wrist camera."""
CAMERA_FAR = 10.0
"""Far clipping plane (m): the backdrop is ~2 m from every camera."""
IMAGE_WIDTH = 320
IMAGE_HEIGHT = 240

OPERATION_AREA = ((-0.20, 0.15), (-0.15, 0.15), (TABLE_Z, 1.0))
"""Protocol §1.4: the idle arm's TCP must never enter this box (x, y, z ranges)."""
