"""Policies that misbehave on purpose, importable as ``policy_doubles:<name>`` (test/ is on the path)."""

from __future__ import annotations

import os
import time

import numpy as np

seen: list[object] = []
bound: list[object] = []
instructions: list[str] = []
built: list[object] = []


class HoldingPolicy:
    """Holds the observed state for three rows; ``ROBOFOLLOW_TEST_SLEEP`` seconds of thinking per query.

    With ``ROBOFOLLOW_TEST_THINKING`` set to a path, each query first creates that file.
    """

    needs_images = False

    def __init__(self, rows: int = 3) -> None:
        self.rows = rows
        built.append(self)

    def reset(self) -> None:
        pass

    def set_instruction(self, text: str) -> None:
        instructions.append(text)

    def predict(self, observation):
        thinking = os.environ.get('ROBOFOLLOW_TEST_THINKING')
        if thinking:  # tells a test, without guessing at timing, that a query is under way
            open(thinking, 'a').close()
        time.sleep(float(os.environ.get('ROBOFOLLOW_TEST_SLEEP', '0')))
        return np.tile(np.asarray(observation.state, dtype=np.float32), (self.rows, 1))

    def close(self) -> None:
        pass


class SpyPolicy(HoldingPolicy):
    """Looks at the cameras, keeps every observation and would take the task if it were offered."""

    needs_images = True

    def bind_task(self, task, layout) -> None:
        bound.append((task, layout))

    def predict(self, observation):
        seen.append(observation)
        return super().predict(observation)


def raising_factory():
    raise RuntimeError('checkpoint not found')


def not_a_policy():
    return object()


class ResetRaises(HoldingPolicy):
    def reset(self) -> None:
        raise ValueError('reset exploded')


class InstructionRaises(HoldingPolicy):
    def set_instruction(self, text: str) -> None:
        raise LookupError('no tokenizer')


class ExitingPolicy(HoldingPolicy):
    def predict(self, observation):
        raise SystemExit(3)


class InterruptingPolicy(HoldingPolicy):
    def predict(self, observation):
        raise KeyboardInterrupt


class BoolPolicy(HoldingPolicy):
    def predict(self, observation):
        return np.ones((2, 14), dtype=bool)


class OneDimensionalPolicy(HoldingPolicy):
    def predict(self, observation):
        return np.asarray(observation.state, dtype=np.float32)


class SlowFirstInstance(HoldingPolicy):
    """The first instance built never answers its first query in time; later instances are fine."""

    def __init__(self) -> None:
        super().__init__()
        self.slow = len(built) == 1

    def predict(self, observation):
        if self.slow:
            time.sleep(60.0)
        return super().predict(observation)
