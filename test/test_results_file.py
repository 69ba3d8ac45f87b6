"""The resumable results file keeps every record written before a crash."""

import json

import pytest

from robofollow_ros.errors import RoboFollowError
from robofollow_ros.evaluation.results import ResultsFile


def record(task_id, round_, score=1.0):
    return {
        'task_id': task_id,
        'round': round_,
        'scene': 1,
        'level_tag': 'L0',
        'intent_score': score,
        'exec_score': score,
        'intent_ok': True,
        'exec_ok': True,
        'completion_ok': True,
    }


def test_records_survive_reopening(tmp_path):
    path = tmp_path / 'results.jsonl'
    results = ResultsFile(path)
    results.append(record('L0_a', 1))
    results.append(record('L0_b', 1))
    reopened = ResultsFile(path)
    assert reopened.done() == {('L0_a', 1), ('L0_b', 1)}
    assert [r['task_id'] for r in reopened.records] == ['L0_a', 'L0_b']


def test_a_truncated_last_line_is_dropped_and_the_file_repaired(tmp_path):
    path = tmp_path / 'results.jsonl'
    path.write_text(json.dumps(record('L0_a', 1)) + '\n' + json.dumps(record('L0_b', 1))[:40], encoding='utf-8')
    results = ResultsFile(path)
    assert results.done() == {('L0_a', 1)}
    results.append(record('L0_b', 1))
    lines = path.read_text(encoding='utf-8').splitlines()
    assert [json.loads(line)['task_id'] for line in lines] == ['L0_a', 'L0_b']


def test_a_corrupt_line_in_the_middle_is_an_error(tmp_path):
    path = tmp_path / 'results.jsonl'
    lines = [json.dumps(record('a', 1)), 'not json', json.dumps(record('b', 1))]
    path.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    with pytest.raises(RoboFollowError, match=':2:'):
        ResultsFile(path)


def test_non_finite_scores_are_refused(tmp_path):
    results = ResultsFile(tmp_path / 'results.jsonl')
    with pytest.raises(ValueError):
        results.append(record('L0_a', 1, score=float('nan')))
    assert results.done() == set()
