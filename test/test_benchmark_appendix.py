"""The registry reproduces Appendix A of the protocol (test/data/appendix_a.tsv) for all 554 tasks."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from robofollow_ros.benchmark import eval_tasks, get_layout, get_task, trial_seed

APPENDIX = Path(__file__).parent / 'data' / 'appendix_a.tsv'

RELATIONS = {
    'place_behind': 'behind',
    'place_beside': 'right_of',
    'place_left_of': 'left_of',
    'place_in_front': 'in_front',
}


def _rows() -> list[dict[str, str]]:
    with APPENDIX.open() as handle:
        lines = [line for line in handle if not line.startswith('#')]
    return list(csv.DictReader(lines, delimiter='\t'))


ROWS = _rows()


def _expected_truth(row: dict[str, str]) -> dict[str, object]:
    """The appendix's behaviour column as ground-truth fields."""
    action, target = row['action'], row['target']
    expected: dict[str, object] = {'arm': row['arm'], 'source': row['source']}
    if action in RELATIONS:
        return expected | {'action': 'place_relative', 'relation': RELATIONS[action], 'target': target}
    expected['action'] = action
    if action == 'place_on_label_route':
        route, route_object, label, mode = re.fullmatch(r'(via|around) (\S+) -> (\S+) \((\w+)\)', target).groups()
        return expected | {'route': route, 'route_object': route_object, 'target': label, 'place_mode': mode}
    if action == 'sequence_pickups':
        then_source, then_arm = re.fullmatch(r'then (\S+)/(left|right)', target).groups()
        return expected | {'then_source': then_source, 'then_arm': then_arm}
    if action == 'unstack_to_slot':
        return expected | {'slot': int(re.fullmatch(r'slot (\d)', target)[1])}
    return expected | {'target': target or None}


def test_appendix_file_holds_554_tasks():
    assert len(ROWS) == 554
    assert len({row['task_id'] for row in ROWS}) == 554


def test_registry_lists_the_appendix_ids_in_order():
    assert [task.task_id for task in eval_tasks(variant='published')] == [row['task_id'] for row in ROWS]


@pytest.mark.parametrize('row', ROWS, ids=[row['task_id'] for row in ROWS])
def test_published_variant_matches_appendix(row: dict[str, str]):
    task = get_task(row['task_id'], variant='published')
    assert task.scene == int(row['scene'])
    assert task.level == int(row['level'])
    assert get_layout(task.scene, row['layout']).name == task.layout
    truth = task.truth
    for field, value in _expected_truth(row).items():
        assert getattr(truth, field) == value, field
    assert task.arm == row['arm']


def test_seed_offsets_match_appendix_for_every_task():
    for row in ROWS:
        offset = int(row['seed_offset'])
        for round_number in (1, 4, 10):
            assert trial_seed(row['task_id'], round_number) == 42 + 100 * round_number + offset


def test_corrected_variant_departs_from_appendix_only_for_the_swapped_bowls():
    differing = []
    for row in ROWS:
        task = get_task(row['task_id'], variant='corrected')
        if task.truth.target != (_expected_truth(row).get('target')):
            differing.append((row['task_id'], row['target'], task.truth.target))
    assert len(differing) == 8
    swap = {'green_bowl': 'yellow_bowl', 'yellow_bowl': 'green_bowl'}
    for task_id, published, literal in differing:
        assert re.match(r'L3_scene2_[56]_', task_id)
        assert literal == swap[published]
