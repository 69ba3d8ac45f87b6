"""``EpisodeSpec``: what one episode is, as published on ``/robofollow/episode`` and stored in bags and records."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, get_args

from robofollow_ros.benchmark.types import ARMS, Layout, Task, Variant
from robofollow_ros.errors import EpisodeSpecError, RoboFollowError

_REQUIRED_TEXT = ('task_id', 'variant', 'layout', 'level', 'arm', 'instruction')


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode of one task.

    Attributes:
        task_id: evaluation task id.
        variant: ground-truth variant the task is scored with.
        layout: name of the layout the scene is built from.
        seed: trial seed (object-position perturbation, protocol §1.7).
        round: trial round (1-based).
        arm: ``left`` or ``right``, the arm the task uses.
        level: ``L0`` .. ``L3``.
        instruction: the instruction the policy is given.
        episode_id: unique id of this attempt, so that messages of an abandoned attempt are never taken for
            this one's.
    """

    task_id: str
    variant: Variant
    layout: str
    seed: int
    round: int
    arm: str
    level: str
    instruction: str
    episode_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @classmethod
    def for_trial(
        cls, task: Task, *, seed: int, round: int, variant: Variant, layout: str | None = None
    ) -> EpisodeSpec:
        """The spec of ``task`` in one round (a new ``episode_id``)."""
        return cls(
            task_id=task.task_id,
            variant=variant,
            layout=layout or task.layout,
            seed=seed,
            round=round,
            arm=task.arm,
            level=task.level_tag,
            instruction=task.instruction,
        )

    def to_dict(self) -> dict[str, Any]:
        """The spec as a JSON-ready mapping."""
        return asdict(self)

    def to_json(self) -> str:
        """The JSON text published on ``/robofollow/episode``."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_mapping(cls, value: Mapping[str, Any]) -> EpisodeSpec:
        """Parse a mapping (unknown keys ignored).

        Raises:
            EpisodeSpecError: a key is missing or has the wrong type or value.
        """
        if not isinstance(value, Mapping):
            raise EpisodeSpecError(f'episode spec must be a JSON object, got {type(value).__name__}')
        missing = [f.name for f in fields(cls) if f.name != 'episode_id' and f.name not in value]
        if missing:
            raise EpisodeSpecError(f'episode spec lacks {", ".join(missing)}')
        for key in _REQUIRED_TEXT:
            if not isinstance(value[key], str) or not value[key]:
                raise EpisodeSpecError(f'episode spec {key!r} must be a non-empty string, got {value[key]!r}')
        for key in ('seed', 'round'):
            if isinstance(value[key], bool) or not isinstance(value[key], int):
                raise EpisodeSpecError(f'episode spec {key!r} must be an integer, got {value[key]!r}')
        if value['variant'] not in get_args(Variant):
            raise EpisodeSpecError(f'episode spec variant {value["variant"]!r} is not one of {get_args(Variant)}')
        if value['arm'] not in ARMS:
            raise EpisodeSpecError(f'episode spec arm {value["arm"]!r} is not one of {ARMS}')
        episode_id = value.get('episode_id') or uuid.uuid4().hex
        if not isinstance(episode_id, str):
            raise EpisodeSpecError(f'episode spec episode_id must be a string, got {episode_id!r}')
        known = {f.name for f in fields(cls)}
        return cls(**{key: value[key] for key in known if key in value and key != 'episode_id'}, episode_id=episode_id)

    @classmethod
    def from_json(cls, text: str) -> EpisodeSpec:
        """Parse the JSON text of ``/robofollow/episode``.

        Raises:
            EpisodeSpecError: not JSON, or not a valid spec.
        """
        try:
            value = json.loads(text)
        except (TypeError, ValueError) as error:
            raise EpisodeSpecError(f'episode spec is not valid JSON: {error}') from None
        except RecursionError:
            raise EpisodeSpecError('episode spec is not valid JSON: nested too deeply to read') from None
        return cls.from_mapping(value)

    def resolve(self) -> tuple[Task, Layout]:
        """The task (in this spec's variant) and the layout to build.

        Raises:
            EpisodeSpecError: the task or layout is unknown.
        """
        from robofollow_ros.benchmark import registry

        try:
            task = registry.get_task(self.task_id, variant=self.variant)
            layout = registry.get_layout(task.scene, self.layout)
        except RoboFollowError as error:
            raise EpisodeSpecError(f'episode spec: {error}') from None
        return task, layout
