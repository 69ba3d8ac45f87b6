"""A batching front for ``serve-policy``: the queries of concurrent episodes answered by one batched forward pass.

Several episodes at once (``eval --workers N`` or Ray against one server, several graphs) each send one query at a
time. A policy that can answer several observations in one call (``predict_batch(observations, instructions)``, as
LeRobot's chunk policies and GR00T's server can) is then called once for the queries that arrived within
``window`` seconds of the first, up to ``max_batch`` of them, instead of once per query, one after another.

Such a policy is stateless from one query to the next (its chunk depends on the observation and the instruction
only): every connection is one episode, with its own instruction, and the policy's ``reset`` is never called
between them. A query waits at most ``window`` longer than it would alone; what each episode gets is what its
query alone would give (``test_serve_batching.py``). A batch whose call fails (one episode's observation the policy
cannot take, a chunk that is not finite) is asked again query by query, so only the episode that caused it fails.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.base import validate_chunk
from robofollow_ros.policy.observation import Observation
from robofollow_ros.policy.wire import wire_observation

DEFAULT_WINDOW = 0.005
"""Seconds a batch waits after its first query for more (``--batch-window-ms``)."""


@dataclass
class _Query:
    observation: Observation
    instruction: str | None
    done: threading.Event = field(default_factory=threading.Event)
    chunk: np.ndarray | None = None
    error: BaseException | None = None


def can_batch(policy: object) -> bool:
    """Whether ``policy`` answers several observations in one call (``predict_batch``, unless it says it is not
    ``batchable``)."""
    return callable(getattr(policy, 'predict_batch', None)) and bool(getattr(policy, 'batchable', True))


class BatchedPolicy:
    """The policy behind a server, answering the queries of all connections in batches (module docstring).

    Args:
        policy: has ``predict_batch(observations, instructions) -> chunks`` (``can_batch``).
        name: the policy's name (the servers' metadata).
        max_batch: at most this many queries per call.
        window: seconds a batch waits after its first query for more.
    """

    def __init__(self, policy: Any, *, name: str, max_batch: int, window: float = DEFAULT_WINDOW) -> None:
        if not can_batch(policy):
            raise PolicyError(f'{name} has no predict_batch(observations, instructions): it cannot be batched')
        if max_batch < 1:
            raise PolicyError(f'the batch size must be at least 1, got {max_batch}')
        if not window >= 0.0:
            raise PolicyError(f'the batch window must be 0 or more seconds, got {window}')
        self.policy = policy
        self.name = name
        self.max_batch = max_batch
        self.window = window
        self.batch_sizes: Counter[int] = Counter()
        """How many calls were made with each batch size."""
        self.split_batches = 0
        """Batches whose call failed and whose queries were then asked one by one (only the bad one fails)."""
        self._waiting: list[_Query] = []
        self._condition = threading.Condition()
        self._closed = False
        self._worker = threading.Thread(target=self._serve, name='batch-front', daemon=True)
        self._worker.start()

    def session(self) -> BatchSession:
        """What one connection (one episode) talks to."""
        return BatchSession(self)

    def submit(self, observation: Observation, instruction: str | None) -> np.ndarray:
        """This query's chunk, answered in the next batch (blocks until then).

        Raises:
            PolicyError: the policy failed on the batch, or answered it wrongly, or the server is closing.
        """
        query = _Query(observation, instruction)
        with self._condition:
            if self._closed:
                raise PolicyError('the server is closing')
            self._waiting.append(query)
            self._condition.notify_all()
        query.done.wait()
        if query.error is not None:
            raise query.error
        assert query.chunk is not None
        return query.chunk

    def _next_batch(self) -> list[_Query] | None:
        with self._condition:
            while not self._waiting and not self._closed:
                self._condition.wait()
            if self._closed:
                return None
            due = time.monotonic() + self.window
            while len(self._waiting) < self.max_batch and not self._closed:
                left = due - time.monotonic()
                if left <= 0.0:
                    break
                self._condition.wait(left)
            batch, self._waiting = self._waiting[: self.max_batch], self._waiting[self.max_batch :]
            return batch

    def _serve(self) -> None:
        while (batch := self._next_batch()) is not None:
            self.batch_sizes[len(batch)] += 1
            try:
                self._answer(batch)
            except Exception as error:  # the server goes on; which query failed is found by asking each alone
                if len(batch) == 1:
                    batch[0].error = error
                else:
                    self.split_batches += 1
                    for query in batch:
                        try:
                            self._answer([query])
                        except Exception as alone:
                            query.error = alone
            for query in batch:
                query.done.set()

    def _answer(self, batch: list[_Query]) -> None:
        chunks = self.policy.predict_batch([q.observation for q in batch], [q.instruction for q in batch])
        if len(chunks) != len(batch):
            raise PolicyError(f'predict_batch answered {len(chunks)} chunks for {len(batch)} observations')
        checked = [validate_chunk(chunk) for chunk in chunks]
        for query, chunk in zip(batch, checked, strict=True):
            query.chunk = chunk

    def close(self) -> None:
        """Fail the queries still waiting, stop the front and release the policy."""
        with self._condition:
            self._closed = True
            waiting, self._waiting = self._waiting, []
            self._condition.notify_all()
        for query in waiting:
            query.error = PolicyError('the server is closing')
            query.done.set()
        self._worker.join(timeout=10)
        close = getattr(self.policy, 'close', None)
        if close is not None:
            close()


class BatchSession:
    """One connection of a ``BatchedPolicy``: its own instruction; the policy is shared and never reset."""

    def __init__(self, front: BatchedPolicy) -> None:
        self.front = front
        self.instruction: str | None = None

    def reset(self) -> None:
        """A new episode on this connection: its instruction is forgotten."""
        self.instruction = None

    def set_instruction(self, text: object) -> None:
        """This episode's instruction (a wire's payload, refused unless it is a string)."""
        if not isinstance(text, str):
            raise PolicyError(f'the instruction must be a string, got {type(text).__name__}')
        self.instruction = text

    def predict(self, images: Mapping[str, np.ndarray], state: np.ndarray, instruction: str | None) -> np.ndarray:
        """The validated chunk for one observation (``instruction``: openpi's per-request prompt, else the one set)."""
        if instruction is not None:
            self.instruction = instruction
        return self.front.submit(wire_observation(images, state), self.instruction)
