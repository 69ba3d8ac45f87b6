"""Intent confusion: for a trial whose Intent is not full, what the policy went for instead.

Each such trial gets one category: a conditional whose other branch was carried out is a wrong branch;
otherwise the first wrong choice in the order the instruction's choices are made: the arm, the object (a
same-colour or same-shape distractor, or another object), what was done with it, where it went (target,
side, route, orientation), the second object of a sequence. A trial that chose everything right but still
lost Intent (e.g. released too early) is ``right choices, not achieved``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.types import Layout
from robofollow_ros.referee.selection import Selection, mismatches

NO_GRASP = 'no grasp'
WRONG_ARM = 'wrong arm'
NOTHING = 'closed on nothing'
SAME_COLOUR = 'same-colour distractor'
SAME_SHAPE = 'same-shape distractor'
OTHER_OBJECT = 'other object'
RIGHT_CHOICES = 'right choices, not achieved'
NOT_READ = 'not read'
FIELD_CATEGORIES: dict[str, str] = {
    'action': 'wrong action',
    'target': 'wrong target',
    'relation': 'wrong side',
    'route': 'wrong route',
    'orientation': 'wrong orientation',
    'branch': 'wrong branch',
    'second': 'wrong second object',
}
CATEGORIES: tuple[str, ...] = (
    NO_GRASP,
    WRONG_ARM,
    NOTHING,
    SAME_COLOUR,
    SAME_SHAPE,
    OTHER_OBJECT,
    *FIELD_CATEGORIES.values(),
    RIGHT_CHOICES,
    NOT_READ,
)


def colour_of(name: str) -> str:
    """The colour word of an object name (``red_sphere`` -> ``red``; ``large_blue_cube`` -> ``blue``)."""
    words = name.split('_')
    return words[1] if words[0] in ('large', 'small') and len(words) > 1 else words[0]


def _object_category(observed: str, required: str, layout: Layout) -> str:
    if colour_of(observed) == colour_of(required):
        return SAME_COLOUR
    if layout.spec(observed).shape == layout.spec(required).shape:
        return SAME_SHAPE
    return OTHER_OBJECT


@dataclass(frozen=True)
class Confusion:
    """One trial's confusion: the category and a phrase saying what was chosen instead of what."""

    category: str
    detail: str


def classify(observed: Selection, required: Selection, layout: Layout) -> Confusion:
    """The confusion category of a trial whose policy made ``observed`` where ``required`` was asked."""
    if observed.arm is None:
        return Confusion(NO_GRASP, 'no gripper closed')
    if required.branch is not None and observed.branch not in (None, required.branch):
        return Confusion(
            FIELD_CATEGORIES['branch'], f'the {observed.branch} branch instead of the {required.branch} branch'
        )
    if observed.arm != required.arm:
        return Confusion(WRONG_ARM, f'{observed.arm} arm instead of {required.arm}')
    if required.object is not None and observed.object != required.object:
        if observed.object is None:
            return Confusion(NOTHING, f'closed away from every object (wanted {required.object})')
        category = _object_category(observed.object, required.object, layout)
        return Confusion(category, f'{observed.object} instead of {required.object}')
    for name in mismatches(observed, required):
        if name in FIELD_CATEGORIES:
            chosen, wanted = getattr(observed, name), getattr(required, name)
            return Confusion(FIELD_CATEGORIES[name], f'{name} {chosen or "none"} instead of {wanted}')
    return Confusion(RIGHT_CHOICES, 'every constrained choice matches; Intent lost on execution details')


@dataclass(frozen=True)
class ConfusionTable:
    """Counts of confusion categories per scene and level, over the trials whose Intent is not full."""

    counts: Mapping[tuple[int, str], Counter[str]]
    trials: Mapping[tuple[int, str], int]
    details: Mapping[tuple[int, str], Counter[str]]

    def groups(self) -> list[tuple[int, str]]:
        """The (scene, level) groups in order."""
        return sorted(self.trials)

    def rows(self) -> list[dict[str, Any]]:
        """One row per group: trials, trials not full, and the count of each category."""
        rows = []
        for group in self.groups():
            counts = self.counts.get(group, Counter())
            row: dict[str, Any] = {
                'scene': group[0],
                'level': group[1],
                'trials': self.trials[group],
                'not_full': sum(counts.values()),
            }
            row.update({category: counts.get(category, 0) for category in CATEGORIES})
            rows.append(row)
        return rows

    def markdown(self) -> str:
        """The table as Markdown, keeping only the categories that occur."""
        used = [c for c in CATEGORIES if any(self.counts.get(g, Counter()).get(c) for g in self.groups())]
        header = ['Scene', 'Level', 'Trials', 'Not full', *used]
        lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
        for row in self.rows():
            cells = [f'S{row["scene"]}', row['level'], row['trials'], row['not_full'], *(row[c] for c in used)]
            lines.append('| ' + ' | '.join(str(cell) for cell in cells) + ' |')
        return '\n'.join(lines) + '\n'

    def top_details(self, *, most: int = 3) -> dict[tuple[int, str], list[tuple[str, int]]]:
        """The most frequent 'what instead of what' phrases per group."""
        return {group: self.details[group].most_common(most) for group in self.groups() if self.details.get(group)}


def record_confusion(record: Mapping[str, Any]) -> Confusion:
    """The confusion of one result record (its ``selection`` and ``required_selection`` fields).

    Records without them (never scored, or written before the referee read selections) are ``not read``.
    """
    observed, required = record.get('selection'), record.get('required_selection')
    if not observed or not required:
        reason = record.get('policy_error') or record.get('intent_msg') or 'no selection in the record'
        return Confusion(NOT_READ, str(reason))
    layout = registry.get_layout(int(record['scene']), str(record['layout']))
    return classify(Selection.from_dict(observed), Selection.from_dict(required), layout)


def confusion_table(records: Iterable[Mapping[str, Any]]) -> ConfusionTable:
    """Per scene and level: the trials, and the confusion category of each trial whose Intent is not full."""
    counts: dict[tuple[int, str], Counter[str]] = defaultdict(Counter)
    details: dict[tuple[int, str], Counter[str]] = defaultdict(Counter)
    trials: Counter[tuple[int, str]] = Counter()
    for record in records:
        group = (int(record['scene']), str(record['level_tag']))
        trials[group] += 1
        if record.get('intent_ok'):
            continue
        confusion = record_confusion(record)
        counts[group][confusion.category] += 1
        details[group][confusion.detail] += 1
    return ConfusionTable(counts=dict(counts), trials=dict(trials), details=dict(details))
