"""The synchronous-mode handshake between the evaluator, the sim, the policy bridge and the referee.

All messages are JSON in ``std_msgs/String`` (no custom messages: they need a CMake build).

1. The evaluator publishes the ``EpisodeSpec`` on ``/robofollow/episode`` (transient local) and calls
   ``/robofollow/sim/reset`` (``std_srvs/Trigger``); the sim answers ``success`` with the ``episode_id`` it reset
   to as ``message`` (the evaluator retries until it is the one it published), after publishing frame 0 and the
   initial observation, and a ``SimStatus(event='reset')`` on ``/robofollow/sim/status``.
2. The evaluator publishes the instruction on ``/robofollow/instruction``; the bridge starts the episode.
3. For each chunk the bridge publishes one ``JointTrajectory`` per arm whose ``header.stamp`` is the stamp of the
   observation the chunk answers. The sim executes the rows once it holds both arms' trajectories with that stamp
   (simulated time advances only here), publishing ``/clock``, ``/joint_states`` and the poses for every row,
   then the images of the final state, then ``SimStatus(event='executed', for_stamp_ns=<that stamp>)``. The next
   observation is complete when the bridge holds the joint state (and, if its policy wants them, the images)
   stamped ``stamp_ns`` of that status.
4. When the budget is spent or the policy failed, the bridge publishes ``EpisodeEnd`` on
   ``/robofollow/episode_end``; the referee scores every frame stamped from the reset up to ``end_stamp_ns`` and
   publishes the result record on ``/robofollow/result``.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, Literal, TypeVar

from robofollow_ros.errors import GraphError

StatusEvent = Literal['reset', 'executed']
_T = TypeVar('_T')


def _parse(cls: type[_T], text: str) -> _T:
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as error:
        raise GraphError(f'{cls.__name__} is not valid JSON: {error}') from None
    if not isinstance(value, dict):
        raise GraphError(f'{cls.__name__} must be a JSON object')
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}  # type: ignore[arg-type]
    missing = sorted(required - set(value))
    if missing:
        raise GraphError(f'{cls.__name__} lacks {", ".join(missing)}')
    try:
        return cls(**{key: value[key] for key in names if key in value})
    except TypeError as error:
        raise GraphError(f'{cls.__name__}: {error}') from None


@dataclass(frozen=True)
class SimStatus:
    """The sim's report that an observation is complete (after a reset, or after executing a chunk)."""

    event: StatusEvent
    episode_id: str
    stamp_ns: int
    for_stamp_ns: int = -1
    rows: int = 0

    def to_json(self) -> str:
        """JSON text for ``/robofollow/sim/status``."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> SimStatus:
        """Parse; raises ``GraphError`` on malformed text."""
        return _parse(cls, text)


@dataclass(frozen=True)
class EpisodeEnd:
    """The bridge's report that an episode is over: the episode loop's bookkeeping for the result record."""

    episode_id: str
    end_stamp_ns: int
    queries: int
    executed_rows: int
    policy_error: str | None = None
    error_kind: str | None = None

    def to_json(self) -> str:
        """JSON text for ``/robofollow/episode_end``."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> EpisodeEnd:
        """Parse; raises ``GraphError`` on malformed text."""
        return _parse(cls, text)

    def bookkeeping(self) -> dict[str, Any]:
        """The fields a result record takes from the episode loop."""
        return {
            'policy_error': self.policy_error,
            'error_kind': self.error_kind,
            'queries': self.queries,
            'executed_rows': self.executed_rows,
        }
