"""Plain-data (JSON-ready) views of registry objects."""

from __future__ import annotations

import dataclasses
from typing import Any

from robofollow_ros.benchmark.types import GroundTruth, Task


def truth_to_dict(truth: GroundTruth) -> dict[str, Any]:
    """The ground truth as a dict, without fields the action does not use."""
    return {key: value for key, value in dataclasses.asdict(truth).items() if value is not None}


def task_to_dict(task: Task) -> dict[str, Any]:
    """A task as JSON-ready data: identity, instruction(s), ground truth and, for if/else, both branches."""
    data: dict[str, Any] = {
        'task_id': task.task_id,
        'scene': task.scene,
        'split': task.split,
        'level': task.level_tag,
        'layout': task.layout,
        'config': task.config,
        'arm': task.arm,
        'instruction': task.instruction,
        'reference': task.reference,
        'truth': truth_to_dict(task.truth),
    }
    if task.split == 'train':
        data['paraphrases'] = list(task.paraphrases)
    if task.conditional is not None:
        data['conditional'] = {
            'predicate': task.conditional.predicate,
            'holds': task.conditional.holds,
            'then': truth_to_dict(task.conditional.then_truth),
            'else': truth_to_dict(task.conditional.else_truth),
        }
    if task.label is not None:
        data['label'] = task.label
    if task.flags:
        data['flags'] = list(task.flags)
    if task.note:
        data['note'] = task.note
    return data
