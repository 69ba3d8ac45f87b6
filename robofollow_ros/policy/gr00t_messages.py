"""What a GR00T N1.6 policy exchanges, and how this cell's observation and action map onto its keys.

Request (``get_action``): ``{'observation': {'video': {key: uint8 (B, T, H, W, 3)}, 'state': {key: float32 (B, T,
D)}, 'language': {key: [[text], ...]}}, 'options': None}`` with T = 1 (the current frame). Reply: ``[action, info]``
with ``action`` ``{key: (B, horizon, D)}``. Which of the server's keys hold what is the checkpoint's modality
configuration (``get_modality_config``); ``Gr00tKeys`` maps this cell's cameras, the 14-D state's columns and the
14-D action's columns onto them. The defaults are an ALOHA-like embodiment: the three cameras under their own names,
``left_arm`` (state and action columns 0-5), ``left_gripper`` (6), ``right_arm`` (7-12), ``right_gripper`` (13),
the instruction under ``task``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.base import ACTION_DIM, validate_chunk
from robofollow_ros.policy.gr00t_codec import MODALITY_TAG
from robofollow_ros.policy.observation import CAMERAS
from robofollow_ros.policy.wire import observation_fields

ALOHA_GROUPS: dict[str, tuple[int, int]] = {
    'left_arm': (0, 6),
    'left_gripper': (6, 7),
    'right_arm': (7, 13),
    'right_gripper': (13, 14),
}
"""Default state and action groups: name -> the 14-D layout's columns [start, stop)."""


def _groups(value: Mapping[str, Sequence[int]], *, what: str, cover: bool) -> dict[str, tuple[int, int]]:
    groups: dict[str, tuple[int, int]] = {}
    for key, span in value.items():
        if not isinstance(span, Sequence) or len(span) != 2 or not all(isinstance(v, int) for v in span):
            raise PolicyError(f'GR00T {what} group {key!r} must be [start, stop) columns, got {span!r}')
        start, stop = int(span[0]), int(span[1])
        if not 0 <= start < stop <= ACTION_DIM:
            raise PolicyError(f'GR00T {what} group {key!r}: columns [{start}, {stop}) lie outside 0..{ACTION_DIM}')
        groups[str(key)] = (start, stop)
    taken = sorted(c for start, stop in groups.values() for c in range(start, stop))
    if len(taken) != len(set(taken)):
        raise PolicyError(f'GR00T {what} groups overlap: {groups}')
    if cover and taken != list(range(ACTION_DIM)):
        missing = sorted(set(range(ACTION_DIM)) - set(taken))
        raise PolicyError(f'GR00T {what} groups leave columns {missing} of the {ACTION_DIM}-D action unset')
    return groups


@dataclass(frozen=True)
class Gr00tKeys:
    """Which server keys hold this cell's cameras (``video``: camera -> key), state columns (``state``: key ->
    [start, stop)), action columns (``action``, covering all 14) and instruction (``language``)."""

    video: dict[str, str] = field(default_factory=lambda: {camera: camera for camera in CAMERAS})
    state: dict[str, tuple[int, int]] = field(default_factory=lambda: dict(ALOHA_GROUPS))
    action: dict[str, tuple[int, int]] = field(default_factory=lambda: dict(ALOHA_GROUPS))
    language: str = 'task'

    @classmethod
    def from_options(
        cls,
        *,
        video: Mapping[str, str] | None = None,
        state: Mapping[str, Sequence[int]] | None = None,
        action: Mapping[str, Sequence[int]] | None = None,
        language: str = 'task',
    ) -> Gr00tKeys:
        """Keys from policy options (JSON: maps and two-number lists); each missing one takes its default.

        Raises:
            PolicyError: an unknown camera, a group outside the 14 columns, overlapping groups, or action groups
                that do not cover all 14 columns.
        """
        defaults = cls()
        if video is not None:
            unknown = sorted(set(video) - set(CAMERAS))
            if unknown:
                cameras = ', '.join(CAMERAS)
                raise PolicyError(f'GR00T video keys for unknown cameras {unknown} (this cell has {cameras})')
        return cls(
            video={str(camera): str(key) for camera, key in (video or defaults.video).items()},
            state=_groups(state or defaults.state, what='state', cover=False),
            action=_groups(action or defaults.action, what='action', cover=True),
            language=str(language),
        )

    def check_against(self, config: Any) -> None:
        """Refuse, in one line naming the key, keys the server's modality configuration (``get_modality_config``:
        modality -> configuration with ``modality_keys``) does not have. An empty configuration is not checked.

        Raises:
            PolicyError: a key this mapping sends or reads that the checkpoint does not know.
        """
        if not isinstance(config, Mapping) or not config:
            return
        wanted = {
            'video': set(self.video.values()),
            'state': set(self.state),
            'action': set(self.action),
            'language': {self.language},
        }
        for modality, keys in wanted.items():
            known = _modality_keys(config.get(modality))
            if known is None:
                continue
            missing = sorted(key for key in keys if key not in known and f'{modality}.{key}' not in known)
            if missing:
                raise PolicyError(
                    f'the GR00T checkpoint has no {modality} key {missing[0]!r} (it has {", ".join(sorted(known))}); '
                    f'map this cell onto its keys with the {modality} policy option'
                )


def _modality_keys(entry: Any) -> set[str] | None:
    if isinstance(entry, Mapping) and entry.get(MODALITY_TAG):
        entry = entry.get('as_json')
    keys = entry.get('modality_keys') if isinstance(entry, Mapping) else None
    return {str(key) for key in keys} if isinstance(keys, Sequence) and not isinstance(keys, str) else None


def observation_request(observations: Sequence[Any], instructions: Sequence[str], keys: Gr00tKeys) -> dict[str, Any]:
    """The ``get_action`` data for a batch of observations (each with its instruction)."""
    images: dict[str, list[np.ndarray]] = {key: [] for key in keys.video.values()}
    states: dict[str, list[np.ndarray]] = {key: [] for key in keys.state}
    for observation in observations:
        frames, state = observation_fields(observation, backend='gr00t')
        for camera, key in keys.video.items():
            images[key].append(np.asarray(frames[camera], dtype=np.uint8)[None])
        for key, (start, stop) in keys.state.items():
            states[key].append(state[start:stop].astype(np.float32)[None])
    return {
        'observation': {
            'video': {key: np.stack(frames) for key, frames in images.items()},
            'state': {key: np.stack(values) for key, values in states.items()},
            'language': {keys.language: [[text] for text in instructions]},
        },
        'options': None,
    }


def chunks_from_reply(reply: Any, keys: Gr00tKeys, *, batch: int) -> list[np.ndarray]:
    """The validated float32 [horizon, 14] chunk of each of the ``batch`` episodes of a ``get_action`` reply.

    Raises:
        PolicyError: not ``[action, info]``, an action group missing or of the wrong shape, or groups of different
            horizons.
    """
    action = reply[0] if isinstance(reply, (list, tuple)) and len(reply) == 2 else None
    if not isinstance(action, Mapping):
        raise PolicyError(f'a GR00T get_action reply is [action, info], got {type(reply).__name__}')
    columns: dict[str, np.ndarray] = {}
    for key, (start, stop) in keys.action.items():
        if key not in action:
            raise PolicyError(f'the GR00T reply has no action {key!r} (it has {", ".join(sorted(map(str, action)))})')
        values = np.asarray(action[key])
        if values.ndim != 3 or values.shape[0] != batch or values.shape[2] != stop - start:
            raise PolicyError(
                f'GR00T action {key!r} must be ({batch}, horizon, {stop - start}), got {list(values.shape)}'
            )
        columns[key] = values
    horizons = {values.shape[1] for values in columns.values()}
    if len(horizons) != 1:
        raise PolicyError(f'GR00T action groups have different horizons: {sorted(horizons)}')
    (horizon,) = horizons
    chunks = []
    for index in range(batch):
        parts = np.empty((horizon, ACTION_DIM), dtype=object)
        for key, (start, stop) in keys.action.items():
            parts[:, start:stop] = columns[key][index]
        chunks.append(validate_chunk(parts.tolist()))
    return chunks
