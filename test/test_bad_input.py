"""Every bad input ends in one clear line that names the file; ``score`` scores the good files regardless."""

from __future__ import annotations

import json
import os
import sys

import pytest
from test_referee_cli import TASK_ID, pickup_trajectory

from robofollow_ros.bags import write_episode_bag
from robofollow_ros.cli import main
from robofollow_ros.evaluation.results import ResultsFile
from robofollow_ros.referee.trajectory_json import dump_trajectory

NOT_UTF8 = b'{"format": "robofollow-trajectory/1", "task_id": "caf\xe9"}\n'


def one_line(err):
    assert err.count('\n') == 1 and 'Traceback' not in err, err
    return err


def test_non_utf8_trajectory_results_and_config_are_one_line_naming_the_file(tmp_path, capsys):
    trajectory = tmp_path / 'episode.json'
    trajectory.write_bytes(NOT_UTF8)
    assert main(['score', str(trajectory)]) == 2
    assert f'trajectory {trajectory} is not UTF-8 text (byte 53 is 0xe9)' in one_line(capsys.readouterr().err)

    results = tmp_path / 'results.jsonl'
    results.write_bytes(b'{"task_id": "\xff"}\n')
    assert main(['report', str(results)]) == 2
    assert f'results {results} is not UTF-8 text' in one_line(capsys.readouterr().err)

    config = tmp_path / 'referee.yaml'
    config.write_bytes(b'stage:\n  hold_s: 1.0 # \xe9t\xe9\n')
    assert main(['score', '--config', str(config), str(trajectory)]) == 2
    assert f'referee config {config} is not UTF-8 text' in one_line(capsys.readouterr().err)

    out = tmp_path / 'run'
    out.mkdir()
    (out / 'results.jsonl').write_bytes(b'{"task_id": "\xff"}\n')
    assert main(['eval', '--in-process', '--policy', 'hold', '--tasks', TASK_ID, '--out', str(out), '--quiet']) == 2
    assert f'{out / "results.jsonl"} is not UTF-8 text' in one_line(capsys.readouterr().err)


def damaged(tmp_path, name, change):
    path = tmp_path / f'{name}.json'
    dump_trajectory(path, pickup_trajectory(), task_id=TASK_ID, meta={'layout': 'default'})
    document = json.loads(path.read_text(encoding='utf-8'))
    change(document)
    path.write_text(json.dumps(document), encoding='utf-8')
    return path


def unsorted(document):
    document['frames'][1]['t'], document['frames'][2]['t'] = document['frames'][2]['t'], document['frames'][1]['t']


def unknown_task(document):
    document['task_id'] = 'L0_pickup_no_such_block'


def nan_time(document):
    document['frames'][3]['t'] = float('nan')


def unknown_object(document):
    for frame in document['frames']:
        frame['objects']['purple_unicorn'] = frame['objects'].pop('yellow_block_1')


def test_score_scores_every_file_and_names_each_bad_one(tmp_path, capsys):
    good = tmp_path / 'good.json'
    dump_trajectory(good, pickup_trajectory(), task_id=TASK_ID, meta={'layout': 'default'})
    bad = [damaged(tmp_path, f.__name__, f) for f in (unsorted, unknown_task, nan_time, unknown_object)]
    missing = tmp_path / 'missing.json'
    paths = [good, *bad, missing, good]
    assert main(['score', *map(str, paths)]) == 2
    captured = capsys.readouterr()
    assert [json.loads(line)['source'] for line in captured.out.splitlines()] == [str(good), str(good)]
    errors = captured.err.splitlines()
    assert len(errors) == len(bad) + 2
    for path, line in zip([*bad, missing], errors, strict=False):
        assert line.startswith('robofollow score: error: ') and str(path) in line, line
    assert errors[-1] == 'robofollow score: 5 of 7 episodes could not be scored'


def test_score_accepts_a_folder_of_episodes(tmp_path, capsys):
    folder = tmp_path / 'episodes'
    folder.mkdir()
    dump_trajectory(folder / 'a.json', pickup_trajectory(), task_id=TASK_ID, meta={'layout': 'default'})
    meta = {'task_id': TASK_ID, 'seed': 1, 'round': 1, 'layout': 'default'}
    write_episode_bag(folder / 'b', meta=meta, trajectory=pickup_trajectory())
    assert main(['score', str(folder)]) == 0
    sources = [json.loads(line)['source'] for line in capsys.readouterr().out.splitlines()]
    assert sources == [str(folder / 'a.json'), str(folder / 'b')]


def test_a_truncated_bag_still_scores_with_a_warning_on_stderr(tmp_path, capsys):
    meta = {'task_id': TASK_ID, 'seed': 1, 'round': 1, 'layout': 'default'}
    bag = write_episode_bag(tmp_path / 'bag', meta=meta, trajectory=pickup_trajectory())
    (mcap,) = bag.glob('*.mcap')
    os.truncate(mcap, mcap.stat().st_size * 2 // 3)
    assert main(['score', str(bag)]) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)
    assert record['recovered'] and record['task_id'] == TASK_ID
    assert captured.err.startswith(f'warning: {bag}: damaged bag, scored what was recovered')


def result_record(task_id='L0_pickup_a', **change):
    record = {
        'task_id': task_id, 'scene': 1, 'level_tag': 'L0', 'round': 1, 'seed': 42, 'intent_score': 1.0,
        'exec_score': 1.0, 'intent_ok': True, 'exec_ok': True, 'completion_ok': True, 'variant': 'published',
        'policy': 'p', 'run_id': 'r', 'privileged': False,
    }  # fmt: skip
    return {**record, **change}


def results_with(path, field):
    """A results file whose second record has ``field`` (JSON text, e.g. ``"intent_score": NaN``)."""
    name = field.split(':')[0]
    bad = json.dumps(result_record('L0_pickup_b'))
    start = bad.index(name)
    end = bad.index(',', start)
    path.write_text(json.dumps(result_record()) + '\n' + bad[:start] + field + bad[end:] + '\n', encoding='utf-8')
    return path


IMPOSSIBLE = [
    ('"intent_score": 5.0', '"intent_score" must be a number from 0 to 1, got 5.0'),  # reported as 300.0
    ('"intent_score": NaN', '"intent_score" must be a number from 0 to 1, got NaN'),
    ('"exec_score": Infinity', '"exec_score" must be a number from 0 to 1, got Infinity'),
    ('"completion_ok": null', '"completion_ok" must be true or false, got null'),
    ('"intent_score": "abc"', '"intent_score" must be a number from 0 to 1, got \'abc\''),
    ('"scene": 9', '"scene" must be one of the scenes 1, 2, 3, 4, got 9'),
    (
        '"seed": ' + '7' * 1_000_000,
        f'not a result record (it holds an integer of more than {sys.get_int_max_str_digits()} digits)',
    ),
]


@pytest.mark.parametrize(('field', 'message'), IMPOSSIBLE, ids=[field[:24] for field, _ in IMPOSSIBLE])
def test_report_refuses_an_impossible_record_naming_file_line_and_field(tmp_path, capsys, field, message):
    results = results_with(tmp_path / 'results.jsonl', field)
    assert main(['report', str(results), '--baseline', 'none', '--out', str(tmp_path / 'out')]) == 2
    captured = capsys.readouterr()
    assert one_line(captured.err) == f'robofollow report: error: {results}:2: {message}\n'
    assert captured.out == '' and not (tmp_path / 'out').exists()


def test_a_cut_off_last_record_is_refused_by_report_and_dropped_by_a_resumed_run(tmp_path, capsys):
    results = tmp_path / 'results.jsonl'
    whole = json.dumps(result_record()) + '\n'
    results.write_text(whole + json.dumps(result_record('L0_pickup_b'))[:60], encoding='utf-8')
    assert main(['report', str(results), '--baseline', 'none', '--out', str(tmp_path / 'out')]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f'robofollow report: error: {results}:2: the last record is cut short (a run killed ')
    assert 'resume the run (robofollow eval, same --out) to play that trial again, or delete the line' in line
    assert results.read_text(encoding='utf-8').startswith(whole + '{'), 'nothing is deleted'

    resumed = ResultsFile(results)  # what `robofollow eval` resuming the run does: drop it, say so, play it again
    assert resumed.done() == {('L0_pickup_a', 1)}
    assert one_line(capsys.readouterr().err).startswith(f'warning: {results}:2: the last record was cut short')
    assert results.read_text(encoding='utf-8') == json.dumps(result_record(), sort_keys=True) + '\n'

    results.write_text(whole + json.dumps(result_record('L0_pickup_b')), encoding='utf-8')  # whole, no newline
    assert main(['report', str(results), '--baseline', 'none', '--out', str(tmp_path / 'out')]) == 0
    assert '2 episodes in 1 groups' in capsys.readouterr().err


def test_version(capsys):
    from robofollow_ros import __version__

    with pytest.raises(SystemExit) as stop:
        main(['--version'])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f'robofollow {__version__}\n'
