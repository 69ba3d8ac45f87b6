"""Which episode an instruction on ``/robofollow/instruction`` starts: the episode the sim was last reset to, not run
yet, whose spec carries that very instruction.

The topic is a plain ``std_msgs/String`` (a person can type one), so the instruction is tied to its episode by its
text: the evaluator sends ``spec.instruction`` after the reset. An instruction left over from an abandoned attempt
(or typed by hand) would otherwise start the latest episode with words its record does not hold, and the record
would say the policy was told what it was not.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from robofollow_ros.errors import RoboFollowError
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.ros.observation_cache import ObservationCache
from robofollow_ros.ros.protocol import StatusEvent


@dataclass(frozen=True)
class InstructionMatch:
    """The episode an instruction starts (``spec``), or why it starts none (``ignored``)."""

    spec: EpisodeSpec | None
    ignored: str | None = None


def latest_reset(cache: ObservationCache, specs: Mapping[str, EpisodeSpec], ran: Collection[str]) -> EpisodeSpec | None:
    """The spec of the episode the sim last reported reset to, if it is here and that episode has not run."""
    found = cache.find_status(lambda s: s.event is StatusEvent.RESET)
    if found is None:
        return None
    episode_id = found[1].episode_id
    return None if episode_id in ran else specs.get(episode_id)


def episode_for_instruction(
    instruction: str,
    *,
    cache: ObservationCache,
    specs: Mapping[str, EpisodeSpec],
    ran: Collection[str],
    timeout: float,
    superseded: Callable[[], bool],
) -> InstructionMatch:
    """Wait (at most ``timeout`` seconds) until the latest reset episode not run yet is the one ``instruction``
    belongs to. Gives up at once when ``superseded()`` (a newer instruction is waiting: this one's episode was
    abandoned), and at the timeout (no reset of an episode with these words came)."""

    def settled() -> bool:
        spec = latest_reset(cache, specs, ran)
        return (spec is not None and spec.instruction == instruction) or superseded()

    try:
        cache.wait(settled, timeout=timeout, what='a new episode')
    except RoboFollowError as error:
        return InstructionMatch(None, _unmatched(instruction, latest_reset(cache, specs, ran), str(error)))
    with cache.condition:
        spec = latest_reset(cache, specs, ran)
    if spec is not None and spec.instruction == instruction:
        return InstructionMatch(spec)
    return InstructionMatch(None, _unmatched(instruction, spec, 'a newer instruction came'))


def _unmatched(instruction: str, spec: EpisodeSpec | None, why: str) -> str:
    if spec is None:
        return f'instruction {instruction!r} without a new episode and reset ({why}): ignored'
    return (
        f'instruction {instruction!r} is not the one of episode {spec.episode_id} ({spec.task_id}: '
        f'{spec.instruction!r}; {why}): ignored'
    )
