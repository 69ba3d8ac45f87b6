"""Data types of the benchmark registry: objects, layouts, ground truth and tasks.

Everything here is immutable and pure Python so that the referee, the simulator, the expert and the
reports read one description of the protocol. Positions are metres in the protocol's ``world`` frame
(table top z = 0.74, +x = robot's right, +y = away from the robot, +z up).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from robofollow_ros.state_layout import ARMS as ARMS
from robofollow_ros.state_layout import Arm as Arm

Shape = Literal['sphere', 'box', 'cylinder', 'bowl', 'label']
Kind = Literal['object', 'bowl', 'label']
PerturbMode = Literal['both', 'up', 'down', 'none']
Split = Literal['train', 'eval']
Variant = Literal['published', 'corrected']

TABLE_Z = 0.74


def other_arm(arm: Arm) -> Arm:
    """Return the arm that is not ``arm``."""
    return 'right' if arm == 'left' else 'left'


@dataclass(frozen=True)
class Perturbation:
    """Uniform perturbation of a nominal xy position (protocol §2.0).

    ``both``: x += U(-rx, rx), y += U(-ry, ry); ``up``: y += U(0, ry) (away from the robot);
    ``down``: y -= U(0, ry) (toward the robot); ``none``: no perturbation.
    """

    rx: float = 0.0
    ry: float = 0.0
    mode: PerturbMode = 'none'


@dataclass(frozen=True)
class ObjectSpec:
    """One physical item of a scene.

    ``size`` depends on ``shape``: sphere ``(r,)``; box ``(hx, hy, hz)`` half-extents; cylinder
    ``(r, half_height)`` upright; bowl ``(outer_radius, height)``; label ``(hx, hy, hz)`` half-extents.
    """

    name: str
    shape: Shape
    size: tuple[float, ...]
    rgba: tuple[float, float, float, float]
    mass: float = 0.1
    friction: float = 1.0
    static: bool = False
    perturb: Perturbation = field(default_factory=Perturbation)

    @property
    def kind(self) -> Kind:
        """``object`` for graspable items, ``bowl`` or ``label`` for receptacles and target squares."""
        if self.shape == 'bowl':
            return 'bowl'
        if self.shape == 'label':
            return 'label'
        return 'object'

    @property
    def half_height(self) -> float:
        """Half of the item's vertical extent when it stands upright (protocol §4.5 S4 stack)."""
        if self.shape == 'sphere':
            return self.size[0]
        if self.shape in ('box', 'label'):
            return self.size[2]
        if self.shape == 'cylinder':
            return self.size[1]
        return self.size[1] / 2.0


@dataclass(frozen=True)
class Placement:
    """Where one object starts in a layout.

    ``xy`` is the nominal (unperturbed) position. ``on`` names the object it is stacked on (S4) and
    ``inside`` the bowl it lies in (S4 cube in bowl); both ``None`` for items standing on the table.
    ``slot`` is the S4 slot number (1-6) or ``None`` outside Scene 4.
    """

    spec: ObjectSpec
    xy: tuple[float, float]
    on: str | None = None
    inside: str | None = None
    slot: int | None = None

    @property
    def name(self) -> str:
        """The object's name."""
        return self.spec.name


@dataclass(frozen=True)
class Layout:
    """A physical arrangement of one scene family: a training configuration or an evaluation layout."""

    name: str
    scene: int
    placements: tuple[Placement, ...]
    description: str = ''

    def placement(self, name: str) -> Placement:
        """Return the placement of object ``name``; raises ``UnknownObjectError`` if absent."""
        for placement in self.placements:
            if placement.name == name:
                return placement
        from robofollow_ros.errors import UnknownObjectError

        raise UnknownObjectError(f'object {name!r} is not in layout {self.name!r}')

    def spec(self, name: str) -> ObjectSpec:
        """Return the object spec of ``name``."""
        return self.placement(name).spec

    @cached_property
    def object_names(self) -> tuple[str, ...]:
        """Names of every item in the layout, in placement order."""
        return tuple(p.name for p in self.placements)


@dataclass(frozen=True)
class GroundTruth:
    """What the referee scores: the one behaviour that is correct for a task in its layout.

    ``action`` is one of ``pickup``, ``place_relative`` (S1), ``stack``, ``push``, ``place_bowl`` (S2),
    ``place_on_label_route`` (S3), ``unstack_to_slot``, ``stack_on_target``, ``sequence_pickups`` (S4).
    Fields that an action does not use stay ``None``. ``route_partner`` (Scene 3) is the slab paired with
    ``route_object``: "via X" passes over X and not its partner, "around X" the other way round; the
    variant decides the pairing (by name or by column, see ``benchmark.scene3``).
    """

    scene: int
    action: str
    arm: Arm
    source: str
    target: str | None = None
    relation: str | None = None
    route: str | None = None
    route_object: str | None = None
    place_mode: str | None = None
    slot: int | None = None
    then_arm: Arm | None = None
    then_source: str | None = None
    route_partner: str | None = None

    @property
    def is_pickup_like(self) -> bool:
        """True for actions whose completion is judged by totals >= 0.8 (protocol §4.8)."""
        return self.action.startswith('pickup') or self.action == 'sequence_pickups'


@dataclass(frozen=True)
class Conditional:
    """An if/else instruction (S4): the predicate, both branches, and whether the predicate holds."""

    predicate: str
    holds: bool
    then_truth: GroundTruth
    else_truth: GroundTruth

    @property
    def resolved(self) -> GroundTruth:
        """The branch that is true in the layout."""
        return self.then_truth if self.holds else self.else_truth


@dataclass(frozen=True)
class Task:
    """A training label (``level`` None) or an evaluation task (``level`` 0-3).

    ``instruction`` is the one evaluation instruction (or, for a training label, the canonical first
    paraphrase); ``paraphrases`` holds every training paraphrase (just the instruction for evaluation
    tasks). ``reference`` is the correct referring expression for the source object in ``layout``.
    ``config`` is the training scene configuration the layout derives from (the six of protocol §2.0).
    ``label`` is the training label an evaluation task is built on (``None`` for new compositions).
    ``flags`` marks known quirks machine-readably (e.g. ``ambiguous_reference``) and ``note`` explains them.
    """

    task_id: str
    scene: int
    level: int | None
    layout: str
    config: str
    instruction: str
    truth: GroundTruth
    paraphrases: tuple[str, ...] = ()
    reference: str = ''
    conditional: Conditional | None = None
    label: str | None = None
    flags: tuple[str, ...] = ()
    note: str = ''

    @property
    def split(self) -> Split:
        """``train`` for training labels (no level), ``eval`` for evaluation tasks."""
        return 'train' if self.level is None else 'eval'

    @property
    def resolved_truth(self) -> GroundTruth:
        """What is performed and scored: the true branch of a conditional, else ``truth``."""
        return self.conditional.resolved if self.conditional is not None else self.truth

    @property
    def arm(self) -> Arm:
        """The designated (first-acting) arm."""
        return self.truth.arm

    @property
    def level_tag(self) -> str:
        """``L0``-``L3`` for evaluation tasks, ``train`` for training labels."""
        return 'train' if self.level is None else f'L{self.level}'
