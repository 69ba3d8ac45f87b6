"""``GuardedPolicy``: a policy called off the executor thread with a timeout, every chunk checked before it is used."""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.graph.chunk_limits import ChunkLimits
from robofollow_ros.policy.base import validate_chunk


class GuardedPolicy:
    """Wraps a policy: ``predict`` runs in a worker thread, must answer within ``timeout`` seconds, and its chunk
    must pass ``validate_chunk`` and ``limits`` over the rows that will be executed; otherwise ``PolicyError``.

    A policy that timed out keeps its worker thread; the next call gets a fresh one.
    """

    def __init__(self, policy: Any, *, limits: ChunkLimits, timeout: float, max_rows: int) -> None:
        self.policy = policy
        self.limits = limits
        self.timeout = timeout
        self.max_rows = max_rows
        self.predict_seconds: list[float] = []
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix='policy')

    def __getattr__(self, name: str) -> Any:
        return getattr(self.policy, name)

    def reset(self) -> None:
        """Reset the wrapped policy and the timing record."""
        self.predict_seconds = []
        self.policy.reset()

    def set_instruction(self, text: str) -> None:
        """Pass the instruction on."""
        self.policy.set_instruction(text)

    def predict(self, observation: Any) -> np.ndarray:
        """The wrapped policy's chunk, checked.

        Raises:
            PolicyError: timeout, a failure of the policy, or a chunk that fails a check.
        """
        started = time.perf_counter()
        future = self._pool.submit(self.policy.predict, observation)
        try:
            raw = future.result(timeout=self.timeout)
        except concurrent.futures.TimeoutError:
            self._pool.shutdown(wait=False)
            self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix='policy')
            raise PolicyError(f'policy did not answer within {self.timeout:g} s') from None
        finally:
            self.predict_seconds.append(time.perf_counter() - started)
        chunk = validate_chunk(raw, max_rows=self.max_rows)
        self.limits.check(chunk, np.asarray(observation.state))
        return chunk

    def close(self) -> None:
        """Close the wrapped policy (if it can be) and the worker thread."""
        close = getattr(self.policy, 'close', None)
        if close is not None:
            close()
        self._pool.shutdown(wait=False)
