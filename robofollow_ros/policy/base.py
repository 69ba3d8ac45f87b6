"""The one policy interface and the validation every action chunk passes before it moves an arm."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.observation import Observation
from robofollow_ros.state_layout import ACTION_DIM

INTERFACE = ('reset', 'set_instruction', 'predict')
NUMERIC_KINDS = 'fiu'


@runtime_checkable
class Policy(Protocol):
    """A policy maps an observation and an instruction to a chunk of absolute joint targets.

    ``predict`` returns an array of shape [T, 14] (T >= 1) of real numbers, laid out as
    ``[left q1..q6, left gripper, right q1..q6, right gripper]``; grippers are normalised (1 open, 0 closed).
    A policy that does not look at the cameras sets ``needs_images = False`` and gets no images.
    """

    def reset(self) -> None:
        """Forget everything about the previous episode."""

    def set_instruction(self, text: str) -> None:
        """Set the natural-language instruction of the episode."""

    def predict(self, observation: Observation) -> np.ndarray:
        """Return the next action chunk for ``observation``."""


@runtime_checkable
class PrivilegedPolicy(Policy, Protocol):
    """A built-in reference policy that is told the task and layout (only the factory grants this)."""

    def bind_task(self, task: Any, layout: Any) -> None:
        """Receive the episode's task (with ground truth) and layout before the first ``predict``."""


def check_interface(policy: object, *, name: str) -> None:
    """Raise ``PolicyError`` unless ``policy`` has callable ``reset``, ``set_instruction`` and ``predict``."""
    missing = [method for method in INTERFACE if not callable(getattr(policy, method, None))]
    if missing:
        raise PolicyError(
            f'policy {name!r} returned a {type(policy).__name__!r} that lacks {", ".join(missing)}: '
            'a policy needs reset(), set_instruction(text) and predict(observation)'
        )


def needs_images(policy: object) -> bool:
    """Whether the evaluator must render camera images for ``policy`` (default: yes)."""
    return bool(getattr(policy, 'needs_images', True))


def validate_chunk(chunk: object, *, max_rows: int | None = None) -> np.ndarray:
    """Return ``chunk`` as a float32 [T, 14] array, or raise ``PolicyError`` saying what is wrong.

    Only real numbers (float, int) in two dimensions are accepted; a single row must still be [1, 14].
    Booleans, complex numbers, strings and objects are refused rather than cast.

    Args:
        chunk: what the policy returned.
        max_rows: keep at most this many leading rows (the protocol executes at most 50 per query).
    """
    try:
        array = np.asarray(chunk)
    except (TypeError, ValueError) as error:
        raise PolicyError(f'action chunk is not an array of numbers: {error}') from error
    if array.dtype.kind not in NUMERIC_KINDS:
        raise PolicyError(f'action chunk must hold real numbers (float or int), got dtype {array.dtype}')
    if array.ndim != 2 or array.shape[1] != ACTION_DIM or array.shape[0] < 1:
        raise PolicyError(f'action chunk must have shape [T, {ACTION_DIM}] with T >= 1, got {list(array.shape)}')
    array = array.astype(np.float32)
    finite = np.isfinite(array)
    if not finite.all():
        row, column = np.argwhere(~finite)[0]
        raise PolicyError(f'action chunk has a non-finite value at row {row}, column {column}')
    if max_rows is not None:
        array = array[:max_rows]
    return array
