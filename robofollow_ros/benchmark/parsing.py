"""Lenient parsing of scene, level and variant names given by users (CLI, launch parameters)."""

from __future__ import annotations

import re

from robofollow_ros.benchmark.constants import LEVELS, SCENES, VARIANTS
from robofollow_ros.benchmark.types import Variant
from robofollow_ros.errors import UnknownLevelError, UnknownSceneError, UnknownVariantError


def parse_scene(value: int | str) -> int:
    """Scene number from ``1``, ``'1'``, ``'s1'``, ``'S1'`` or ``'scene1'``; raises ``UnknownSceneError``."""
    text = str(value).strip().lower()
    match = re.fullmatch(r'(?:s|scene)?\s*(\d+)', text)
    if match is None or isinstance(value, bool) or int(match[1]) not in SCENES:
        raise UnknownSceneError(
            f'unknown scene {value!r}: expected one of {", ".join(map(str, SCENES))} (or s1, scene1)'
        )
    return int(match[1])


def parse_level(value: int | str) -> int:
    """Level number from ``0``, ``'0'``, ``'L0'`` or ``'l0'``; raises ``UnknownLevelError``."""
    text = str(value).strip().lower()
    match = re.fullmatch(r'(?:l|level)?\s*(\d+)', text)
    if match is None or isinstance(value, bool) or int(match[1]) not in LEVELS:
        raise UnknownLevelError(f'unknown level {value!r}: expected one of L0, L1, L2, L3 (or 0-3)')
    return int(match[1])


def parse_variant(value: str) -> Variant:
    """``'published'`` or ``'corrected'``; raises ``UnknownVariantError`` otherwise (also for the old ``'literal'``)."""
    text = str(value).strip().lower()
    for variant in VARIANTS:
        if text == variant:
            return variant
    expected = ' or '.join(VARIANTS)
    if text == 'literal':
        raise UnknownVariantError(
            f"variant 'literal' no longer exists: expected {expected} (its truth is part of corrected)"
        )
    raise UnknownVariantError(f'unknown variant {value!r}: expected {expected}')
