"""``collection.json``: the identity of a demonstration collection.

A collection resumes only with the options and package version it was started with; anything else would mix
demonstrations of different kinds in one data set. (The folder lock is the evaluator's ``RunLock``.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from robofollow_ros import __version__
from robofollow_ros.errors import DatasetError
from robofollow_ros.textfiles import parse_json, read_utf8

MANIFEST_NAME = 'collection.json'
FORMAT = 'robofollow-raw-v1'


def collection_identity(options: Mapping[str, Any]) -> dict[str, Any]:
    """What a resumed collection must share with the original: the options, data format and package version."""
    from robofollow_ros.referee.config import default_config

    return {
        'format': FORMAT,
        'robofollow_ros': __version__,
        'metric_version': default_config().metric_version,
        'options': dict(options),
    }


def _differences(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = '') -> list[str]:
    keys = sorted(set(old) | set(new))
    out: list[str] = []
    for key in keys:
        a, b = old.get(key), new.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += _differences(a, b, f'{prefix}{key}.')
        elif a != b:
            out.append(f'{prefix}{key} {a!r} -> {b!r}')
    return out


def read_manifest(out: Path) -> dict[str, Any] | None:
    """The identity stored in ``out``'s ``collection.json``; ``None`` when there is none.

    Raises:
        DatasetError: the file cannot be read or is not a collection manifest.
    """
    path = out / MANIFEST_NAME
    if not path.exists():
        return None
    manifest = parse_json(
        read_utf8(path, what='collection manifest', error=DatasetError),
        where=str(path),
        what='a collection manifest',
        error=DatasetError,
    )
    options = manifest.get('options') if isinstance(manifest, dict) else None
    labels = options.get('labels') if isinstance(options, dict) else None
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        found = f'a JSON {type(manifest).__name__}' if not isinstance(manifest, dict) else 'no options.labels'
        raise DatasetError(
            f'{path}: not a collection manifest (an object with the options and labels; found {found}); '
            'use another --out'
        )
    return manifest


def open_manifest(out: Path, identity: Mapping[str, Any]) -> None:
    """Write ``collection.json`` for a new collection, or check that a resumed one has the same identity.

    Raises:
        DatasetError: the folder holds a collection with other options or another package version, or a
            ``collection.json`` that is not one.
    """
    existing = read_manifest(out)
    if existing is not None:
        stored = {key: existing.get(key) for key in identity}
        differences = _differences(stored, dict(identity))
        if differences:
            raise DatasetError(
                f'{out} holds a collection made with other options ({"; ".join(differences)}); '
                'use another --out or the original options'
            )
        return
    path = out / MANIFEST_NAME
    out.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + '.tmp')
    temporary.write_text(json.dumps(dict(identity), indent=2, sort_keys=True) + '\n', encoding='utf-8')
    os.replace(temporary, path)
