"""The public face of the benchmark registry: tasks, layouts, objects, seeds and entropy by name.

Everything is generated once from the scene modules and cached. Lookups raise the registry errors of
``robofollow_ros.errors`` with a helpful message (close matches, the valid choices).
"""

from __future__ import annotations

import difflib
import fnmatch
from functools import cache

from robofollow_ros.benchmark import scene1, scene2, scene3, scene4, scene4_tasks
from robofollow_ros.benchmark.constants import DEFAULT_VARIANT, TRAINING_CONFIGS
from robofollow_ros.benchmark.entropy import entropy_of_configs
from robofollow_ros.benchmark.entropy import libero_reference_entropy as _libero
from robofollow_ros.benchmark.parsing import parse_level, parse_scene, parse_variant
from robofollow_ros.benchmark.seeds import perturbed_positions, seed_offset, trial_seed
from robofollow_ros.benchmark.types import Layout, ObjectSpec, Task, Variant
from robofollow_ros.errors import RegistryError, UnknownLayoutError, UnknownTaskError

__all__ = [
    'eval_tasks',
    'get_layout',
    'get_task',
    'layout_names',
    'layout_of',
    'libero_reference_entropy',
    'matches_pattern',
    'parse_level',
    'parse_scene',
    'perturbed_positions',
    'route_references',
    'scene_entropy',
    'scene_objects',
    'seed_offset',
    'training_config_counts',
    'training_labels',
    'trial_seed',
]

_OBJECTS: dict[int, dict[str, ObjectSpec]] = {
    1: scene1.OBJECTS,
    2: scene2.OBJECTS,
    3: scene3.OBJECTS,
    4: scene4.OBJECTS,
}
_LAYOUTS: dict[int, tuple[Layout, ...]] = {
    1: scene1.LAYOUTS,
    2: scene2.LAYOUTS,
    3: scene3.LAYOUTS,
    4: scene4.LAYOUTS,
}


@cache
def _training() -> tuple[Task, ...]:
    return (
        scene1.training_labels() + scene2.training_labels() + scene3.training_labels() + scene4_tasks.training_labels()
    )


@cache
def _evaluation(variant: Variant) -> tuple[Task, ...]:
    return (
        scene1.evaluation_tasks()
        + scene2.evaluation_tasks(variant=variant)
        + scene3.evaluation_tasks(variant=variant)
        + scene4_tasks.evaluation_tasks()
    )


@cache
def _index(variant: Variant) -> dict[str, Task]:
    tasks = _training() + _evaluation(variant)
    index = {task.task_id: task for task in tasks}
    if len(index) != len(tasks):
        raise RegistryError('duplicate task IDs in the registry')
    return index


def get_task(task_id: str, *, variant: Variant = DEFAULT_VARIANT) -> Task:
    """The training label or evaluation task ``task_id``.

    Args:
        task_id: an Appendix A evaluation ID (``L0_...``-``L3_...``) or a training label ID.
        variant: ``published`` (default) or ``corrected``; it decides the Scene 2 L3 truth (``scene2``) and the
            Scene 3 route partner (``scene3``).

    Raises:
        UnknownTaskError: no task has this ID (the message lists close matches).
    """
    index = _index(parse_variant(variant))
    try:
        return index[task_id]
    except KeyError:
        close = difflib.get_close_matches(str(task_id), list(index), n=3, cutoff=0.6)
        hint = f'; did you mean {", ".join(close)}?' if close else '; list them with `robofollow tasks`'
        raise UnknownTaskError(f'unknown task {task_id!r}{hint}') from None


def matches_pattern(task_id: str, pattern: str | None) -> bool:
    """True if ``task_id`` matches ``pattern``: a glob if it holds ``*?[``, else a substring; ``None`` matches all."""
    if pattern is None:
        return True
    if any(char in pattern for char in '*?['):
        return fnmatch.fnmatchcase(task_id, pattern)
    return pattern in task_id


def eval_tasks(
    *,
    scene: int | str | None = None,
    level: int | str | None = None,
    variant: Variant = DEFAULT_VARIANT,
    pattern: str | None = None,
) -> list[Task]:
    """Evaluation tasks in Appendix A order, optionally filtered.

    Args:
        scene: 1-4 (or ``'s1'``, ``'scene1'``); ``None`` for all.
        level: 0-3 (or ``'L0'``); ``None`` for all.
        variant: ``published`` (default) or ``corrected`` (see ``get_task``).
        pattern: glob (if it holds ``*?[``) or substring matched against the task ID.
    """
    wanted_scene = None if scene is None else parse_scene(scene)
    wanted_level = None if level is None else parse_level(level)
    return [
        task
        for task in _evaluation(parse_variant(variant))
        if (wanted_scene is None or task.scene == wanted_scene)
        and (wanted_level is None or task.level == wanted_level)
        and matches_pattern(task.task_id, pattern)
    ]


def training_labels(
    *, scene: int | str | None = None, config: str | None = None, pattern: str | None = None
) -> list[Task]:
    """The 75 training labels in protocol order, optionally filtered by scene, configuration or ID pattern.

    Raises:
        RegistryError: ``config`` is not one of the six training configurations.
    """
    wanted_scene = None if scene is None else parse_scene(scene)
    if config is not None and config not in TRAINING_CONFIGS:
        raise RegistryError(f'unknown training configuration {config!r}: expected one of {", ".join(TRAINING_CONFIGS)}')
    return [
        task
        for task in _training()
        if (wanted_scene is None or task.scene == wanted_scene)
        and (config is None or task.config == config)
        and matches_pattern(task.task_id, pattern)
    ]


def layout_names(scene: int | str) -> tuple[str, ...]:
    """Canonical layout names of a scene."""
    return tuple(layout.name for layout in _LAYOUTS[parse_scene(scene)])


def get_layout(scene: int | str, name: str) -> Layout:
    """The layout ``name`` of ``scene``.

    ``.`` and ``_`` are interchangeable in the name, so ``scene4.1`` (Appendix A) and ``scene4_1`` (the
    training configuration) are the same layout; the returned layout carries the canonical name.

    Raises:
        UnknownSceneError: ``scene`` is not 1-4.
        UnknownLayoutError: the scene has no such layout.
    """
    number = parse_scene(scene)
    by_name = {layout.name: layout for layout in _LAYOUTS[number]}
    for candidate in (name, name.replace('.', '_'), name.replace('_', '.')):
        if candidate in by_name:
            return by_name[candidate]
    raise UnknownLayoutError(f'scene {number} has no layout {name!r}: expected one of {", ".join(by_name)}')


def layout_of(task: Task) -> Layout:
    """The layout a task is set in."""
    return get_layout(task.scene, task.layout)


def route_references(task: Task) -> tuple[str, str]:
    """Scene 3: the (correct, wrong) slab of the route stage in the task's layout (protocol §4.5).

    "via X" must pass over X and not over its partner; "around X" the other way round. The partner is
    part of the task's truth and depends on the variant it was built for (``scene3.partner``).

    Raises:
        RegistryError: the task has no route (not a Scene 3 task).
    """
    if task.truth.route_object is None:
        raise RegistryError(f'task {task.task_id!r} has no route constraint')
    return scene3.route_references(task.truth)


def scene_objects(scene: int | str) -> dict[str, ObjectSpec]:
    """Every item of a scene family by name (objects are specified per scene: names repeat across scenes)."""
    return dict(_OBJECTS[parse_scene(scene)])


def training_config_counts() -> dict[str, int]:
    """Number of training labels per training configuration, in protocol order."""
    _, counts = entropy_of_configs(task.config for task in _training())
    return {config: counts.get(config, 0) for config in TRAINING_CONFIGS}


def scene_entropy() -> float:
    """H(T|S) of the training labels grouped by configuration (3.782 bits)."""
    value, _ = entropy_of_configs(task.config for task in _training())
    return value


def libero_reference_entropy() -> float:
    """The LIBERO reference H(T|S) (0.880 bits), see ``benchmark.entropy``."""
    return _libero()
