"""Objects in the gripper: while a grasped object's tag is unseen, its pose follows the TCP that holds it.

A tag on top is invisible while the object is grasped or lifted (issue 21's study: 0 of 18 detections), so a
tracker alone would hold the object at its last seen pose and the referee would never see a lift. The rule:

* a **grasp** starts when an arm's gripper closes (open -> closed between two updates) with its TCP within
  ``grasp_radius`` of the object's last known position, and the object's tag is not seen on that update or later;
  the offset (the object's pose in the TCP's frame) is taken from the TCP and the object's last known pose at the
  closing, so what the arm does afterwards (a lift) moves the object with it;
* while the grasp lasts and the tag stays unseen, the object's pose is the TCP's pose composed with that offset;
* the grasp ends when that gripper opens or the tag is seen again (its seen pose wins at once). At an opening
  the object falls onto what is under it: with a ``landing`` rule (the cell tracker's: the highest known surface
  under the released pose) its landing pose is given once (``released``) and held until the tag is seen, which a
  lifting arm uncovers 0.3-1 s later; without one it has no pose until then. (The cell tracker does not count as
  seen again a tag that is the held object's own, lifted, seen where a resting plane would put it:
  ``cell_tracker.LIFTED_SIGHTING``.)
* a **push**: a closed gripper that holds nothing moves an object whose tag it hides the way its fingers would, with
  a ``push`` rule (the cell tracker's: the fingers keep out of the object's footprint), at every TCP pose; the
  gripper over a pushed object hides its tag for the whole push (2-3 s), which the referee would otherwise bridge in
  a straight line from the last sighting to the next.

Pure: poses in, poses out (``GraspFollower.update``); the node feeds it TCP poses and gripper states.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

Source = Literal['marker', 'gripper', 'released', 'pushed']
DEFAULT_GRASP_RADIUS = 0.06
"""Metres between the TCP and an object's centre for a closing gripper to take it (the largest object's half
width plus the pads' reach)."""


def matrix_from_quaternion(quat: np.ndarray) -> np.ndarray:
    """The rotation matrix of a unit quaternion (w, x, y, z)."""
    w, x, y, z = (float(v) for v in np.asarray(quat, dtype=np.float64) / np.linalg.norm(quat))
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


@dataclass(frozen=True)
class RigidPose:
    """A pose in the world: ``position`` (3,) in metres, ``rotation`` (3, 3) body-to-world."""

    position: np.ndarray
    rotation: np.ndarray = field(repr=False)

    @classmethod
    def from_quaternion(cls, position: np.ndarray, quat: np.ndarray) -> RigidPose:
        """A pose from a position and a (w, x, y, z) quaternion."""
        return cls(np.asarray(position, dtype=np.float64).reshape(3), matrix_from_quaternion(quat))

    @classmethod
    def from_yaw(cls, x: float, y: float, z: float, yaw: float) -> RigidPose:
        """An upright pose turned by ``yaw`` about the vertical (what the tag tracker measures)."""
        c, s = np.cos(yaw), np.sin(yaw)
        return cls(np.array([x, y, z]), np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]))

    def compose(self, other: RigidPose) -> RigidPose:
        """This pose followed by ``other`` expressed in this pose's frame."""
        return RigidPose(self.position + self.rotation @ other.position, self.rotation @ other.rotation)

    def inverse(self) -> RigidPose:
        """The inverse transform."""
        return RigidPose(-self.rotation.T @ self.position, self.rotation.T)

    def quaternion(self) -> np.ndarray:
        """The rotation as a (w, x, y, z) quaternion, w >= 0."""
        from robofollow_ros.robot.kinematics import quaternion_from_matrix

        return quaternion_from_matrix(self.rotation)


@dataclass(frozen=True)
class Followed:
    """An object's pose this update and where it came from: its tag (``marker``), the TCP holding it (``gripper``,
    with the arm), where it lands when that TCP lets go (``released``), or where a closed gripper pushed it
    (``pushed``, with the arm)."""

    pose: RigidPose
    source: Source
    arm: str | None = None


@dataclass(frozen=True)
class _Grasp:
    arm: str
    offset: RigidPose


Landing = Callable[[str, RigidPose], RigidPose | None]
"""Where an object released at a pose comes to rest (None: unknown)."""
Push = Callable[[str, RigidPose, RigidPose, np.ndarray], RigidPose | None]
"""Where a closed gripper's TCP at the second pose, having moved by the (2,) horizontal step since its pose before,
puts an object at the first (None: it does not move it)."""


class GraspFollower:
    """Objects' poses through grasps (see the module docstring), for any number of objects and arms.

    Args:
        grasp_radius: metres between a closing TCP and an object's centre for the grasp to take it.
        landing: where a released object comes to rest, or None (no pose until its tag is seen).
        push: where a closed gripper moves an object it touches, or None (no pushes followed).
    """

    def __init__(
        self, *, grasp_radius: float = DEFAULT_GRASP_RADIUS, landing: Landing | None = None, push: Push | None = None
    ) -> None:
        self.grasp_radius = grasp_radius
        self.landing = landing
        self.push = push
        self._hidden: set[str] = set()
        """Objects not seen at the last update (a push moves only what the camera does not see)."""
        self._pushers: dict[str, RigidPose] = {}
        """Each arm's TCP pose at the last push considered."""
        self._landed: dict[str, tuple[str, RigidPose]] = {}
        self._last: dict[str, RigidPose] = {}
        self._grasps: dict[str, _Grasp] = {}
        self._closed: dict[str, bool] = {}
        # The TCP pose at each arm's last closing (open -> closed), kept while it stays closed.
        self._closed_at: dict[str, RigidPose] = {}
        self._known_at_closing: dict[str, dict[str, RigidPose]] = {}

    def held_by(self, name: str) -> str | None:
        """The arm holding ``name`` now, or None."""
        grasp = self._grasps.get(name)
        return grasp.arm if grasp is not None else None

    def followed(self, name: str, tcps: Mapping[str, RigidPose]) -> RigidPose | None:
        """Where ``name`` is while an arm in ``tcps`` holds it (the TCP composed with the grasp's offset), or None."""
        grasp = self._grasps.get(name)
        if grasp is None or grasp.arm not in tcps:
            return None
        return tcps[grasp.arm].compose(grasp.offset)

    def last(self, name: str) -> RigidPose | None:
        """The last pose given for ``name`` (seen or followed), or None."""
        return self._last.get(name)

    def update(
        self,
        seen: Mapping[str, RigidPose | None],
        tcps: Mapping[str, RigidPose],
        closed: Mapping[str, bool],
    ) -> dict[str, Followed]:
        """One update: ``seen`` maps every tracked object to its pose from its tag this frame (None: not seen or
        refused), ``tcps`` and ``closed`` each arm's TCP pose and whether its gripper is closed. Returns the poses
        to publish (an object without one is absent)."""
        for arm, is_closed in closed.items():
            self._gripper(arm, is_closed, tcps.get(arm))
        unseen = [name for name, pose in seen.items() if pose is None and name not in self._grasps]
        self._start_grasps(unseen)
        out: dict[str, Followed] = {}
        for name, pose in seen.items():
            item = self._seen(name, pose) if pose is not None else self._unseen(name, tcps)
            if item is not None:
                out[name] = item
        self._hidden = {name for name, pose in seen.items() if pose is None}
        for arm, tcp in tcps.items():
            for name, item in self.pushed(arm, tcp).items():
                out.setdefault(name, item)
        return out

    def pushed(self, arm: str, tcp: RigidPose) -> dict[str, Followed]:
        """The hidden objects ``arm``'s gripper, closed and holding nothing, pushes with its TCP at ``tcp``: each
        moved where the ``push`` rule puts it (and known there from now on)."""
        before = self._pushers.get(arm)
        self._pushers[arm] = tcp
        if self.push is None or not self._closed.get(arm, False) or any(g.arm == arm for g in self._grasps.values()):
            return {}
        step = np.zeros(2) if before is None else tcp.position[:2] - before.position[:2]
        out: dict[str, Followed] = {}
        for name in sorted(self._hidden):
            last = self._last.get(name)
            if last is None or name in self._grasps:
                continue
            moved = self.push(name, last, tcp, step)
            if moved is not None:
                self._last[name] = moved
                out[name] = Followed(moved, 'pushed', arm)
        return out

    def _gripper(self, arm: str, is_closed: bool, tcp: RigidPose | None) -> None:
        """``arm``'s gripper this update: a closing notes the TCP and what was known then; an opening releases what
        it held."""
        was_closed = self._closed.get(arm, False)
        if is_closed and not was_closed and tcp is not None:
            self._closed_at[arm] = tcp
            self._known_at_closing[arm] = dict(self._last)
        elif not is_closed:
            self._closed_at.pop(arm, None)
            self._known_at_closing.pop(arm, None)
            for name in [n for n, g in self._grasps.items() if g.arm == arm]:
                del self._grasps[name]
                self._release(name, arm)
        self._closed[arm] = is_closed

    def _seen(self, name: str, pose: RigidPose) -> Followed:
        """``name``'s tag seen at ``pose``: that pose wins over any grasp or landing."""
        self._grasps.pop(name, None)
        self._landed.pop(name, None)
        self._last[name] = pose
        return Followed(pose, 'marker')

    def _unseen(self, name: str, tcps: Mapping[str, RigidPose]) -> Followed | None:
        """``name`` unseen: where it landed (once), where the TCP holding it puts it, or nothing."""
        if name in self._landed:
            arm, landed = self._landed.pop(name)
            return Followed(landed, 'released', arm)
        grasp = self._grasps.get(name)
        if grasp is None or grasp.arm not in tcps:
            return None
        followed = tcps[grasp.arm].compose(grasp.offset)
        self._last[name] = followed
        return Followed(followed, 'gripper', grasp.arm)

    def _release(self, name: str, arm: str) -> None:
        """``arm`` let ``name`` go: its landing pose (given once, then known) or, without one, no pose at all."""
        released = self._last.pop(name, None)
        landed = None if released is None or self.landing is None else self.landing(name, released)
        if landed is not None:
            self._last[name] = landed
            self._landed[name] = (arm, landed)

    def _start_grasps(self, unseen: list[str]) -> None:
        """Each closed arm that holds nothing takes the nearest unseen object that was within reach when it
        closed."""
        holding = {g.arm for g in self._grasps.values()}
        for arm, tcp in self._closed_at.items():
            if arm in holding:
                continue
            known = self._known_at_closing.get(arm, {})
            reach = [
                (float(np.linalg.norm(known[name].position - tcp.position)), name)
                for name in unseen
                if name in known and name not in self._grasps
            ]
            reach = [item for item in reach if item[0] <= self.grasp_radius]
            if reach:
                name = min(reach)[1]
                self._grasps[name] = _Grasp(arm, tcp.inverse().compose(known[name]))
