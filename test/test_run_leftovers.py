"""What a resume may touch in a run folder: only the run's own stale temporaries and unrecorded episodes, and only
paths inside the folder that a record names."""

from __future__ import annotations

import json

import eval_process
import pytest

from robofollow_ros.cli import main
from robofollow_ros.data.html_report import trial_rows_html
from robofollow_ros.evaluation.digests import RunDigests
from robofollow_ros.evaluation.leftovers import is_stale_partial
from robofollow_ros.textfiles import partial_owner, partial_path

pytestmark = pytest.mark.sim

TASK = 'L0_pickup_yellow_block_2'
STEM = f'{TASK}__r01'


def eval_args(out, *extra):
    return ['eval', '--in-process', '--policy', 'hold', '--tasks', TASK, '--max-queries', '2', '--out', str(out),
            '--quiet', *extra]  # fmt: skip


def test_partial_names_round_trip_to_their_owner(tmp_path):
    assert partial_owner(partial_path(tmp_path / 'run.json')) is not None
    assert partial_owner(tmp_path / '.run.json.partial-12') == ('run.json', 12)
    assert partial_owner(tmp_path / 'run.json.partial-12') is None
    assert partial_owner(tmp_path / '.run.json.partial-x') is None


def test_a_resume_removes_only_the_runs_own_stale_partials(tmp_path, live_pid):
    out = tmp_path / 'run'
    assert main(eval_args(out, '--rounds', '2', '--record', 'json')) == 0
    gone = eval_process.dead_pid()
    episodes, videos = out / 'episodes', out / 'videos'
    videos.mkdir()
    (episodes / 'my_notes.txt').write_text('mine', encoding='utf-8')
    (episodes / 'my_bag_copy').mkdir()
    (episodes / 'my_bag_copy' / 'my_bag_copy_0.mcap').write_bytes(b'\x89MCAP0\r\n')
    (episodes / f'{TASK}__r01_copy.json').write_text('{}', encoding='utf-8')
    stale = [
        out / f'.run.json.partial-{gone}',
        out / f'.identity.json.partial-{gone}',
        out / f'.results.jsonl.partial-{gone}',
        episodes / f'.{TASK}__r03.json.partial-{gone}',
        videos / f'.{STEM}.mp4.partial-{gone}',
    ]
    kept = [
        out / f'.run.json.partial-{live_pid}',  # a writer that is still running
        out / f'.notes.txt.partial-{gone}',  # not a name the run publishes
        episodes / f'.{TASK}__r03.json.partial-{live_pid}',
        episodes / f'.my_notes.txt.partial-{gone}',
        videos / 'my_clip.mp4',
    ]
    for path in [*stale, *kept]:
        path.write_text('x', encoding='utf-8')
    bag = episodes / f'.{TASK}__r03.partial-{gone}'  # a graph recorder's or bag writer's staging folder
    (bag / f'{TASK}__r03').mkdir(parents=True)
    stale.append(bag)
    assert main(eval_args(out, '--rounds', '3', '--record', 'json')) == 0
    assert [path for path in stale if path.exists()] == []
    assert [path for path in kept if not path.exists()] == []
    assert (episodes / 'my_notes.txt').read_text(encoding='utf-8') == 'mine'
    assert (episodes / 'my_bag_copy' / 'my_bag_copy_0.mcap').exists()
    assert (episodes / f'{TASK}__r01_copy.json').exists()
    assert sorted(record['round'] for record in eval_process.result_lines(out)) == [1, 2, 3]
    assert json.loads((out / 'run.json').read_text(encoding='utf-8'))['status'] == 'complete'


def test_is_stale_partial_needs_a_run_name_and_a_gone_writer(tmp_path, live_pid):
    gone = eval_process.dead_pid()
    names = frozenset({'run.json'})
    assert is_stale_partial(tmp_path / f'.run.json.partial-{gone}', publishes=names)
    assert not is_stale_partial(tmp_path / f'.run.json.partial-{live_pid}', publishes=names)
    assert not is_stale_partial(tmp_path / f'.other.json.partial-{gone}', publishes=names)
    assert not is_stale_partial(tmp_path / 'run.json', publishes=names)


def _failed_run(out):
    """A one-trial run whose record says it ended in a policy error; returns its results text."""
    assert main(eval_args(out, '--record', 'json')) == 0
    [record] = eval_process.result_lines(out)
    record['policy_error'] = 'RuntimeError: model exploded'
    return record


def _write(out, record):
    """Replace the run's record with ``record`` as if the run had written it (its digest too: a record changed by
    hand is refused before ``--retry-errors`` looks at it, ``test_run_digests``)."""
    text = json.dumps(record, sort_keys=True) + '\n'
    (out / 'results.jsonl').write_text(text, encoding='utf-8')
    RunDigests(out).update(['results.jsonl'])
    return text


@pytest.mark.parametrize(
    'field_value',
    [
        ('episode_file', '../victim.txt'),
        ('episode_file', 'episodes/../../victim.txt'),
        ('episode_file', 'episodes/link'),  # a symbolic link to the victim
        ('video_file', 'victim_absolute'),
        ('episode_file', 'results.jsonl'),  # inside the run, but not an episode
    ],
)
def test_retry_errors_refuses_a_record_whose_file_leads_outside_its_folder(tmp_path, capsys, field_value):
    field, value = field_value
    out = tmp_path / 'run'
    victim = tmp_path / 'victim.txt'
    victim.write_text('not the run', encoding='utf-8')
    record = _failed_run(out)
    if value == 'episodes/link':
        (out / 'episodes' / 'link').symlink_to(victim)
    record[field] = str(victim) if value == 'victim_absolute' else value
    text = _write(out, record)
    capsys.readouterr()
    assert main(eval_args(out, '--record', 'json', '--retry-errors')) == 2
    error = capsys.readouterr().err.strip()
    assert 'leads outside' in error and len(error.splitlines()) == 1
    assert victim.read_text(encoding='utf-8') == 'not the run'
    assert (out / 'results.jsonl').read_text(encoding='utf-8') == text
    assert not list(out.glob('retried-*'))
    assert (out / 'episodes' / f'{STEM}.json').exists()


def test_retry_errors_moves_a_record_whose_files_are_inside_the_run(tmp_path, capsys):
    out = tmp_path / 'run'
    record = _failed_run(out)
    _write(out, record)
    assert main(eval_args(out, '--record', 'json', '--retry-errors')) == 0
    (aside,) = out.glob('retried-*')
    assert (aside / record['episode_file']).is_file() and (out / record['episode_file']).is_file()


def test_the_html_report_links_no_file_outside_the_run(tmp_path):
    run = tmp_path / 'run'
    (run / 'episodes').mkdir(parents=True)
    (run / 'episodes' / 'link').symlink_to(tmp_path)
    record = {'task_id': TASK, 'round': 1, 'intent_score': 0.0, 'exec_score': 0.0, 'completion_ok': False}
    bad = [
        {**record, 'episode_file': '../../victim.txt', 'video_file': '/etc/passwd'},
        {**record, 'episode_file': 'episodes/link/victim.txt'},
    ]
    page = trial_rows_html(bad, run_dir=run, page_dir=run / 'report')
    assert 'victim' not in page and 'passwd' not in page
    good = trial_rows_html([{**record, 'episode_file': f'episodes/{STEM}.json'}], run_dir=run, page_dir=run / 'report')
    assert f'href="../episodes/{STEM}.json"' in good
