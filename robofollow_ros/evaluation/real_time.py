"""Whether a real cell (or fake hardware) kept real time through an episode, as its result record says.

The bridge measures what the arms showed: the gaps between an arm's joint states (a driver or fake hardware that
falls behind sends them late, or its messages wait in a loaded machine), and the chunks whose last row the measured
arm had not reached ``settle_timeout`` after it was due (the arm lagged its commands). A trial that did not keep real
time is still scored; its record carries ``real_time`` with ``kept: false`` and the terminal and run.json say so,
so that its score is read knowing the cell ran behind. Simulated episodes have no such field (the sim's time waits).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

LATE_GAP_ROWS = 2.0
"""A joint-state gap longer than this many chunk rows counts as late: the arm went unobserved for two rows."""


@dataclass(frozen=True)
class RealTimeKeeping:
    """What an episode on a real cell showed of keeping real time.

    Attributes:
        state_gap_max_s: the largest gap between two joint states of one arm (s).
        late_state_gaps: the gaps longer than ``late_gap_s``.
        late_gap_s: the limit a gap was judged against (``LATE_GAP_ROWS`` rows of the profile).
        unreached_chunks: chunks whose last row the measured arm had not reached ``settle_timeout`` after it.
    """

    state_gap_max_s: float
    late_state_gaps: int
    late_gap_s: float
    unreached_chunks: int

    @classmethod
    def from_record(cls, field: Mapping[str, Any]) -> RealTimeKeeping:
        """Back from a record's ``real_time`` field."""
        return cls(
            state_gap_max_s=float(field.get('state_gap_max_s', 0.0)),
            late_state_gaps=int(field.get('late_state_gaps', 0)),
            late_gap_s=float(field.get('late_gap_s', 0.0)),
            unreached_chunks=int(field.get('unreached_chunks', 0)),
        )

    @property
    def kept(self) -> bool:
        """No late joint state and every chunk reached."""
        return self.late_state_gaps == 0 and self.unreached_chunks == 0

    def record(self) -> dict[str, Any]:
        """The record's ``real_time`` field."""
        return {
            'kept': self.kept,
            'state_gap_max_s': round(self.state_gap_max_s, 4),
            'late_state_gaps': self.late_state_gaps,
            'late_gap_s': round(self.late_gap_s, 4),
            'unreached_chunks': self.unreached_chunks,
        }

    def summary(self) -> str:
        """``real time not kept: 3 joint-state gaps over 0.12 s (largest 0.41 s), 1 chunk not reached``."""
        parts = []
        if self.late_state_gaps:
            parts.append(
                f'{self.late_state_gaps} joint-state gaps over {self.late_gap_s:g} s '
                f'(largest {self.state_gap_max_s:.2f} s)'
            )
        if self.unreached_chunks:
            parts.append(f'{self.unreached_chunks} chunks not reached in time')
        return f'real time {"kept" if self.kept else "not kept"}' + (f': {", ".join(parts)}' if parts else '')


def trials_not_real_time(records: Iterable[Mapping[str, Any]]) -> int:
    """How many of ``records`` say their cell did not keep real time."""
    return sum(
        1
        for record in records
        if isinstance(record.get('real_time'), Mapping) and record['real_time'].get('kept') is False
    )
