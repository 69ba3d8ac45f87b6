"""What a policy went for in an episode, read from its trajectory, next to what the instruction requires.

The referee judges whether the right object, relation, route or branch was chosen; for diagnostics we
also need *which* one was chosen when it was not the right one. A ``Selection`` names the choices an
instruction can ask for: the arm, the object, what was done with it (action class), the object or bowl it
ended on or next to (target), the side of that target (relation, Scene 1), the slab it was carried over
(route, Scene 3), the final orientation (Scene 3), the branch of a conditional and the second object of a
sequence (Scene 4). The observed selection uses the referee's own signals, events and thresholds.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.types import ARMS, TABLE_Z, Arm, GroundTruth, Layout, Task
from robofollow_ros.referee.config import RefereeConfig, default_config
from robofollow_ros.referee.events import close_event, first_close_arm, open_event
from robofollow_ros.referee.s1_relation import DIRECTIONS
from robofollow_ros.referee.s3_route import yaw_error, yaw_of
from robofollow_ros.referee.signals import EpisodeSignals
from robofollow_ros.referee.source import find_support

ACTION_CLASSES: dict[str, str] = {
    'pickup': 'pickup',
    'sequence_pickups': 'pickup',
    'place_relative': 'place',
    'place_on_label_route': 'place',
    'unstack_to_slot': 'place',
    'stack': 'stack',
    'stack_on_target': 'stack',
    'place_bowl': 'place_bowl',
    'push': 'push',
}
STACK_RADIUS = 0.03
PLACE_MIN_TRAVEL = 0.03
TOP_OBJECT_RADIUS = 0.02


@dataclass(frozen=True)
class Selection:
    """The choices an instruction constrains; ``None`` where a choice does not apply or was not made.

    Attributes:
        arm: the arm that acted (closed first).
        object: the object that arm took (or pushed).
        action: what was done with it: ``pickup``, ``place`` (on the table), ``stack``, ``place_bowl``,
            ``push`` or ``none``.
        target: the object, bowl or label it ended on, in or next to (the push target for a push).
        relation: Scene 1, its side of ``target`` (``left_of``, ``right_of``, ``behind``, ``in_front``).
        route: Scene 3, the slab it was carried over first.
        orientation: Scene 3, the place mode its final yaw is closest to.
        branch: Scene 4 conditionals, ``then`` or ``else`` when the choice matches one branch.
        second: Scene 4 sequences, the object the second arm took.
    """

    arm: Arm | None = None
    object: str | None = None
    action: str | None = None
    target: str | None = None
    relation: str | None = None
    route: str | None = None
    orientation: str | None = None
    branch: str | None = None
    second: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The selection as a JSON-able dict (every field, ``None`` included)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Selection:
        """Inverse of ``to_dict``; unknown keys are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})

    def constrained(self) -> tuple[str, ...]:
        """Names of the fields that are set (for a required selection: what the instruction asks for)."""
        return tuple(f.name for f in fields(self) if getattr(self, f.name) is not None)


def _route_reference(task: Task) -> str | None:
    if task.resolved_truth.route_object is None:
        return None
    return registry.route_references(task)[0]


def _mode_orientation(place_mode: str) -> str:
    return orientation_of_yaw(default_config().scene3.place_mode_yaw_deg[place_mode])


def required_selection(task: Task) -> Selection:
    """The selection the task's (resolved) ground truth asks for."""
    truth = task.resolved_truth
    conditional = task.conditional
    return Selection(
        arm=truth.arm,
        object=truth.source,
        action=ACTION_CLASSES.get(truth.action),
        target=truth.target if truth.action != 'unstack_to_slot' else None,
        relation=truth.relation,
        route=_route_reference(task),
        orientation=None if truth.place_mode is None else _mode_orientation(truth.place_mode),
        branch=None if conditional is None else ('then' if conditional.holds else 'else'),
        second=truth.then_source,
    )


def _grasped(signals: EpisodeSignals, arm: Arm, index: int, radius: float) -> str | None:
    """The object an arm closing at ``index`` takes: the top one of those nearest its EE, if within reach."""
    point = signals.ee[arm][index, :2]
    distances = np.linalg.norm(signals.candidate_xy[index] - point, axis=1)
    if distances.size == 0 or float(distances.min()) >= radius:
        return None
    close = np.flatnonzero(distances <= float(distances.min()) + TOP_OBJECT_RADIUS)
    heights = [signals.pos[signals.candidates[i]][index, 2] for i in close]
    return signals.candidates[int(close[int(np.argmax(heights))])]


def _pushed(signals: EpisodeSignals, after: int, min_motion: float, max_lift: float) -> str | None:
    best: tuple[float, str] | None = None
    for name in signals.candidates:
        xy = signals.pos[name][after:, :2]
        travel = float(np.linalg.norm(xy - xy[0], axis=1).max()) if len(xy) else 0.0
        low = float(signals.rise(name)[after:].max()) <= max_lift
        if travel >= min_motion and low and (best is None or travel > best[0]):
            best = (travel, name)
    return None if best is None else best[1]


def _push_target(signals: EpisodeSignals, source: str) -> str | None:
    start, end = signals.pos[source][0, :2], signals.pos[source][-1, :2]
    motion = end - start
    if float(np.linalg.norm(motion)) < 1e-6:
        return None
    best: tuple[float, str] | None = None
    for name in signals.candidates:
        if name == source:
            continue
        towards = signals.pos[name][0, :2] - start
        cosine = float(motion @ towards) / (float(np.linalg.norm(motion)) * float(np.linalg.norm(towards)) + 1e-12)
        if best is None or cosine > best[0]:
            best = (cosine, name)
    return None if best is None else best[1]


def _support(signals: EpisodeSignals, source: str, index: int, config: RefereeConfig) -> str | None:
    return find_support(signals, source, index, replace(config.source, support_radius=STACK_RADIUS))


def _bowl(signals: EpisodeSignals, source: str, index: int, config: RefereeConfig) -> str | None:
    here = signals.pos[source][index]
    for bowl in signals.bowls:
        rim = signals.pos[bowl][index]
        in_xy = np.linalg.norm(here[:2] - rim[:2]) <= config.scene2.bowl_radius
        if in_xy and here[2] <= rim[2] + config.scene2.bowl_height:
            return bowl
    return None


def _nearest_other(signals: EpisodeSignals, source: str, index: int, names: tuple[str, ...]) -> str | None:
    here = signals.pos[source][index, :2]
    others = [(float(np.linalg.norm(signals.pos[n][index, :2] - here)), n) for n in names if n != source]
    return min(others)[1] if others else None


def _relation(signals: EpisodeSignals, source: str, anchor: str, index: int) -> str | None:
    offset = signals.pos[source][index, :2] - signals.pos[anchor][index, :2]
    if float(np.linalg.norm(offset)) < 1e-6:
        return None
    return max(DIRECTIONS, key=lambda word: float(offset @ np.asarray(DIRECTIONS[word])))


def _route(signals: EpisodeSignals, source: str, start: int, config: RefereeConfig) -> str | None:
    x_band, y_band, lift = config.scene3.route_x_band, config.scene3.route_y_correct, config.scene3.route_lift
    rise = signals.rise(source)
    lifted = np.flatnonzero(rise >= lift)
    lifted = lifted[lifted > start]
    origin = signals.pos[source][0, :2]
    away = np.linalg.norm(signals.pos[source][lifted, :2] - origin, axis=1) >= y_band
    lifted = lifted[away]
    if lifted.size == 0:
        return None
    here = signals.pos[source][lifted]
    closest: list[tuple[float, str]] = []
    for name in signals.candidates:
        if name == source:
            continue
        there = signals.pos[name][lifted]
        in_column = np.abs(here[:, 0] - there[:, 0]) < x_band
        if in_column.any():
            closest.append((float(np.abs(here[in_column, 1] - there[in_column, 1]).min()), name))
    if not closest or min(closest)[0] >= y_band:
        return None
    return min(closest)[1]


def orientation_of_yaw(yaw_deg: float) -> str:
    """A slab's orientation as its yaw modulo a half turn, to the nearest degree (``0°`` ... ``179°``)."""
    return f'{round(yaw_deg) % 180}°'


def _orientation(signals: EpisodeSignals, source: str, config: RefereeConfig) -> str | None:
    if source not in signals.quat:
        return None
    yaw = yaw_of(signals.quat[source][-1])
    modes = config.scene3.place_mode_yaw_deg
    closest = min(modes, key=lambda mode: yaw_error(yaw, math.radians(modes[mode])))
    return orientation_of_yaw(modes[closest])


def _action(
    signals: EpisodeSignals, layout: Layout, source: str, arm: Arm, close: int, config: RefereeConfig
) -> tuple[str, str | None]:
    lift = config.source.lift
    if float(signals.rise(source).max()) < lift:
        return 'none', None
    release = open_event(signals.grip[arm], close, config.gripper.open)
    end = signals.last
    if release is None:
        return 'pickup', None
    bowl = _bowl(signals, source, end, config)
    if bowl is not None:
        return 'place_bowl', bowl
    support = _support(signals, source, end, config)
    if support is not None:
        return 'stack', support
    travel = float(np.linalg.norm(signals.pos[source][end, :2] - signals.pos[source][0, :2]))
    resting = TABLE_Z + layout.spec(source).half_height
    on_table = abs(float(signals.pos[source][end, 2]) - resting) <= config.scene1.on_table_tolerance
    if on_table and travel >= PLACE_MIN_TRAVEL:
        return 'place', None
    return 'pickup', None


def _branch(task: Task, arm: Arm | None, grasped: str | None) -> str | None:
    conditional = task.conditional
    if conditional is None or arm is None or grasped is None:
        return None
    for name, truth in (('then', conditional.then_truth), ('else', conditional.else_truth)):
        if truth.arm == arm and truth.source == grasped:
            return name
    return None


def read_selection(task: Task, signals: EpisodeSignals, *, layout: Layout, config: RefereeConfig) -> Selection:
    """What the policy went for, read from the signals the referee scores (``score_episode`` calls this).

    ``result.selection`` of ``score_episode`` is the way to get it for a trajectory.
    """
    truth: GroundTruth = task.resolved_truth
    push = truth.action == 'push'
    threshold = config.gripper.push_close if push else config.gripper.close
    closes = {arm: close_event(signals.grip[arm], threshold) for arm in ARMS}
    other: Arm = 'right' if truth.arm == 'left' else 'left'
    arm = first_close_arm(truth.arm, closes[truth.arm], closes[other])
    if arm is None:
        return Selection(action='none')
    close = closes[arm]
    assert close is not None
    if push:
        pushed = _pushed(signals, close, config.scene2.push_setup_min_motion, config.scene2.push_setup_max_lift)
        if pushed is not None:
            return Selection(arm=arm, object=pushed, action='push', target=_push_target(signals, pushed))
    grasped = _grasped(signals, arm, close, config.source.radius)
    if grasped is None:
        return Selection(arm=arm, action='none')
    action, target = _action(signals, layout, grasped, arm, close, config)
    selection: dict[str, Any] = {'arm': arm, 'object': grasped, 'action': action, 'target': target}
    if truth.scene == 1 and action == 'place':
        anchor = _nearest_other(signals, grasped, signals.last, signals.candidates)
        selection['target'] = anchor
        selection['relation'] = None if anchor is None else _relation(signals, grasped, anchor, signals.last)
    if truth.scene == 3:
        labels = tuple(n for n in signals.pos if layout.spec(n).kind == 'label')
        if action == 'place':
            selection['target'] = _nearest_other(signals, grasped, signals.last, labels)
        selection['route'] = _route(signals, grasped, close, config)
        selection['orientation'] = _orientation(signals, grasped, config)
    selection['branch'] = _branch(task, arm, grasped)
    if truth.then_arm is not None:
        second_close = closes[truth.then_arm] if truth.then_arm != arm else None
        if second_close is not None:
            selection['second'] = _grasped(signals, truth.then_arm, second_close, config.source.radius)
    return Selection(**selection)


def mismatches(observed: Selection, required: Selection) -> tuple[str, ...]:
    """The constrained fields where ``observed`` differs from ``required``, in field order."""
    return tuple(name for name in required.constrained() if getattr(observed, name) != getattr(required, name))
