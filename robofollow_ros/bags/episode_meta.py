"""An episode's meta data as a bag stores it: the typed ``EpisodeSpec`` the graph carries, plus what it cannot hold.

A bag's meta data is a JSON-ready mapping: the spec fields (``interfaces.EPISODE_SPEC_FIELDS``) and facts about the
recording that are no part of the live message (``robot``, ``frames_are_rows``, a data collection's ``label``, ...).
The writer puts every spec field whose value the typed field holds exactly into the ``EpisodeSpec`` on
/robofollow/episode, and everything else into a JSON object on /robofollow/episode_meta (``std_msgs/String``)::

    {"extra": {<every other key and its value>}, "absent": [<spec fields the meta data does not have>]}

so that the reader gives back the very mapping that was written (an absent ``seed`` does not come back as 0). Why
not more fields on the message: these values describe a recording, not the episode the evaluator asks for (the
live graph has no use for them), and any other key a caller stores would still need a home.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from robofollow_ros.errors import BagError
from robofollow_ros.interfaces import EPISODE_SPEC_FIELDS

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
DEFAULTS: dict[type, Any] = {str: '', int: 0}


def _fits(value: Any, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool) and INT64_MIN <= value <= INT64_MAX
    return isinstance(value, kind)


def split_meta(meta: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The ``EpisodeSpec`` field values and the /robofollow/episode_meta JSON text of a bag's meta data.

    Raises:
        BagError: ``meta`` is not a mapping, or cannot be stored as JSON.
    """
    if not isinstance(meta, Mapping):
        raise BagError(f'meta must be a mapping, got {type(meta).__name__}')
    fields: dict[str, Any] = {}
    extra = {key: value for key, value in meta.items() if key not in EPISODE_SPEC_FIELDS}
    absent: list[str] = []
    for name, kind in EPISODE_SPEC_FIELDS.items():
        fields[name] = meta[name] if name in meta and _fits(meta[name], kind) else DEFAULTS[kind]
        if name not in meta:
            absent.append(name)
        elif not _fits(meta[name], kind):
            extra[name] = meta[name]  # kept as it is (a seed given as text, say): the reader returns it unchanged
    try:
        text = json.dumps({'extra': extra, 'absent': absent}, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise BagError(f'meta cannot be stored as JSON: {err}') from None
    return fields, text


def join_meta(fields: Mapping[str, Any], companion: Mapping[str, Any] | None) -> dict[str, Any]:
    """The meta data ``split_meta`` was given back from the spec's fields and the /robofollow/episode_meta object.

    Without that object (a bag of the live graph recorded by ``ros2 bag record``) the spec's fields are the meta data,
    less the empty strings (fields a spec always fills).

    Raises:
        BagError: the companion object is not of the form ``split_meta`` writes.
    """
    if companion is None:
        return {name: value for name, value in fields.items() if value != ''}
    extra, absent = companion.get('extra'), companion.get('absent')
    if not isinstance(extra, dict) or not isinstance(absent, list) or set(companion) != {'extra', 'absent'}:
        raise BagError('the episode meta object is not {"extra": {...}, "absent": [...]}')
    meta = {name: value for name, value in fields.items() if name not in absent}
    meta.update(extra)
    return meta
