"""``robofollow score`` and ``robofollow report``: records out, tables by hand, clear one-line errors."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import pytest
from golden.episodes import RATE, pick, standing, still

from robofollow_ros.bags import write_episode_bag
from robofollow_ros.benchmark import registry
from robofollow_ros.cli import main
from robofollow_ros.referee.aggregate import summarize
from robofollow_ros.referee.synthetic import Motion
from robofollow_ros.referee.trajectory_json import dump_trajectory

TASK_ID = 'L0_pickup_yellow_block_1_left'


def pickup_trajectory():
    layout = registry.layout_of(registry.get_task(TASK_ID))
    objects = standing(layout)
    motion = still(Motion(duration=8.0), objects)
    return pick(motion, arm='left', name='yellow_block_1', start=objects['yellow_block_1']).sample(RATE)


def test_score_a_trajectory_file(tmp_path, capsys):
    path = tmp_path / 'episode.json'
    dump_trajectory(path, pickup_trajectory(), task_id=TASK_ID, meta={'seed': 439, 'round': 1, 'layout': 'default'})
    assert main(['score', str(path), str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    record = json.loads(lines[0])
    assert (record['task_id'], record['seed'], record['round'], record['variant']) == (TASK_ID, 439, 1, 'published')
    assert record['window_units'] == 'seconds'  # synthetic samples, not executed rows
    assert (record['intent_score'], record['exec_score'], record['completion_ok']) == (1.0, 1.0, True)
    assert record['source'] == str(path)


def test_score_a_bag(tmp_path, capsys):
    bag = tmp_path / 'episode_bag'
    meta = {'task_id': TASK_ID, 'variant': 'corrected', 'seed': 439, 'round': 1, 'layout': 'default'}
    write_episode_bag(bag, meta=meta, trajectory=replace(pickup_trajectory(), frames_are_rows=True))
    assert main(['score', str(bag)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record['intent_score'], record['exec_score'], record['seed']) == (1.0, 1.0, 439)
    assert (record['variant'], record['window_units']) == ('corrected', 'seconds')
    assert main(['score', str(bag), '--variant', 'published']) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record['variant'], record['window_units']) == ('published', 'frames')  # the bag says: executed rows


@pytest.mark.parametrize('executed', [True, False])
def test_trajectory_file_says_whether_frames_are_rows(tmp_path, capsys, executed):
    path = tmp_path / 'episode.json'
    dump_trajectory(path, replace(pickup_trajectory(), frames_are_rows=executed), task_id=TASK_ID)
    assert json.loads(path.read_text())['frames_are_rows'] is executed
    assert main(['score', str(path)]) == 0
    assert json.loads(capsys.readouterr().out)['window_units'] == ('frames' if executed else 'seconds')


def test_the_old_variant_literal_is_one_clear_error(tmp_path, capsys):
    path = tmp_path / 'episode.json'
    dump_trajectory(path, pickup_trajectory(), task_id=TASK_ID)
    assert main(['score', str(path), '--variant', 'literal']) == 2
    err = capsys.readouterr().err
    assert "'literal' no longer exists: expected published or corrected" in err and err.count('\n') == 1
    document = json.loads(path.read_text()) | {'variant': 'literal'}
    path.write_text(json.dumps(document), encoding='utf-8')
    assert main(['score', str(path)]) == 2
    err = capsys.readouterr().err
    assert '"variant"' in err and 'expected published or corrected' in err and err.count('\n') == 1


@pytest.mark.parametrize(
    ('content', 'message'),
    [
        (None, 'no such file'),
        ('{"format": "robofollow-trajectory/1"', 'not valid JSON'),
        ('{"format": "robofollow-trajectory/1", "task_id": "L9_nope", "frames": [{"t": 0}]}', "missing field 'ee'"),
    ],
)
def test_score_errors_are_one_line(tmp_path, capsys, content, message):
    path = tmp_path / 'bad.json'
    if content is not None:
        path.write_text(content, encoding='utf-8')
    assert main(['score', str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count('\n') == 1 and 'Traceback' not in err


def test_score_unknown_task(tmp_path, capsys):
    path = tmp_path / 'episode.json'
    dump_trajectory(path, pickup_trajectory(), task_id='L0_no_such_task')
    assert main(['score', str(path)]) == 2
    assert 'L0_no_such_task' in capsys.readouterr().err


def record(task_id: str, scene: int, level: str, intent: float, execution: float, done: bool, round_: int) -> dict:
    return {
        'task_id': task_id,
        'scene': scene,
        'level_tag': level,
        'round': round_,
        'seed': round_,
        'variant': 'corrected',
        'intent_score': intent,
        'exec_score': execution,
        'intent_ok': intent >= 0.99,
        'exec_ok': execution >= 0.99,
        'completion_ok': done,
    }


RECORDS = [
    record('a', 1, 'L0', 1.0, 1.0, True, 1),
    record('a', 1, 'L0', 0.4, 0.0, False, 2),
    record('b', 1, 'L0', 1.0, 0.7, True, 1),
    record('c', 2, 'L0', 0.6, 0.6, False, 1),
    record('d', 2, 'L1', 1.0, 1.0, True, 1),
]


def test_summaries_by_hand():
    s1, s2_l0, s2_l1 = summarize(RECORDS)
    assert (s1.group, s1.episodes, s1.task_count) == ('scene1/L0', 3, 2)
    assert s1.mean_intent_score == pytest.approx((1.0 + 0.4 + 1.0) / 3)  # 0.8
    assert s1.mean_exec_score == pytest.approx((1.0 + 0.0 + 0.7) / 3)  # 0.5667
    assert s1.intent_full_rate == pytest.approx(2 / 3)
    assert s1.exec_full_rate == pytest.approx(1 / 3)
    assert s1.completion_rate == pytest.approx((1 / 2 + 1) / 2)  # task a 1/2, task b 1 → 0.75 (task macro)
    assert s1.episode_micro_completion_rate == pytest.approx(2 / 3)
    assert (s2_l0.group, s2_l1.group) == ('scene2/L0', 'scene2/L1')


def test_report_writes_table_one(tmp_path, capsys):
    results = tmp_path / 'results.jsonl'
    lines = [json.dumps(r) for r in [*RECORDS, RECORDS[0]]]  # the last one is a duplicate
    results.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    array = tmp_path / 'more.json'
    array.write_text(json.dumps([record('e', 3, 'L2', 0.3, 0.3, False, 1)]), encoding='utf-8')
    out = tmp_path / 'report'
    assert main(['report', str(results), str(array), '--out', str(out)]) == 0
    captured = capsys.readouterr()
    assert 'duplicate record skipped: a round 1' in captured.err
    # S1 L0: IS 80.0, ES 56.7, CR 75.0. S2 L0: 60.0 / 60.0 / 0.0. S2 L1: 100 / 100 / 100. S3 L2: 30 / 30 / 0.
    # Mean L0 over S1, S2: IS (80.0 + 60.0)/2 = 70.0, ES (56.7 + 60.0)/2 = 58.35 -> 58.4, CR (75.0 + 0.0)/2 = 37.5
    assert '| S1 | 80.0 / 56.7 / 75.0 | – | – |' in captured.out
    assert '| **Mean** | 70.0 / 58.4 / 37.5 | 100.0 / 100.0 / 100.0 | 30.0 / 30.0 / 0.0 |' in captured.out
    rows = list(csv.DictReader((out / 'summary.csv').open()))
    assert rows[0]['scene'] == 'S1' and rows[0]['L0_ES'] == '56.7'
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['duplicates_skipped'] == 1
    assert summary['variant'] == 'corrected'
    assert summary['groups'][0]['completion_rate'] == pytest.approx(0.75)
    assert (out / 'summary.png').read_bytes()[:4] == b'\x89PNG'
    assert captured.out.startswith((out / 'summary.md').read_text())
    assert captured.out.endswith((out / 'diagnostics.md').read_text())
    assert 'no mirage gap: unknown task' in captured.err


def test_report_refuses_to_mix_variants(tmp_path, capsys):
    path = tmp_path / 'results.jsonl'
    mixed = [*RECORDS, record('a', 1, 'L0', 1.0, 1.0, True, 1) | {'variant': 'published'}]
    path.write_text(''.join(json.dumps(r) + '\n' for r in mixed), encoding='utf-8')
    out = tmp_path / 'report'
    assert main(['report', str(path), '--out', str(out)]) == 2
    err = capsys.readouterr().err
    assert 'different variants (5 corrected, 1 published)' in err and err.count('\n') == 1
    assert not out.exists()


def test_report_rejects_records_without_scores(tmp_path, capsys):
    path = tmp_path / 'results.jsonl'
    path.write_text('{"task_id": "a"}\n', encoding='utf-8')
    assert main(['report', str(path)]) == 2
    assert 'lacks scene' in capsys.readouterr().err
