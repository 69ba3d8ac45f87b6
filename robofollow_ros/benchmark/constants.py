"""Names and numbers shared by every scene module of the registry."""

from __future__ import annotations

from robofollow_ros.benchmark.types import Variant

SCENES: tuple[int, ...] = (1, 2, 3, 4)
LEVELS: tuple[int, ...] = (0, 1, 2, 3)
LEVEL_ORDER: tuple[str, ...] = tuple(f'L{level}' for level in LEVELS)
"""Level names as records and reports write them, in order."""
VARIANTS: tuple[Variant, ...] = ('published', 'corrected')
"""Ground-truth and scoring variants; the first is the default (docs/scoring.md)."""
DEFAULT_VARIANT: Variant = VARIANTS[0]

MAX_QUERIES = 10
"""The episode budget (protocol §1.6): the policy is queried at most this many times ..."""
ACTIONS_PER_QUERY = 50
"""... and at most this many rows of each chunk are executed (the one home of the 10 x 50 budget)."""

TRAINING_CONFIGS: tuple[str, ...] = ('scene1', 'scene2', 'scene3', 'scene4_1', 'scene4_2', 'scene4_3')
"""The six task-independent training scene configurations of protocol §2.0, in protocol order."""

FLAG_AMBIGUOUS = 'ambiguous_reference'
"""A positional phrase picks between two items that share a column; the published truth is kept."""

FLAG_LITERAL_DIFFERS = 'literal_differs_from_published'
"""Read literally in its layout, the instruction means other items than the published ground truth."""

FLAG_COMPLEMENTARY_ROUTE = 'complementary_route'
"""A Scene 3 instruction names the route by its complement (avoid the partner / pass over the partner)."""

BASE_SEED = 42
SEED_ROUND_STRIDE = 100
SEED_OFFSET_MODULUS = 1000
