"""Recording survives SIGKILL at any point: no partial episode is ever published, nothing blocks the rerun."""

from __future__ import annotations

import json
import random
import time

import eval_process
import pytest

from robofollow_ros.bags import write_episode_bag
from robofollow_ros.cli import main
from robofollow_ros.cli.score import episode_paths
from robofollow_ros.textfiles import is_partial

pytestmark = [pytest.mark.sim, pytest.mark.slow]

MAX_KILLS = 10
KILL_BUDGET_S = 90.0
TRIALS = 48


def eval_args(out, mode):
    return [
        'eval', '--in-process', '--policy', 'hold', '--scene', '1', '--level', '0',
        '--rounds', '3', '--max-queries', '4', '--record', mode, '--out', str(out), '--quiet',
    ]  # fmt: skip


def check_published_episodes(out):
    """Every complete record names an episode that exists; nothing visible in episodes/ is partial."""
    for record in eval_process.result_lines(out):
        assert (out / record['episode_file']).exists(), record['episode_file']
    folder = out / 'episodes'
    visible = [entry for entry in folder.iterdir() if not entry.name.startswith('.')] if folder.exists() else []
    for entry in visible:
        assert not is_partial(entry)
        if entry.is_dir():
            assert (entry / 'metadata.yaml').exists(), f'{entry} was published without its metadata'


@pytest.mark.parametrize('mode', ['json', 'bag'])
def test_sigkill_at_random_points_while_recording_never_leaves_a_blocker(tmp_path, capsys, mode):
    out = tmp_path / 'run'
    rng = random.Random(f'kill-{mode}')
    started = time.monotonic()
    kills = leftovers = 0
    while kills < MAX_KILLS and time.monotonic() - started < KILL_BUDGET_S:
        before = len(eval_process.result_lines(out))
        if before >= TRIALS:  # a kill landed after the last record: nothing is left to interrupt
            break
        process = eval_process.start(eval_args(out, mode))
        eval_process.wait_for_records(out, before + 1, process)
        time.sleep(rng.uniform(0.0, 0.3))  # somewhere in the next trial or two: simulating, scoring, writing
        process.kill()
        process.communicate()
        kills += 1
        check_published_episodes(out)
        episodes = out / 'episodes'
        referenced = {record['episode_file'].split('/')[-1] for record in eval_process.result_lines(out)}
        if episodes.exists():
            leftovers += sum(is_partial(e) or e.name not in referenced for e in episodes.iterdir())
    with capsys.disabled():
        print(f'\n{mode}: {kills} kills, {leftovers} leftovers (partial or unrecorded episodes) seen after them')
    assert kills >= 4, 'the kill loop must interrupt the run several times'

    finish = eval_process.run(eval_args(out, mode))
    assert finish.returncode == 0, finish.stderr
    records = eval_process.result_lines(out)
    keys = [(r['task_id'], r['round']) for r in records]
    assert len(keys) == len(set(keys)) == TRIALS
    check_published_episodes(out)
    entries = sorted((out / 'episodes').iterdir())
    assert sorted(e.name for e in entries) == sorted(r['episode_file'].split('/')[-1] for r in records)

    capsys.readouterr()
    assert main(['score', *(str(entry) for entry in entries)]) == 0
    scored = {json.loads(line)['task_id']: json.loads(line) for line in capsys.readouterr().out.splitlines()}
    for record in records:
        assert scored[record['task_id']]['intent_score'] == record['intent_score']
        assert scored[record['task_id']]['exec_score'] == record['exec_score']


def test_leftovers_without_a_record_are_replaced_not_blockers(tmp_path, capsys):
    out = tmp_path / 'run'
    episodes = out / 'episodes'
    stem = 'L0_pickup_yellow_block_2__r01'
    (episodes / stem).mkdir(parents=True)
    (episodes / stem / f'{stem}.mcap').write_bytes(b'')  # what a kill left before publishing was atomic
    partial = episodes / f'.{stem}.partial-{eval_process.dead_pid()}' / stem
    partial.mkdir(parents=True)
    (partial / f'{stem}.mcap').write_bytes(b'\x89MCAP0\r\n')
    args = ['eval', '--in-process', '--policy', 'hold', '--tasks', 'L0_pickup_yellow_block_2', '--record', 'bag']
    assert main([*args, '--out', str(out), '--quiet']) == 0
    [record] = eval_process.result_lines(out)
    assert record['episode_file'] == f'episodes/{stem}'
    assert sorted(entry.name for entry in episodes.iterdir()) == [stem]
    assert (episodes / stem / 'metadata.yaml').exists()
    capsys.readouterr()
    assert main(['score', str(episodes)]) == 0
    assert json.loads(capsys.readouterr().out)['task_id'] == 'L0_pickup_yellow_block_2'


def test_json_leftovers_without_a_record_are_replaced(tmp_path, capsys):
    out = tmp_path / 'run'
    episodes = out / 'episodes'
    episodes.mkdir(parents=True)
    stem = 'L0_pickup_yellow_block_2__r01'
    (episodes / f'.{stem}.json.partial-{eval_process.dead_pid()}').write_text(
        '{"format": "robofollow-traj', encoding='utf-8'
    )
    (episodes / f'{stem}.json').write_text('{"format": "robofollow-trajectory/1", "task_id"', encoding='utf-8')
    args = ['eval', '--in-process', '--policy', 'hold', '--tasks', 'L0_pickup_yellow_block_2', '--record', 'json']
    assert main([*args, '--out', str(out), '--quiet']) == 0
    assert sorted(entry.name for entry in episodes.iterdir()) == [f'{stem}.json']
    capsys.readouterr()
    assert main(['score', str(episodes / f'{stem}.json')]) == 0
    [record] = eval_process.result_lines(out)
    assert json.loads(capsys.readouterr().out)['exec_score'] == record['exec_score']


def test_score_of_a_folder_skips_hidden_partials(tmp_path):
    folder = tmp_path / 'episodes'
    (folder / '.x.partial-1' / 'x').mkdir(parents=True)
    (folder / 'notes.txt').write_text('not an episode', encoding='utf-8')
    (folder / 'a.json').write_text('{}', encoding='utf-8')
    assert episode_paths(folder) == [folder / 'a.json']


def test_a_bag_write_that_fails_half_way_leaves_nothing_behind(tmp_path, monkeypatch):
    from test_referee_cli import pickup_trajectory

    from robofollow_ros.bags import writer

    calls = []

    def failing_encode_pose(*args, **kwargs):
        calls.append(1)
        if len(calls) > 20:
            raise OSError(28, 'No space left on device')
        return real_encode_pose(*args, **kwargs)

    real_encode_pose = writer.encode_pose
    monkeypatch.setattr(writer, 'encode_pose', failing_encode_pose)
    with pytest.raises(OSError):
        write_episode_bag(tmp_path / 'bag', meta={'task_id': 'x'}, trajectory=pickup_trajectory())
    assert len(calls) > 20
    assert list(tmp_path.iterdir()) == []
