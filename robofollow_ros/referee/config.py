"""The referee's constants: ``config/referee.yaml`` as typed, immutable sections.

The packaged default is found next to the source tree (editable installs) or under
``share/robofollow/config`` (installed package). An override file replaces only the keys it names.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

from robofollow_ros.errors import RoboFollowError
from robofollow_ros.textfiles import read_yaml

CONFIG_NAME = 'referee.yaml'


@dataclass(frozen=True)
class GripperConfig:
    """Gripper event thresholds (protocol §4.2)."""

    close: float
    push_close: float
    open: float
    regrasp: float


@dataclass(frozen=True)
class StageMaxima:
    """Maximum score of each stage per stage structure (protocol §4.3)."""

    pickup: tuple[float, ...]
    three_stage: tuple[float, ...]
    scene3: tuple[float, ...]


@dataclass(frozen=True)
class SourceConfig:
    """Stage 1 source selection (protocol §4.4)."""

    radius: float
    lift: float
    lift_s2_pickup: float
    support_radius: float
    support_drop: float


@dataclass(frozen=True)
class Scene1Config:
    """Scene 1 relative placement and final layout (protocol §4.5, §4.7)."""

    fingertip_offset: tuple[float, ...]
    relation_max_distance: float
    relation_min_distance: float
    relation_min_cos: float
    on_table_tolerance: float
    lift: float
    final_window: float
    final_window_frames: int
    final_min_duration: float


@dataclass(frozen=True)
class Scene2Config:
    """Scene 2 push, stack, bowl and retry bonus (protocol §4.5, §4.7)."""

    push_setup_max_lift: float
    push_setup_min_motion: float
    push_setup_intent_radius: float
    push_setup_exec_radius: float
    push_tcp_contact_offset: float
    push_contact_height_tolerance: float
    push_min_cos: float
    push_intent: float
    push_exec: float
    retry_push: float
    stack_lift: float
    stack_ee_radius: float
    stack_min_height: float
    stack_place_radius: float
    stack_drop_height: float
    bowl_radius: float
    bowl_height: float
    bowl_max_lift: float


@dataclass(frozen=True)
class Scene3Config:
    """Scene 3 route and orientation (protocol §4.5, §4.6)."""

    route_lift: float
    route_x_band: float
    route_y_correct: float
    route_y_wrong: float
    orientation_intent_deg: float
    orientation_exec_deg: float
    label_edge: float
    place_mode_yaw_deg: dict[str, float]


@dataclass(frozen=True)
class Scene4Config:
    """Scene 4 stack, unstack, support-lift penalty and sequences (protocol §4.4, §4.5, §4.7)."""

    stack_gap: float
    stack_intent_xy: float
    stack_intent_z: float
    stack_exec_xy: float
    stack_exec_z: float
    unstack_clearance: float
    unstack_intent_xy: float
    unstack_intent_z: float
    unstack_exec_xy: float
    unstack_exec_z: float
    support_lift: float
    support_lift_penalty: float
    sequence_radius: float
    sequence_lift: float


@dataclass(frozen=True)
class OperationArea:
    """The box the idle arm must stay out of (protocol §1.4)."""

    x: tuple[float, ...]
    y: tuple[float, ...]
    z: tuple[float, ...]


@dataclass(frozen=True)
class FinishConfig:
    """Finish stage (protocol §4.6); per-scene radii keyed by scene number."""

    window: float
    window_frames: int
    lateness: float
    lateness_frames: int
    completion_lift: float
    home_radius: dict[int, float]
    leave_radius: dict[int, float]
    operation_area: OperationArea


@dataclass(frozen=True)
class AdjustmentConfig:
    """Bonuses, penalties and the full-rate threshold (protocol §4.7)."""

    bonus: float
    bonus_below: float
    wrong_arm_penalty: float
    full_rate: float


@dataclass(frozen=True)
class CompletionConfig:
    """Completion Rate thresholds (protocol §4.8)."""

    pickup_total: float


@dataclass(frozen=True)
class GapConfig:
    """How signal dropouts are reported and when too little is left to score."""

    report_longer_than: float
    min_valid_frames: int


@dataclass(frozen=True)
class VariantRules:
    """The rules that differ between the ``published`` and the ``corrected`` variant (docs/scoring.md).

    Attributes:
        frame_windows: count recorded frames for the frame windows (finish window and lateness, S1 final
            window) when the trajectory's frames are executed rows; otherwise use the seconds.
        nearest_by_name: break nearest-object ties by object name (else: the first in recording order).
        push_setup_needs_intent: S2 push setup Execution requires its Intent (and is gated by it).
        bowl_exec_height_cap: S2 bowl Execution applies the height cap at the opening and the end.
        route_after_close: the S3 route stage scans only samples after the designated arm's close.
        s4_pickup_finish_at_close: an S4 pickup whose source never lifts anchors the finish at the close.
        sequence_gating: gate the S4 sequence stages (else: the raw stages are summed).
        sequence_match_inclusive: S4 sequence match distance ``<=`` the radius (else ``<``).
    """

    frame_windows: bool
    nearest_by_name: bool
    push_setup_needs_intent: bool
    bowl_exec_height_cap: bool
    route_after_close: bool
    s4_pickup_finish_at_close: bool
    sequence_gating: bool
    sequence_match_inclusive: bool


@dataclass(frozen=True)
class RefereeConfig:
    """Every scoring constant of the referee. Build it with :func:`load_config`."""

    metric_version: str
    frame_period: float
    time_tolerance: float
    score_tolerance: float
    table_z: float
    gripper: GripperConfig
    stages: StageMaxima
    source: SourceConfig
    scene1: Scene1Config
    scene2: Scene2Config
    scene3: Scene3Config
    scene4: Scene4Config
    finish: FinishConfig
    adjustments: AdjustmentConfig
    completion: CompletionConfig
    gaps: GapConfig
    variants: dict[str, VariantRules]

    def rules(self, variant: str) -> VariantRules:
        """The rule switches of ``variant``.

        Raises:
            RoboFollowError: the configuration has no such variant.
        """
        try:
            return self.variants[variant]
        except KeyError:
            known = ', '.join(self.variants)
            raise RoboFollowError(f'referee config has no rules for variant {variant!r} (known: {known})') from None


def default_config_path() -> Path:
    """Return the packaged ``referee.yaml``.

    Raises:
        RoboFollowError: if neither the source tree nor the installed share directory holds it.
    """
    from robofollow_ros.resources import share_file

    try:
        return share_file(f'config/{CONFIG_NAME}')
    except RoboFollowError as error:
        raise RoboFollowError(f'referee config {error}') from None


def _read_yaml(path: Path) -> dict[str, Any]:
    data = read_yaml(path, what='referee config')
    if not isinstance(data, dict):
        raise RoboFollowError(f'referee config {path} must be a mapping of sections')
    return data


def _merge(cls: type, base: Mapping[str, Any], override: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Replace the keys of ``base`` named in ``override``; sections merge key by key, tables are replaced whole."""
    hints = typing.get_type_hints(cls)
    merged = dict(base)
    for key, value in override.items():
        if key not in hints:
            raise RoboFollowError(f'unknown referee config key {where}{key}')
        kind = hints[key]
        if (
            isinstance(kind, type)
            and is_dataclass(kind)
            and isinstance(value, Mapping)
            and isinstance(base.get(key), Mapping)
        ):
            merged[key] = _merge(kind, base[key], value, f'{where}{key}.')
        else:
            merged[key] = value
    return merged


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RoboFollowError(f'referee config {where} must be a finite number, got {value!r}')
    return float(value)


def _convert(kind: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(kind)
    if kind is bool:
        if not isinstance(value, bool):
            raise RoboFollowError(f'referee config {where} must be true or false, got {value!r}')
        return value
    if kind is float:
        return _number(value, where)
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise RoboFollowError(f'referee config {where} must be an integer, got {value!r}')
        return value
    if kind is str:
        if not isinstance(value, str):
            raise RoboFollowError(f'referee config {where} must be a string, got {value!r}')
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise RoboFollowError(f'referee config {where} must be a list of numbers, got {value!r}')
        return tuple(_number(item, f'{where}[{i}]') for i, item in enumerate(value))
    if origin is dict:
        key_kind, value_kind = typing.get_args(kind)
        if not isinstance(value, Mapping):
            raise RoboFollowError(f'referee config {where} must be a mapping, got {value!r}')
        return {
            _convert(key_kind, key, f'{where} key'): _convert(value_kind, item, f'{where}.{key}')
            for key, item in value.items()
        }
    return _section(kind, value, f'{where}.')


def _section(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, Mapping):
        raise RoboFollowError(f'referee config {where or "top level"} must be a mapping')
    hints = typing.get_type_hints(cls)
    names = [f.name for f in fields(cls)]
    unknown = sorted(set(data) - set(names))
    missing = [name for name in names if name not in data]
    if unknown:
        raise RoboFollowError(f'unknown referee config key(s) {", ".join(where + str(k) for k in unknown)}')
    if missing:
        raise RoboFollowError(f'referee config lacks {", ".join(where + k for k in missing)}')
    return cls(**{name: _convert(hints[name], data[name], f'{where}{name}') for name in names})


def load_config(path: str | Path | None = None) -> RefereeConfig:
    """Load the packaged referee constants, with the keys of an optional override file replaced.

    Args:
        path: a YAML file with any subset of the sections and keys of ``config/referee.yaml``.

    Returns:
        The complete, validated configuration.

    Raises:
        RoboFollowError: unreadable file, unknown key, missing key or a value of the wrong type.
    """
    data = _read_yaml(default_config_path())
    if path is not None:
        data = _merge(RefereeConfig, data, _read_yaml(Path(path)), '')
    return _section(RefereeConfig, data, '')


_DEFAULT: RefereeConfig | None = None


def default_config() -> RefereeConfig:
    """The packaged configuration, loaded once per process."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = load_config()
    return _DEFAULT
