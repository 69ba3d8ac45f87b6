"""Every bad input ends in one clear line that names the file; ``score`` scores the good files regardless."""

from __future__ import annotations

import json
import os

import pytest
from test_referee_cli import TASK_ID, pickup_trajectory

from robofollow_ros.bags import write_episode_bag
from robofollow_ros.cli import main
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


def test_version(capsys):
    from robofollow_ros import __version__

    with pytest.raises(SystemExit) as stop:
        main(['--version'])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f'robofollow {__version__}\n'
