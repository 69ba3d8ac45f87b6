"""The raw outcome of one scoring stage, before gating."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StageOutcome:
    """One stage as evaluated: all-or-nothing Intent and Execution with their reasons.

    Attributes:
        name: protocol stage name, e.g. ``stage1_source_select``.
        max: the stage's maximum score (same for Intent and Execution).
        intent: Intent passed (raw, before gating).
        exec: Execution passed (raw, before gating).
        intent_reason: why Intent passed or failed.
        exec_reason: why Execution passed or failed.
        frame: the stage's key sample (first Intent frame, best push frame...), or ``None``.
    """

    name: str
    max: float
    intent: bool
    exec: bool
    intent_reason: str
    exec_reason: str
    frame: int | None = None

    def zeroed(self, reason: str) -> StageOutcome:
        """This stage with Intent and Execution set to 0 for ``reason``."""
        return StageOutcome(self.name, self.max, False, False, reason, reason, self.frame)


def failed(name: str, maximum: float, reason: str) -> StageOutcome:
    """A stage that scores 0/0 for ``reason``."""
    return StageOutcome(name, maximum, False, False, reason, reason)
