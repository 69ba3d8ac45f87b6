"""Checking the fields of a parsed configuration document (a robot profile, a marker configuration, a camera
calibration, a CameraInfo file), failing in one line that names the document and the field:
``<what> <source>: <field>: <problem>``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, cast

import numpy as np

from robofollow_ros.errors import RoboFollowError


class FieldReader:
    """Reads one document's fields; every check raises ``error`` naming the document and the field.

    Args:
        what: what the document is (``robot profile``), for messages.
        source: where it came from (its path).
        error: the ``RoboFollowError`` subclass to raise.
    """

    def __init__(self, what: str, source: str | Path, *, error: type[RoboFollowError]) -> None:
        self.what = what
        self.source = source
        self.error = error

    def fail(self, field: str, problem: str) -> NoReturn:
        """Raise the one-line error for ``field`` (empty: the document itself)."""
        where = f'{field}: ' if field else ''
        raise self.error(f'{self.what} {self.source}: {where}{problem}'.replace('\n', ' '))

    def mapping(
        self, data: object, field: str, *, required: Sequence[str], optional: Sequence[str] = ()
    ) -> dict[str, Any]:
        """``data`` as a mapping holding every ``required`` key and no key but those and the ``optional`` ones."""
        if not isinstance(data, dict):
            self.fail(field, f'must be a mapping, got {type(data).__name__}')
        prefix = f'{field}.' if field else ''
        known = (*required, *optional)
        for key in data:
            if key not in known:
                self.fail(f'{prefix}{key}', f'is not a field here (known: {", ".join(known)})')
        for key in required:
            if key not in data:
                self.fail(f'{prefix}{key}', 'is missing')
        return cast(dict[str, Any], data)

    def number(
        self,
        value: object,
        field: str,
        *,
        positive: bool = False,
        low: float | None = None,
        high: float | None = None,
        low_open: bool = False,
    ) -> float:
        """``value`` as a finite number, positive, within ``low`` (excluded with ``low_open``) and ``high``."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(field, f'must be a finite number, got {value!r}')
        number = float(value)
        if positive and not number > 0.0:
            self.fail(field, f'must be positive, got {number:g}')
        below = low is not None and (number < low or (low_open and number == low))
        if below or (high is not None and number > high):
            bounds = [] if low is None else [f'> {low}' if low_open else f'>= {low}']
            bounds += [] if high is None else [f'<= {high}']
            self.fail(field, f'{value} is out of range (must be {" and ".join(bounds)})')
        return number

    def vector(self, value: object, field: str, *, sizes: Sequence[int]) -> np.ndarray:
        """``value`` as a list of finite numbers, as many as one of ``sizes``."""
        if not isinstance(value, list) or len(value) not in sizes:
            self.fail(field, f'must be a list of {" or ".join(map(str, sizes))} numbers, got {value!r}')
        return np.array([self.number(v, f'{field}[{i}]') for i, v in enumerate(value)], dtype=np.float64)

    def count(self, value: object, field: str) -> int:
        """``value`` as a positive integer."""
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            self.fail(field, f'must be a positive integer, got {value!r}')
        return value

    def choice(self, value: object, field: str, choices: Sequence[str]) -> str:
        """``value`` as one of ``choices``."""
        if value not in choices:
            self.fail(field, f'must be one of {", ".join(choices)}, got {value!r}')
        return cast(str, value)
