"""``SafetyLimits``: what a real cell lets a command do, and ``Intervention``: one thing the filter changed or refused.

Limits are data, built from a robot profile (or the URDF through ``SafetyLimits.for_robot``): joint position,
velocity and acceleration bounds of the 14-D layout (grippers normalised, 1 open), one TCP workspace box in the
world frame for both arms, the largest age of the measured joint state a command may start from, and the mode
that decides what happens to a target outside its joint limits (``clamp`` it to the limit, or ``refuse`` the chunk
from that row on).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from robofollow_ros.errors import SafetyError
from robofollow_ros.state_layout import ACTION_DIM, ARMS, GENERIC_LAYOUT, GRIP_COLUMNS, GRIP_INDEX

LimitMode = Literal['clamp', 'refuse']
"""What a target outside its joint limits does: ``clamp`` sends the limit instead (and reports it), ``refuse``
sends nothing from that row on."""

VelocityMode = Literal['refuse', 'stretch']
"""What a row faster than the velocity limits does: ``refuse`` sends nothing from that row on; ``stretch`` gives
that row more time (its ``time_from_start`` grows) so that no joint exceeds its limit, up to ``max_stretch``."""

LIMIT_MODES: tuple[LimitMode, ...] = ('clamp', 'refuse')
VELOCITY_MODES: tuple[VelocityMode, ...] = ('refuse', 'stretch')
POSITION_TOLERANCE = 1e-6
"""A target this far outside its limit is clamped in either mode (float32 policy outputs, rounding of limits)."""

InterventionKind = Literal[
    'malformed',
    'non_finite',
    'position_clamped',
    'position_refused',
    'too_fast',
    'row_stretched',
    'over_acceleration',
    'outside_workspace',
    'rows_refused',
    'stale_state',
    'state_gap',
    'invalid_state',
    'hold_clipped',
    'policy_silent',
]


@dataclass(frozen=True)
class Intervention:
    """One thing the safety layer changed or refused.

    Attributes:
        kind: what happened (``InterventionKind``).
        row: the chunk row it happened at (``None`` for the whole chunk or the state).
        joint: the joint (a layout name, or ``<arm>_tcp_<axis>`` for the workspace), ``None`` when not one joint.
        value: the offending value (target, speed, TCP coordinate, state age, rows refused, ...).
        limit: the bound it was held against (``nan`` when there is none).
    """

    kind: InterventionKind
    row: int | None
    joint: str | None
    value: float
    limit: float

    def describe(self) -> str:
        """One line for logs and episode results."""
        where = ''.join(
            [f' row {self.row}' if self.row is not None else '', f' {self.joint}' if self.joint is not None else '']
        )
        return f'{self.kind}{where}: {self.value:.6g} (limit {self.limit:.6g})'

    def to_dict(self) -> dict[str, object]:
        """The intervention as JSON-ready data (``nan`` limits as ``None``)."""
        return {
            'kind': self.kind,
            'row': self.row,
            'joint': self.joint,
            'value': float(self.value) if np.isfinite(self.value) else None,
            'limit': float(self.limit) if np.isfinite(self.limit) else None,
        }


@dataclass(frozen=True)
class WorkspaceBox:
    """An axis-aligned box in the world frame (m) that both TCPs must stay in."""

    lower: tuple[float, float, float]
    upper: tuple[float, float, float]

    def __post_init__(self) -> None:
        lower, upper = np.asarray(self.lower, dtype=float), np.asarray(self.upper, dtype=float)
        if lower.shape != (3,) or upper.shape != (3,):
            raise SafetyError(f'workspace box bounds need three numbers each, got {self.lower} and {self.upper}')
        if not (np.isfinite(lower).all() and np.isfinite(upper).all() and (lower < upper).all()):
            raise SafetyError(f'workspace box needs finite lower < upper on every axis, got {self.lower}, {self.upper}')

    def contains(self, point: np.ndarray) -> bool:
        """Whether ``point`` (3,) lies inside the box (boundary included); a non-finite point never does."""
        xyz = np.asarray(point, dtype=float)
        return bool(np.isfinite(xyz).all() and (xyz >= self.lower).all() and (xyz <= self.upper).all())

    def excess(self, point: np.ndarray) -> np.ndarray:
        """How far ``point`` (3,) lies outside the box on each axis (m; 0 inside, ``inf`` where not finite); for
        points (..., 3), each point's."""
        xyz = np.asarray(point, dtype=float)
        if xyz.ndim < 2 or xyz.shape[-1] != 3:
            xyz = xyz.reshape(3)
        beyond = np.maximum(np.maximum(np.asarray(self.lower) - xyz, xyz - np.asarray(self.upper)), 0.0)
        return np.where(np.isfinite(xyz), beyond, np.inf)


@dataclass(frozen=True)
class SafetyLimits:
    """Everything the filter holds a command against.

    Attributes:
        lower, upper: (14,) position bounds of the layout (radians; grippers 0..1).
        velocity: (14,) largest speed of each value (rad/s; grippers in normalised units per second).
        acceleration: (14,) largest change of speed a command may ask of each value (rad/s^2; grippers in normalised
            units per second squared), ``inf`` for no limit (the default: none on any value).
        workspace: the box both TCPs must stay in, or ``None`` for no workspace check.
        max_state_age_s: a measured state older than this is stale: the arms hold instead of moving.
        limit_mode: ``clamp`` or ``refuse`` (``LimitMode``).
        velocity_mode: ``refuse`` or ``stretch`` (``VelocityMode``).
        max_stretch: in ``stretch`` mode, the most a row's duration may grow (a multiple of the row period);
            a row needing more is refused.
        names: (14,) joint names used in interventions.
    """

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    workspace: WorkspaceBox | None = None
    acceleration: np.ndarray = field(default_factory=lambda: np.full(ACTION_DIM, np.inf))
    max_state_age_s: float = 0.2
    limit_mode: LimitMode = 'refuse'
    velocity_mode: VelocityMode = 'refuse'
    max_stretch: float = 4.0
    names: tuple[str, ...] = field(default=GENERIC_LAYOUT.names)

    def __post_init__(self) -> None:
        self._check_joint_limits()
        acceleration = np.asarray(self.acceleration, dtype=np.float64)
        if acceleration.shape != (ACTION_DIM,) or np.isnan(acceleration).any() or not (acceleration > 0.0).all():
            raise SafetyError(f'safety limits: acceleration needs {ACTION_DIM} positive numbers (inf: no limit)')
        object.__setattr__(self, 'acceleration', acceleration)
        if self.limit_mode not in LIMIT_MODES:
            raise SafetyError(f'safety limits: limit_mode must be one of {LIMIT_MODES}, got {self.limit_mode!r}')
        if self.velocity_mode not in VELOCITY_MODES:
            raise SafetyError(
                f'safety limits: velocity_mode must be one of {VELOCITY_MODES}, got {self.velocity_mode!r}'
            )
        if not (np.isfinite(self.max_state_age_s) and self.max_state_age_s > 0.0):
            raise SafetyError(f'safety limits: max_state_age_s must be positive, got {self.max_state_age_s}')
        if not (np.isfinite(self.max_stretch) and self.max_stretch >= 1.0):
            raise SafetyError(f'safety limits: max_stretch must be at least 1, got {self.max_stretch}')
        if len(self.names) != ACTION_DIM:
            raise SafetyError(f'safety limits: names needs {ACTION_DIM} joint names, got {len(self.names)}')

    def _check_joint_limits(self) -> None:
        """``lower``, ``upper`` and ``velocity`` as 14 finite numbers each, lower below upper, velocities positive."""
        for label in ('lower', 'upper', 'velocity'):
            values = np.asarray(getattr(self, label), dtype=np.float64)
            if values.shape != (ACTION_DIM,) or not np.isfinite(values).all():
                raise SafetyError(f'safety limits: {label} needs {ACTION_DIM} finite numbers, got {values.shape}')
            object.__setattr__(self, label, values)
        if not (self.lower < self.upper).all():
            column = int(np.argmax(self.lower >= self.upper))
            raise SafetyError(f'safety limits: lower must be below upper, not for {self.names[column]}')
        if not (self.velocity > 0.0).all():
            raise SafetyError('safety limits: every velocity limit must be positive')

    @classmethod
    def for_robot(
        cls,
        robot: str,
        *,
        workspace: WorkspaceBox | None,
        velocity_scale: float = 1.0,
        acceleration: float | None = None,
        gripper_velocity: float | None = None,
        max_state_age_s: float = 0.2,
        limit_mode: LimitMode = 'refuse',
        velocity_mode: VelocityMode = 'refuse',
        max_stretch: float = 4.0,
    ) -> SafetyLimits:
        """Limits from a registered robot's URDF: its joint limits, its velocity limits times ``velocity_scale``
        (a real cell usually runs well below the URDF's), the gripper speed from the finger's URDF speed and travel
        unless ``gripper_velocity`` (normalised units per second) is given; ``acceleration`` (rad/s^2) bounds every
        arm joint (not the grippers), ``None`` none.

        Raises:
            SimulationError: unknown robot, or its URDF cannot be read.
            SafetyError: a limit is not usable.
        """
        from robofollow_ros.robot.description import load_robot

        if not (np.isfinite(velocity_scale) and velocity_scale > 0.0):
            raise SafetyError(f'safety limits: velocity_scale must be positive, got {velocity_scale}')
        description = load_robot(robot)
        velocity = np.empty(ACTION_DIM)
        for arm in ARMS:
            arm_description = description.arms[arm]
            grip = GRIP_INDEX[arm]
            velocity[grip - 6 : grip] = arm_description.velocity * velocity_scale
            velocity[grip] = (
                gripper_velocity
                if gripper_velocity is not None
                else arm_description.finger_velocity / arm_description.finger_travel * velocity_scale
            )
        return cls(
            lower=description.state_lower(),
            upper=description.state_upper(),
            velocity=velocity,
            workspace=workspace,
            acceleration=arm_joint_values(np.inf if acceleration is None else acceleration),
            max_state_age_s=max_state_age_s,
            limit_mode=limit_mode,
            velocity_mode=velocity_mode,
            max_stretch=max_stretch,
            names=description.joint_layout.names,
        )


def arm_joint_values(value: float) -> np.ndarray:
    """(14,): ``value`` for every arm joint, ``inf`` for the grippers."""
    values = np.full(ACTION_DIM, float(value))
    values[GRIP_COLUMNS] = np.inf
    return values


def joint_name(limits: SafetyLimits, column: int) -> str:
    """The name of layout column ``column``."""
    return limits.names[column]


def workspace_names(arm: str) -> Sequence[str]:
    """The three names an arm's TCP coordinates carry in interventions."""
    return tuple(f'{arm}_tcp_{axis}' for axis in 'xyz')
