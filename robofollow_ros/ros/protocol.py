"""The synchronous-mode handshake between the evaluator, the sim, the policy bridge and the referee, and its messages.

Every message of the handshake is a typed message of the ``robofollow_interfaces`` package (built by
``scripts/build_interfaces.sh``; definitions in ``robofollow_interfaces/msg`` and ``srv``). This module is the one
place that converts between them and the core's types, and checks what arrives: a message of another ``version``,
an unknown event or an inconsistent field is refused with a ``GraphError`` naming it.

1. The evaluator publishes the ``EpisodeSpec`` on ``/robofollow/episode`` (transient local, so that a node started
   late still gets it) and calls ``/robofollow/sim/reset`` (``ResetEpisode``) with the same spec. The sim resets and
   answers ``code=OK`` with the ``episode_id`` it reset to; once the readers it knows of have matched its writers
   and its command readers the command writers it knows of (or after its ``match_timeout``) it publishes frame 0,
   the initial observation and ``SimStatus(event=EVENT_RESET)`` on ``/robofollow/sim/status``, from which the
   bridge and the referee start the episode (a later reset before that replaces it: only its frame 0 goes out).
   ``INVALID_EPISODE`` (unknown task or layout, another version) and ``RESET_FAILED`` (the scene could not be built)
   end the trial with the answer's ``message``; an unanswered call is made again (resetting twice to the same
   episode is harmless).
2. The evaluator publishes the instruction (``std_msgs/String``) on ``/robofollow/instruction``; the bridge starts
   the episode.
3. For each chunk the bridge publishes one ``JointTrajectory`` per arm as a ros2_control JointTrajectoryController
   takes it (``header.stamp`` zero: start now; point i due ``(i + 1)`` row periods later; every joint of the arm),
   then a ``ChunkTicket`` on ``/robofollow/sim/chunk``: the episode, the stamp of the observation the chunk
   answers, the rows, and a digest of each arm's trajectory (topics are not ordered with each other, so the sim
   matches the commands to the ticket by their content, not by arrival). The sim executes the rows once it holds
   both arms' trajectories and the ticket for its latest observation (simulated time advances only here; a ticket
   for another observation or episode is ignored with a warning), publishing ``/clock``, ``/joint_states`` and the
   poses for every row, then the images of the final state, then ``SimStatus(event=EVENT_EXECUTED,
   for_stamp_ns=<that stamp>)``. The next observation is complete when the bridge holds the joint state (and, if
   its policy wants them, the images) stamped ``stamp_ns`` of that status.
4. When the policy failed, the bridge tells the arms to hold: one point at the latest measured position, due one
   row period from now (a JTC rejects an empty trajectory), with a ticket whose ``hold`` is true. The sim holds
   still: it steps nothing and reports nothing, so the episode's queries, rows and frames are the loop's.
5. When the budget is spent or the policy failed, the bridge publishes ``EpisodeEnd`` on ``/robofollow/episode_end``;
   the referee scores every frame stamped from the reset up to ``end_stamp_ns`` and publishes ``Result`` on
   ``/robofollow/result``: the scores as typed fields (stages as a ``Stage[]``) and the whole record as
   ``record_json``, which is what the evaluator writes to ``results.jsonl``.

Versioning: each message carries ``version``, the ``VERSION`` constant of the sender's definition;
``interfaces.VERSIONS`` holds each definition's (a test checks they agree) and a receiver refuses any other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from robofollow_interfaces.msg import Adjustment as AdjustmentMessage
from robofollow_interfaces.msg import ChunkTicket as ChunkTicketMessage
from robofollow_interfaces.msg import EpisodeEnd as EpisodeEndMessage
from robofollow_interfaces.msg import EpisodeSpec as EpisodeSpecMessage
from robofollow_interfaces.msg import Result as ResultMessage
from robofollow_interfaces.msg import SimStatus as SimStatusMessage
from robofollow_interfaces.msg import Stage as StageMessage
from robofollow_interfaces.srv import MoveHome, ResetEpisode
from robofollow_ros.benchmark.types import Arm
from robofollow_ros.errors import GraphError
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.real_time import RealTimeKeeping
from robofollow_ros.interfaces import (
    CHUNK_TICKET,
    EPISODE_END,
    EPISODE_SPEC,
    PACKAGE,
    SIM_STATUS,
    VERSIONS,
    record_of_result,
    result_fields,
)

__all__ = [
    'VERSIONS',
    'ChunkTicket',
    'ChunkTicketMessage',
    'EpisodeEnd',
    'EpisodeEndMessage',
    'EpisodeSpecMessage',
    'HomeCode',
    'MoveHome',
    'ResetCode',
    'ResetEpisode',
    'ResultMessage',
    'SimStatus',
    'SimStatusMessage',
    'StatusEvent',
    'read_spec',
    'record_from_result',
    'result_message',
    'spec_from_message',
    'spec_message',
]


class StatusEvent(IntEnum):
    """``SimStatus.event``: what made the observation complete."""

    RESET = SimStatusMessage.EVENT_RESET
    EXECUTED = SimStatusMessage.EVENT_EXECUTED


class ResetCode(IntEnum):
    """``ResetEpisode.Response.code``: the sim's answer to a reset."""

    OK = ResetEpisode.Response.OK
    INVALID_EPISODE = ResetEpisode.Response.INVALID_EPISODE
    RESET_FAILED = ResetEpisode.Response.RESET_FAILED


class HomeCode(IntEnum):
    """``MoveHome.Response.code``: the bridge's answer to ``/robofollow/home``."""

    MOVING = MoveHome.Response.MOVING
    STOPPED = MoveHome.Response.STOPPED
    NOT_YET = MoveHome.Response.NOT_YET
    GRIPPER_MODE = MoveHome.Response.GRIPPER_MODE
    BUSY = MoveHome.Response.BUSY
    REFUSED = MoveHome.Response.REFUSED


def _check_version(message: Any, what: str) -> None:
    version = VERSIONS[f'{PACKAGE}/msg/{what}']
    if message.version != version:
        raise GraphError(f"{what} version {message.version} is not {version}, this node's (rebuild the interfaces)")


@dataclass(frozen=True)
class SimStatus:
    """The sim's report that an observation is complete (after a reset, or after executing a chunk)."""

    event: StatusEvent
    episode_id: str
    stamp_ns: int
    for_stamp_ns: int = -1
    rows: int = 0

    def to_message(self) -> SimStatusMessage:
        """The ``SimStatus`` message for ``/robofollow/sim/status``."""
        return SimStatusMessage(
            version=VERSIONS[SIM_STATUS],
            event=int(self.event),
            episode_id=self.episode_id,
            stamp_ns=self.stamp_ns,
            for_stamp_ns=self.for_stamp_ns,
            rows=self.rows,
        )

    @classmethod
    def from_message(cls, message: Any) -> SimStatus:
        """Check and convert; raises ``GraphError`` on another version, an unknown event or a missing episode id."""
        _check_version(message, 'SimStatus')
        try:
            event = StatusEvent(message.event)
        except ValueError:
            raise GraphError(f'SimStatus event {message.event} is not one of {[int(e) for e in StatusEvent]}') from None
        if not message.episode_id:
            raise GraphError('SimStatus has no episode_id')
        if event is StatusEvent.EXECUTED and message.for_stamp_ns < 0:
            raise GraphError('SimStatus EVENT_EXECUTED without for_stamp_ns')
        return cls(event, message.episode_id, message.stamp_ns, message.for_stamp_ns, message.rows)


@dataclass(frozen=True)
class ChunkTicket:
    """The bridge's note, beside the arms' commands, of which observation they answer (``ChunkTicket.msg``).

    Attributes:
        episode_id: the episode.
        for_stamp_ns: the stamp of the observation the chunk answers (a hold: the latest the bridge had, or -1).
        rows: points of each arm's trajectory.
        digests: by arm, ``trajectory_digest`` of its JointTrajectory (joint names, positions, point times).
        hold: a hold after a failure, not a policy chunk.
    """

    episode_id: str
    for_stamp_ns: int
    rows: int
    digests: Mapping[Arm, int]
    hold: bool = False

    def to_message(self) -> ChunkTicketMessage:
        """The ``ChunkTicket`` message for ``/robofollow/sim/chunk``."""
        return ChunkTicketMessage(
            version=VERSIONS[CHUNK_TICKET],
            episode_id=self.episode_id,
            for_stamp_ns=self.for_stamp_ns,
            rows=self.rows,
            hold=self.hold,
            left_digest=self.digests['left'],
            right_digest=self.digests['right'],
        )

    @classmethod
    def from_message(cls, message: Any) -> ChunkTicket:
        """Check and convert; raises ``GraphError`` on another version, a missing episode id, no rows, or a chunk
        without the stamp it answers."""
        _check_version(message, 'ChunkTicket')
        if not message.episode_id:
            raise GraphError('ChunkTicket has no episode_id')
        if message.rows < 1:
            raise GraphError('ChunkTicket has no rows (a hold has one)')
        if not message.hold and message.for_stamp_ns < 0:
            raise GraphError('ChunkTicket of a chunk without for_stamp_ns')
        digests: dict[Arm, int] = {'left': message.left_digest, 'right': message.right_digest}
        return cls(message.episode_id, message.for_stamp_ns, message.rows, digests, bool(message.hold))


@dataclass(frozen=True)
class EpisodeEnd:
    """The bridge's report that an episode is over: the episode loop's bookkeeping for the result record."""

    episode_id: str
    end_stamp_ns: int
    queries: int
    executed_rows: int
    policy_error: str | None = None
    error_kind: str | None = None
    bridge_overhead_ms: tuple[float, ...] = ()
    interventions: tuple[tuple[str, int], ...] = ()
    real_time: RealTimeKeeping | None = None

    def to_message(self) -> EpisodeEndMessage:
        """The ``EpisodeEnd`` message for ``/robofollow/episode_end``."""
        return EpisodeEndMessage(
            version=VERSIONS[EPISODE_END],
            episode_id=self.episode_id,
            end_stamp_ns=self.end_stamp_ns,
            queries=self.queries,
            executed_rows=self.executed_rows,
            policy_failed=self.policy_error is not None,
            policy_error=self.policy_error or '',
            error_kind=self.error_kind or '',
            bridge_overhead_ms=[float(value) for value in self.bridge_overhead_ms],
            intervention_kinds=[kind for kind, _ in self.interventions],
            intervention_counts=[int(count) for _, count in self.interventions],
            real_time_measured=self.real_time is not None,
            state_gap_max_s=self.real_time.state_gap_max_s if self.real_time else 0.0,
            late_state_gaps=self.real_time.late_state_gaps if self.real_time else 0,
            late_gap_s=self.real_time.late_gap_s if self.real_time else 0.0,
            unreached_chunks=self.real_time.unreached_chunks if self.real_time else 0,
        )

    @classmethod
    def from_message(cls, message: Any) -> EpisodeEnd:
        """Check and convert; raises ``GraphError`` on another version, a missing episode id or negative counts."""
        _check_version(message, 'EpisodeEnd')
        if not message.episode_id:
            raise GraphError('EpisodeEnd has no episode_id')
        if message.queries < 0 or message.executed_rows < 0:
            raise GraphError(f'EpisodeEnd counts are negative ({message.queries}, {message.executed_rows})')
        failed = bool(message.policy_failed)
        return cls(
            episode_id=message.episode_id,
            end_stamp_ns=message.end_stamp_ns,
            queries=message.queries,
            executed_rows=message.executed_rows,
            policy_error=message.policy_error if failed else None,
            error_kind=(message.error_kind or None) if failed else None,
            bridge_overhead_ms=tuple(float(value) for value in message.bridge_overhead_ms),
            interventions=_interventions(message),
            real_time=_real_time(message),
        )

    def bookkeeping(self) -> dict[str, Any]:
        """The fields a result record takes from the episode loop (``interventions`` only when the safety layer
        stepped in: a simulated episode's record is what it was)."""
        fields: dict[str, Any] = {
            'policy_error': self.policy_error,
            'error_kind': self.error_kind,
            'queries': self.queries,
            'executed_rows': self.executed_rows,
        }
        if self.interventions:
            fields['interventions'] = dict(self.interventions)
        if self.real_time is not None:
            fields['real_time'] = self.real_time.record()
        return fields


def _real_time(message: Any) -> RealTimeKeeping | None:
    if not message.real_time_measured:
        return None
    if message.late_state_gaps < 0 or message.unreached_chunks < 0:
        raise GraphError(
            f'EpisodeEnd real-time counts are negative ({message.late_state_gaps}, {message.unreached_chunks})'
        )
    return RealTimeKeeping(
        state_gap_max_s=float(message.state_gap_max_s),
        late_state_gaps=int(message.late_state_gaps),
        late_gap_s=float(message.late_gap_s),
        unreached_chunks=int(message.unreached_chunks),
    )


def _interventions(message: Any) -> tuple[tuple[str, int], ...]:
    kinds, counts = list(message.intervention_kinds), list(message.intervention_counts)
    if len(kinds) != len(counts) or any(count < 0 for count in counts):
        raise GraphError(f'EpisodeEnd interventions do not pair up ({len(kinds)} kinds, {len(counts)} counts)')
    return tuple(zip(kinds, (int(count) for count in counts), strict=True))


def spec_message(spec: EpisodeSpec) -> EpisodeSpecMessage:
    """The ``EpisodeSpec`` message of ``spec`` (for ``/robofollow/episode`` and the reset request)."""
    return EpisodeSpecMessage(version=VERSIONS[EPISODE_SPEC], **spec.to_dict())


def spec_from_message(message: Any) -> EpisodeSpec:
    """The spec a message carries, checked like a spec from JSON; raises ``GraphError`` (another version) or
    ``EpisodeSpecError`` (a field's value)."""
    _check_version(message, 'EpisodeSpec')
    fields = ('episode_id', 'task_id', 'variant', 'layout', 'seed', 'round', 'arm', 'level', 'instruction')
    return EpisodeSpec.from_mapping({name: getattr(message, name) for name in fields})


def result_message(record: Mapping[str, Any]) -> ResultMessage:
    """The ``Result`` message of a result record (its typed fields, and the record itself as ``record_json``).

    Raises:
        GraphError: the record cannot be written as JSON (a NaN score, a value JSON has no form for).
    """
    try:
        fields = result_fields(record)
    except ValueError as error:
        raise GraphError(f'result record cannot be sent: {error}') from None
    fields['stages'] = [StageMessage(**stage) for stage in fields['stages']]
    fields['adjustments'] = [AdjustmentMessage(**item) for item in fields['adjustments']]
    return ResultMessage(**fields)


def record_from_result(message: Any) -> dict[str, Any]:
    """The result record a ``Result`` message carries; raises ``GraphError`` on another version or a broken record."""
    try:
        record = record_of_result(message.version, message.record_json)
    except ValueError as error:
        raise GraphError(str(error)) from None
    if record.get('episode_id') != message.episode_id:
        raise GraphError('Result record_json is not the record of its episode_id')
    return record


def read_spec(message: Any) -> EpisodeSpec:
    """``spec_from_message`` then ``resolve``: a spec the sim can build (a ``RoboFollowError`` otherwise)."""
    spec = spec_from_message(message)
    spec.resolve()
    return spec
