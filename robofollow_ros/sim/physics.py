"""Physics queries and writes on a ``CellModel`` + ``MjData``: poses, joints, fingers, contacts.

No task logic lives here (it only knows bodies, joints and geoms), so the environment, the expert and the tests
can all read the simulation the same way.
"""

from __future__ import annotations

import mujoco
import numpy as np

from robofollow_ros.benchmark.types import ARMS, Arm
from robofollow_ros.sim.model import CellModel
from robofollow_ros.sim.rotations import quat_from_matrix


def tcp_pose(cell: CellModel, data: mujoco.MjData, arm: Arm) -> tuple[np.ndarray, np.ndarray]:
    """World position (3,) and orientation (w, x, y, z) of an arm's TCP site (needs up-to-date kinematics)."""
    site = cell.arms[arm].tcp_site
    return data.site_xpos[site].copy(), quat_from_matrix(data.site_xmat[site].reshape(3, 3))


def object_pose(cell: CellModel, data: mujoco.MjData, name: str) -> tuple[np.ndarray, np.ndarray]:
    """World position (3,) and orientation (w, x, y, z) of a scene item's body."""
    body = cell.object_index[name].body
    quat = data.xquat[body].copy()
    return data.xpos[body].copy(), quat if quat[0] >= 0.0 else -quat


def arm_joints(cell: CellModel, data: mujoco.MjData, arm: Arm) -> np.ndarray:
    """The six joint positions of an arm (rad)."""
    return data.qpos[cell.arms[arm].qpos].copy()


def finger_opening(cell: CellModel, data: mujoco.MjData, arm: Arm) -> float:
    """Measured finger opening, normalised: 1 = fully open, 0 = pads touching."""
    index = cell.arms[arm]
    return float(np.mean(data.qpos[index.finger_qpos]) / index.finger_travel)


def set_arm_joints(cell: CellModel, data: mujoco.MjData, arm: Arm, q: np.ndarray, grip: float) -> None:
    """Write an arm's joint positions and finger opening (normalised) directly, with zero velocity."""
    index = cell.arms[arm]
    data.qpos[index.qpos] = q
    data.qvel[index.dof] = 0.0
    data.qpos[index.finger_qpos] = grip * index.finger_travel


def set_object_pose(
    cell: CellModel, data: mujoco.MjData, name: str, pos: np.ndarray, quat: np.ndarray | None = None
) -> None:
    """Place a scene item: free objects through qpos (velocity zeroed), static ones through ``model.body_pos``."""
    index = cell.object_index[name]
    quat = np.array([1.0, 0.0, 0.0, 0.0]) if quat is None else np.asarray(quat, dtype=np.float64)
    if index.qpos < 0:
        cell.model.body_pos[index.body] = pos
        cell.model.body_quat[index.body] = quat
        return
    data.qpos[index.qpos : index.qpos + 3] = pos
    data.qpos[index.qpos + 3 : index.qpos + 7] = quat
    data.qvel[index.dof : index.dof + 6] = 0.0


def _arm_of_geom(cell: CellModel, geom: int) -> Arm | None:
    name = mujoco.mj_id2name(cell.model, mujoco.mjtObj.mjOBJ_BODY, int(cell.model.geom_bodyid[geom])) or ''
    for arm in ARMS:
        if name.startswith(f'{arm}_'):
            return arm
    return None


def finger_geoms(cell: CellModel, arm: Arm) -> frozenset[int]:
    """Geom ids of an arm's two fingers."""
    model = cell.model
    ids: list[int] = []
    for finger in cell.robot.arms[arm].fingers:
        body = model.jnt_bodyid[model.joint(finger).id]
        ids.extend(int(g) for g in np.flatnonzero(model.geom_bodyid == body))
    return frozenset(ids)


def contacts_of(cell: CellModel, data: mujoco.MjData, name: str) -> set[str]:
    """Names of what a scene item touches: other items, ``table``, ``left``/``right`` (arm links)."""
    own = set(cell.object_index[name].geoms)
    geom_owner: dict[int, str] = {}
    for owner, index in cell.object_index.items():
        for g in index.geoms:
            geom_owner[g] = owner
    touching: set[str] = set()
    for contact in data.contact[: data.ncon]:
        g1, g2 = int(contact.geom1), int(contact.geom2)
        if g1 in own or g2 in own:
            other = g2 if g1 in own else g1
            if other in own:
                continue
            if other in geom_owner:
                touching.add(geom_owner[other])
            elif other == cell.table_geom:
                touching.add('table')
            else:
                arm = _arm_of_geom(cell, other)
                if arm is not None:
                    touching.add(arm)
    return touching


def fingers_touching(cell: CellModel, data: mujoco.MjData, arm: Arm, name: str) -> int:
    """How many of an arm's two fingers touch scene item ``name`` (0, 1 or 2)."""
    own = set(cell.object_index[name].geoms)
    fingers = finger_geoms(cell, arm)
    model = cell.model
    touched: set[int] = set()
    for contact in data.contact[: data.ncon]:
        g1, g2 = int(contact.geom1), int(contact.geom2)
        if g1 in own and g2 in fingers:
            touched.add(int(model.geom_bodyid[g2]))
        elif g2 in own and g1 in fingers:
            touched.add(int(model.geom_bodyid[g1]))
    return len(touched)
