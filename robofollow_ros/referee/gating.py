"""Gating (protocol §4.7): a stage's score counts only when the stages it depends on are full.

Rules, on the raw all-or-nothing stage results (I = Intent, E = Execution):

* ``chain`` (three stages): I2 needs I1; I3 needs I1, I2; E2 needs I1, E1, I2; E3 needs I1, E1, I2, E2, I3.
* ``pickup`` (source select + finish): I_finish needs I1; E_finish needs I1, E1, I_finish.
* ``sequence`` (S4 action A, action B, finish): as ``chain`` except that E_B needs only I_A and I_B
  (stage B is not gated by A's Execution).
* ``push`` (published S2 push): as ``chain`` except that E1 needs nothing (push setup Execution is
  awarded without Intent).
* ``none`` (published S4 sequence): the raw stages as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from robofollow_ros.referee.stage import StageOutcome

GateRule = Literal['pickup', 'chain', 'sequence', 'push', 'none']


@dataclass(frozen=True)
class GatedStage:
    """A stage score after gating (before bonuses and penalties)."""

    name: str
    max: float
    intent: float
    exec: float
    intent_reason: str
    exec_reason: str

    def intent_full(self, tolerance: float) -> bool:
        """Intent reaches the stage maximum."""
        return self.intent + tolerance >= self.max

    def exec_full(self, tolerance: float) -> bool:
        """Execution reaches the stage maximum."""
        return self.exec + tolerance >= self.max


Requirement = tuple[tuple[int, str], ...]

_RULES: dict[str, tuple[tuple[Requirement, Requirement], ...]] = {
    'pickup': (
        ((), ((0, 'I'),)),
        (((0, 'I'),), ((0, 'I'), (0, 'E'), (1, 'I'))),
    ),
    'chain': (
        ((), ((0, 'I'),)),
        (((0, 'I'),), ((0, 'I'), (0, 'E'), (1, 'I'))),
        (((0, 'I'), (1, 'I')), ((0, 'I'), (0, 'E'), (1, 'I'), (1, 'E'), (2, 'I'))),
    ),
    'sequence': (
        ((), ((0, 'I'),)),
        (((0, 'I'),), ((0, 'I'), (1, 'I'))),
        (((0, 'I'), (1, 'I')), ((0, 'I'), (0, 'E'), (1, 'I'), (1, 'E'), (2, 'I'))),
    ),
    'push': (
        ((), ()),
        (((0, 'I'),), ((0, 'I'), (0, 'E'), (1, 'I'))),
        (((0, 'I'), (1, 'I')), ((0, 'I'), (0, 'E'), (1, 'I'), (1, 'E'), (2, 'I'))),
    ),
    'none': (((), ()),) * 3,
}

_LABEL = {'I': 'Intent', 'E': 'Execution'}


def apply_gates(stages: Sequence[StageOutcome], rule: GateRule) -> tuple[GatedStage, ...]:
    """Turn raw stage results into scores, zeroing each score whose dependencies are not full."""
    rules = _RULES[rule]
    if len(rules) != len(stages):
        raise ValueError(f'gate rule {rule!r} expects {len(rules)} stages, got {len(stages)}')
    raw = {(i, 'I'): stage.intent for i, stage in enumerate(stages)} | {
        (i, 'E'): stage.exec for i, stage in enumerate(stages)
    }
    gated = []
    for i, (stage, (intent_needs, exec_needs)) in enumerate(zip(stages, rules, strict=True)):
        scores = []
        for kind, passed, reason, needs in (
            ('I', stage.intent, stage.intent_reason, intent_needs),
            ('E', stage.exec, stage.exec_reason, exec_needs),
        ):
            missing = [(j, k) for j, k in needs if (j, k) != (i, kind) and not raw[(j, k)]]
            if passed and missing:
                j, k = missing[0]
                scores.append((0.0, f'gated: {stages[j].name} {_LABEL[k]} not full ({reason})'))
            else:
                scores.append((stage.max if passed else 0.0, reason))
        (intent, intent_reason), (execution, exec_reason) = scores
        gated.append(GatedStage(stage.name, stage.max, intent, execution, intent_reason, exec_reason))
    return tuple(gated)
