"""The ``robofollow_interfaces`` messages without ROS: their names, version, definition files and a result's fields.

The bag writer and reader register the ``.msg`` definitions in a rosbags typestore from here, so that bags holding
typed messages are written and read with no ROS installed; ``ros/protocol.py`` builds the rclpy messages from the
same field values. Nothing here imports rclpy or the generated message classes.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from robofollow_ros.resources import share_candidates

PACKAGE = 'robofollow_interfaces'
RESULT = f'{PACKAGE}/msg/Result'
EPISODE_SPEC = f'{PACKAGE}/msg/EpisodeSpec'
SIM_STATUS = f'{PACKAGE}/msg/SimStatus'
EPISODE_END = f'{PACKAGE}/msg/EpisodeEnd'
CHUNK_TICKET = f'{PACKAGE}/msg/ChunkTicket'
VERSIONS: dict[str, int] = {RESULT: 1, EPISODE_SPEC: 1, SIM_STATUS: 1, EPISODE_END: 2, CHUNK_TICKET: 1}
"""The version this code speaks of each message: its definition's ``VERSION`` constant, raised when its fields
change (EpisodeEnd 2: the real-time keeping fields); a test checks they agree. A message of one type keeps its
version when another changes, so bags of older runs (EpisodeSpec, Result) stay readable."""
EPISODE_SPEC_FIELDS: dict[str, type] = {
    'episode_id': str,
    'task_id': str,
    'variant': str,
    'layout': str,
    'seed': int,
    'round': int,
    'arm': str,
    'level': str,
    'instruction': str,
}
"""The fields of ``EpisodeSpec`` besides ``version``, with their Python types (``string`` and ``int64``)."""


def definitions_folder() -> Path | None:
    """The folder of the ``.msg`` files: the source tree's or the copy installed with the Python package (found
    as ``resources`` finds ``config/``), else the interface package's own share folder (the venv's, or one on
    ``AMENT_PREFIX_PATH``); ``None`` when none is there."""
    candidates = [folder / PACKAGE / 'msg' for folder in share_candidates()]
    prefixes = [sys.prefix, *os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)]
    candidates += [Path(prefix) / 'share' / PACKAGE / 'msg' for prefix in prefixes if prefix]
    return next((folder for folder in candidates if (folder / 'Result.msg').is_file()), None)


DRIVER_INTERFACE_PACKAGES = ('interbotix_xs_msgs',)
"""Interface packages of the real drivers whose commands a bag may hold, outside ROS 2's standard messages."""


def driver_message_definitions() -> dict[str, str]:
    """``{type name: .msg text}`` of the ``DRIVER_INTERFACE_PACKAGES`` messages installed in this environment's prefix
    or one on ``AMENT_PREFIX_PATH`` (empty for a package not installed)."""
    prefixes = [sys.prefix, *os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)]
    found: dict[str, str] = {}
    for package in DRIVER_INTERFACE_PACKAGES:
        folder = next(
            (
                Path(p) / 'share' / package / 'msg'
                for p in prefixes
                if p and (Path(p) / 'share' / package / 'msg').is_dir()
            ),
            None,
        )
        if folder is not None:
            found.update({f'{package}/msg/{path.stem}': path.read_text() for path in sorted(folder.glob('*.msg'))})
    return found


def message_definitions() -> dict[str, str]:
    """``{type name: .msg text}`` of every message of the package (empty when the definitions are not found)."""
    folder = definitions_folder()
    if folder is None:
        return {}
    return {f'{PACKAGE}/msg/{path.stem}': path.read_text() for path in sorted(folder.glob('*.msg'))}


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan


def _text(value: Any) -> str:
    return '' if value is None else str(value)


def result_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """The field values of the ``Result`` message of a result record: ``stages`` and ``adjustments`` as lists of
    field mappings, and the record itself as ``record_json``.

    Raises:
        ValueError: the record cannot be written as JSON (a NaN score, a value JSON has no form for).
    """
    try:
        text = json.dumps(dict(record), allow_nan=False)
    except TypeError as error:
        raise ValueError(str(error)) from None
    stages: Sequence[Mapping[str, Any]] = record.get('stages') or ()
    adjustments: Sequence[Mapping[str, Any]] = record.get('adjustments') or ()
    return {
        'version': VERSIONS[RESULT],
        'episode_id': _text(record.get('episode_id')),
        'task_id': _text(record.get('task_id')),
        'variant': _text(record.get('variant')),
        'seed': int(record.get('seed') or 0),
        'round': int(record.get('round') or 0),
        'scored': record.get('scored') is True,
        'intent_score': _number(record.get('intent_score', 0.0)),
        'exec_score': _number(record.get('exec_score', 0.0)),
        'intent_ok': record.get('intent_ok') is True,
        'exec_ok': record.get('exec_ok') is True,
        'completion_ok': record.get('completion_ok') is True,
        'stages': [
            {
                'name': _text(stage.get('name')),
                'intent': _number(stage.get('intent')),
                'exec': _number(stage.get('exec')),
                'max': _number(stage.get('max')),
                'intent_reason': _text(stage.get('intent_reason')),
                'exec_reason': _text(stage.get('exec_reason')),
            }
            for stage in stages
        ],
        'adjustments': [
            {
                'name': _text(item.get('name')),
                'score': _text(item.get('score')),
                'amount': _number(item.get('amount')),
                'reason': _text(item.get('reason')),
            }
            for item in adjustments
        ],
        'end_stamp_ns': int(record.get('end_stamp_ns') or 0),
        'sim_seconds': _number(record.get('sim_seconds', 0.0)),
        'record_json': text,
    }


def record_of_result(version: int, record_json: str) -> dict[str, Any]:
    """The result record a ``Result`` message carries.

    Raises:
        ValueError: another version, or ``record_json`` is not a JSON object.
    """
    if version != VERSIONS[RESULT]:
        raise ValueError(f'Result version {version} is not {VERSIONS[RESULT]}')
    try:
        record = json.loads(record_json)
    except (TypeError, ValueError, RecursionError) as error:
        raise ValueError(f'Result record_json is not JSON: {error}') from None
    if not isinstance(record, dict):
        raise ValueError('Result record_json is not a JSON object')
    return record
