"""Model composition: the cell URDF plus actuators, sites, cameras, lights and the layout's objects via MjSpec.

``compose(specs)`` returns an uncompiled ``MjSpec``; ``CellModel.build(specs)`` compiles it and resolves every index
the simulator needs (qpos/dof addresses, actuators, sites, cameras, object bodies).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import mujoco
import numpy as np

from robofollow_ros.benchmark.types import ARMS, Arm, ObjectSpec
from robofollow_ros.errors import SimulationError
from robofollow_ros.robot.description import RobotDescription, load_robot
from robofollow_ros.sim.constants import (
    ARM_FRICTION,
    CAMERA_FAR,
    CAMERA_LINKS,
    CAMERA_NEAR,
    COLLISION,
    FINGER_FRICTION,
    FINGER_PRIORITY,
    FINGER_SOLIMP,
    FINGER_SOLREF,
    IMAGE_HEIGHT,
    IMAGE_WIDTH,
    IMPRATIO,
    MULTI_CCD,
    SOLVER_ITERATIONS,
    SOLVER_LS_ITERATIONS,
    TABLE_FRICTION,
    TIMESTEP,
)
from robofollow_ros.sim.markers import CellMarkers, add_markers
from robofollow_ros.sim.objects import add_object, free_joint_name, is_static
from robofollow_ros.sim.rotations import quat_from_matrix
from robofollow_ros.state_layout import CAMERAS

CAMERA_FROM_LINK = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
"""MuJoCo cameras look along their -z with +y up; camera links follow the ROS convention (+x forward, +z up)."""


def _configure_physics(spec: mujoco.MjSpec) -> None:
    spec.option.timestep = TIMESTEP
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.cone = mujoco.mjtCone.mjCONE_PYRAMIDAL
    spec.option.impratio = IMPRATIO
    spec.option.iterations = SOLVER_ITERATIONS
    spec.option.ls_iterations = SOLVER_LS_ITERATIONS
    if MULTI_CCD:
        _enable_multi_ccd(spec)
    spec.compiler.fusestatic = False
    spec.compiler.discardvisual = False


def _enable_multi_ccd(spec: mujoco.MjSpec) -> None:
    """MuJoCo 4 has multi-CCD on unless disabled; MuJoCo 3 has it off unless enabled."""
    enable = getattr(mujoco.mjtEnableBit, 'mjENBL_MULTICCD', None)
    if enable is not None:
        spec.option.enableflags |= int(enable)
    disable = getattr(mujoco.mjtDisableBit, 'mjDSBL_MULTICCD', None)
    if disable is not None:
        spec.option.disableflags &= ~int(disable)


def _configure_visual(spec: mujoco.MjSpec) -> None:
    spec.visual.quality.offsamples = 0
    spec.visual.quality.shadowsize = 0
    spec.visual.global_.offwidth = max(640, IMAGE_WIDTH)
    spec.visual.global_.offheight = max(480, IMAGE_HEIGHT)
    spec.visual.headlight.ambient = [0.3, 0.3, 0.3]
    spec.visual.headlight.diffuse = [0.3, 0.3, 0.3]
    spec.visual.headlight.specular = [0.0, 0.0, 0.0]
    for pos, direction in (((0.0, -0.6, 2.2), (0.0, 0.4, -1.0)), ((0.8, 0.4, 1.8), (-0.5, -0.3, -1.0))):
        light = spec.worldbody.add_light(pos=list(pos), dir=list(direction))
        light.type = mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
        light.castshadow = False
        light.diffuse = [0.35, 0.35, 0.35]
        light.specular = [0.1, 0.1, 0.1]
    floor = spec.worldbody.add_geom(
        name='floor', type=mujoco.mjtGeom.mjGEOM_PLANE, size=[3.0, 3.0, 0.05], rgba=[0.82, 0.82, 0.80, 1.0]
    )
    floor.contype, floor.conaffinity = COLLISION['none']
    backdrop = spec.worldbody.add_geom(
        name='backdrop',
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[3.0, 0.01, 1.5],
        pos=[0.0, 1.2, 1.5],
        rgba=[0.88, 0.89, 0.90, 1.0],
    )
    backdrop.contype, backdrop.conaffinity = COLLISION['none']


def _configure_robot(spec: mujoco.MjSpec, robot: RobotDescription) -> None:
    for equality in list(spec.equalities):
        spec.delete(equality)
    arm_of_body: dict[str, Arm] = {}
    for body in spec.bodies:
        for arm in ARMS:
            if body.name.startswith(f'{arm}_'):
                arm_of_body[body.name] = arm
    for geom in spec.geoms:
        owner = geom.parent.name
        if owner in arm_of_body:
            arm = arm_of_body[owner]
            geom.contype, geom.conaffinity = COLLISION[arm]
            if 'finger' in owner:
                geom.friction = np.array(FINGER_FRICTION)
                geom.priority = FINGER_PRIORITY
                geom.condim = 4
                geom.solref = np.array(FINGER_SOLREF)
                geom.solimp = np.array(FINGER_SOLIMP)
            else:
                geom.friction = np.array(ARM_FRICTION)
        elif owner == 'table':
            geom.contype, geom.conaffinity = COLLISION['env']
            geom.friction = np.array(TABLE_FRICTION)
    for name in arm_of_body:
        if not name.endswith('base_link'):
            spec.body(name).gravcomp = 1.0
    physics = robot.spec
    for arm in ARMS:
        desc = robot.arms[arm]
        for i, joint_name in enumerate(desc.joints):
            joint = spec.joint(joint_name)
            joint.armature = physics.arm_armature[i]
            if physics.arm_torque is not None:
                joint.actfrcrange = [-physics.arm_torque[i], physics.arm_torque[i]]
                joint.actfrclimited = mujoco.mjtLimited.mjLIMITED_TRUE
            pos = spec.add_actuator(name=f'{joint_name}_pos', target=joint_name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            pos.set_to_position(kp=physics.arm_kp[i])
            pos.ctrlrange = [desc.lower[i], desc.upper[i]]
            pos.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        for i, joint_name in enumerate(desc.joints):
            vel = spec.add_actuator(name=f'{joint_name}_vel', target=joint_name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            vel.set_to_velocity(kv=physics.arm_kv[i])
            vel.ctrlrange = [-2.0 * desc.velocity[i], 2.0 * desc.velocity[i]]
            vel.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        for finger in desc.fingers:
            act = spec.add_actuator(name=f'{finger}_pos', target=finger, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            act.set_to_position(kp=physics.finger_kp, kv=physics.finger_kv)
            act.ctrlrange = [0.0, desc.finger_travel]
            act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.forcerange = [-physics.finger_force, physics.finger_force]
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        spec.body(desc.tcp).add_site(name=desc.tcp, size=[0.004, 0.0, 0.0], rgba=[1.0, 0.2, 0.2, 0.0])


def _configure_cameras(spec: mujoco.MjSpec, robot: RobotDescription) -> None:
    quat = quat_from_matrix(CAMERA_FROM_LINK)
    for camera in CAMERAS:
        spec.body(CAMERA_LINKS[camera]).add_camera(
            name=camera, fovy=robot.spec.camera_fovy[camera], quat=quat, resolution=[IMAGE_WIDTH, IMAGE_HEIGHT]
        )


def set_clip_planes(model: mujoco.MjModel) -> None:
    """Put the cameras' clipping planes at ``CAMERA_NEAR`` / ``CAMERA_FAR`` metres (MuJoCo scales by the extent)."""
    model.vis.map.znear = CAMERA_NEAR / model.stat.extent
    model.vis.map.zfar = CAMERA_FAR / model.stat.extent


def compose(
    objects: Iterable[ObjectSpec],
    *,
    robot: RobotDescription | None = None,
    light: bool = False,
    markers: CellMarkers | None = None,
) -> mujoco.MjSpec:
    """Compose the cell with ``objects`` (uncompiled); ``light`` builds it with the robot's lighter camera meshes;
    ``markers`` adds ArUco tags on the objects and the table (``sim.markers``; drawn only, no physics).

    Raises:
        SimulationError: the URDF cannot be loaded, an object is malformed or has no marker.
    """
    objects = tuple(objects)
    robot = robot or load_robot()
    try:
        spec = mujoco.MjSpec.from_string(robot.spec.urdf_text(light=light))
    except SimulationError:
        raise
    except Exception as exc:  # mujoco raises plain ValueError/Exception on parse errors
        raise SimulationError(f'cannot load {robot.spec.urdf}: {exc}') from exc
    spec.modelname = 'robofollow_cell'
    _configure_physics(spec)
    _configure_visual(spec)
    _configure_robot(spec, robot)
    _configure_cameras(spec, robot)
    seen: set[str] = set()
    for obj in objects:
        if obj.name in seen:
            raise SimulationError(f'duplicate object name {obj.name!r}')
        seen.add(obj.name)
        add_object(spec.worldbody, obj)
    if markers is not None:
        add_markers(spec, objects, markers)
    return spec


@dataclass(frozen=True)
class ArmIndex:
    """MuJoCo indices of one arm."""

    qpos: np.ndarray
    dof: np.ndarray
    pos_actuators: np.ndarray
    vel_actuators: np.ndarray
    finger_qpos: np.ndarray
    finger_actuators: np.ndarray
    tcp_site: int
    finger_travel: float


@dataclass(frozen=True)
class ObjectIndex:
    """MuJoCo indices of one scene item; ``qpos``/``dof`` are -1 for static items."""

    spec: ObjectSpec
    body: int
    qpos: int
    dof: int
    geoms: tuple[int, ...]


class CellModel:
    """A compiled cell model with every index the simulator uses."""

    def __init__(
        self,
        model: mujoco.MjModel,
        objects: tuple[ObjectSpec, ...],
        robot: RobotDescription,
        *,
        markers: CellMarkers | None = None,
    ) -> None:
        self.model = model
        self.robot = robot
        self.markers = markers
        self.objects = objects
        self.arms: dict[Arm, ArmIndex] = {}
        for arm in ARMS:
            desc = robot.arms[arm]
            joints = [model.joint(n).id for n in desc.joints]
            fingers = [model.joint(n).id for n in desc.fingers]
            self.arms[arm] = ArmIndex(
                qpos=np.array([model.jnt_qposadr[j] for j in joints]),
                dof=np.array([model.jnt_dofadr[j] for j in joints]),
                pos_actuators=np.array([model.actuator(f'{n}_pos').id for n in desc.joints]),
                vel_actuators=np.array([model.actuator(f'{n}_vel').id for n in desc.joints]),
                finger_qpos=np.array([model.jnt_qposadr[j] for j in fingers]),
                finger_actuators=np.array([model.actuator(f'{n}_pos').id for n in desc.fingers]),
                tcp_site=model.site(desc.tcp).id,
                finger_travel=desc.finger_travel,
            )
        self.object_index: dict[str, ObjectIndex] = {}
        for obj in objects:
            body = model.body(obj.name).id
            if is_static(obj):
                qpos = dof = -1
            else:
                joint = model.joint(free_joint_name(obj.name)).id
                qpos, dof = int(model.jnt_qposadr[joint]), int(model.jnt_dofadr[joint])
            geoms = tuple(int(g) for g in np.flatnonzero(model.geom_bodyid == body))
            self.object_index[obj.name] = ObjectIndex(spec=obj, body=body, qpos=qpos, dof=dof, geoms=geoms)
        self.cameras = {name: model.camera(name).id for name in CAMERAS}
        self.table_geom = model.geom(np.flatnonzero(model.geom_bodyid == model.body('table').id)[0]).id
        self._render_model: mujoco.MjModel | None = None

    def render_model(self) -> mujoco.MjModel:
        """The model the cameras draw: this one with the robot's lighter meshes (compiled once, on first use), or
        this one itself when the robot has none. Same bodies, joints and cameras; only mesh geometry (and so the
        mesh geoms' frames) differs, so it is posed from this model's ``qpos`` (``render.CameraRig``).

        Raises:
            SimulationError: the lighter model cannot be composed or compiled.
        """
        if not self.robot.spec.light_mesh_packages:
            return self.model
        if self._render_model is None:
            spec = compose(self.objects, robot=self.robot, light=True, markers=self.markers)
            try:
                model = spec.compile()
            except Exception as exc:  # compile errors surface as ValueError with MuJoCo's message
                raise SimulationError(f'cannot compile the cell model with light meshes: {exc}') from exc
            set_clip_planes(model)
            self._render_model = model
        return self._render_model

    @classmethod
    def build(
        cls, objects: Iterable[ObjectSpec], *, robot: RobotDescription | None = None, markers: CellMarkers | None = None
    ) -> CellModel:
        """Compose and compile the cell with ``objects`` (and ``markers``' tags, see ``compose``).

        Raises:
            SimulationError: composition or compilation failed.
        """
        robot = robot or load_robot()
        objects = tuple(objects)
        spec = compose(objects, robot=robot, markers=markers)
        try:
            model = spec.compile()
        except Exception as exc:  # compile errors surface as ValueError with MuJoCo's message
            raise SimulationError(f'cannot compile the cell model: {exc}') from exc
        set_clip_planes(model)
        return cls(model, objects, robot, markers=markers)

    @property
    def object_names(self) -> tuple[str, ...]:
        """Names of every scene item, in layout order."""
        return tuple(o.name for o in self.objects)

    def steps_for(self, seconds: float) -> int:
        """Whole number of physics steps covering ``seconds`` (rounded up)."""
        return max(1, math.ceil(seconds / self.model.opt.timestep - 1e-9))
