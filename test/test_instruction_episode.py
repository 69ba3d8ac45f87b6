"""An instruction starts the episode it belongs to: the latest reset episode not run yet whose spec carries its
words; a left-over instruction of an abandoned attempt never starts the next episode under its own words."""

from __future__ import annotations

import threading
import time

from robofollow_ros.benchmark.registry import get_task
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.ros.instruction_episode import episode_for_instruction
from robofollow_ros.ros.observation_cache import ObservationCache
from robofollow_ros.ros.protocol import SimStatus, StatusEvent

FIRST = EpisodeSpec.for_trial(get_task('L0_pickup_yellow_block_2'), seed=1, round=1, variant='published')
SECOND = EpisodeSpec.for_trial(
    get_task('L0_place_yellow_block_2_behind_green_sphere'), seed=2, round=1, variant='published'
)


def _reset(cache: ObservationCache, spec: EpisodeSpec) -> None:
    cache.add_status(SimStatus(event=StatusEvent.RESET, episode_id=spec.episode_id, stamp_ns=1_000_000_000))


def _match(
    cache: ObservationCache,
    instruction: str,
    *,
    ran: set[str] | None = None,
    timeout: float = 0.3,
    superseded=lambda: False,
):
    specs = {FIRST.episode_id: FIRST, SECOND.episode_id: SECOND}
    return episode_for_instruction(
        instruction, cache=cache, specs=specs, ran=ran or set(), timeout=timeout, superseded=superseded
    )


def test_the_instruction_of_the_latest_reset_episode_starts_it() -> None:
    assert FIRST.instruction != SECOND.instruction
    cache = ObservationCache()
    _reset(cache, FIRST)
    _reset(cache, SECOND)
    assert _match(cache, SECOND.instruction).spec == SECOND


def test_a_left_over_instruction_does_not_start_the_next_episode() -> None:
    cache = ObservationCache()
    _reset(cache, FIRST)
    _reset(cache, SECOND)  # the first attempt was abandoned before its instruction was taken
    match = _match(cache, FIRST.instruction)
    assert match.spec is None
    assert match.ignored is not None and f'is not the one of episode {SECOND.episode_id}' in match.ignored
    assert match.ignored.endswith(': ignored')


def test_a_left_over_instruction_gives_way_at_once_to_a_newer_one() -> None:
    cache = ObservationCache()
    _reset(cache, SECOND)
    started = time.monotonic()
    match = _match(cache, FIRST.instruction, timeout=30.0, superseded=lambda: True)
    assert match.spec is None and 'a newer instruction came' in str(match.ignored)
    assert time.monotonic() - started < 5.0, 'it must not wait out its timeout'


def test_an_instruction_that_came_before_its_reset_waits_for_it() -> None:
    cache = ObservationCache()
    _reset(cache, FIRST)  # not run yet, and not this instruction's episode
    threading.Timer(0.2, _reset, (cache, SECOND)).start()
    assert _match(cache, SECOND.instruction, timeout=10.0).spec == SECOND


def test_an_episode_runs_once_and_words_typed_by_hand_start_nothing() -> None:
    cache = ObservationCache()
    _reset(cache, SECOND)
    ran = {SECOND.episode_id}
    match = _match(cache, SECOND.instruction, ran=ran)
    assert match.spec is None and 'without a new episode and reset' in str(match.ignored)
    match = _match(ObservationCache(), 'pick up anything')
    assert match.spec is None and 'without a new episode and reset' in str(match.ignored)
