"""``OUT/files.sha256``: every file a run writes is digested as it is written, ``sha256sum -c`` agrees, and a file
changed afterwards stops a resume (and ``report`` / ``score``) in one line, with nothing deleted."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from robofollow_ros.cli import main
from robofollow_ros.evaluation.digests import DIGESTS_NAME, RunDigests
from robofollow_ros.evaluation.status import amend_status

pytestmark = pytest.mark.sim

TASKS = 'L0_pickup_yellow_block_[23]'


def evaluate(out, *extra):
    args = ['eval', '--in-process', '--policy', 'hold', '--tasks', TASKS, '--out', str(out), '--quiet', *extra]
    return main(args)


@pytest.fixture(scope='module')
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp('digests') / 'run'
    assert evaluate(out, '--record', 'json') == 0
    return out


def test_every_file_the_run_wrote_is_listed_and_sha256sum_agrees(finished):
    names = set(RunDigests(finished).entries)
    episodes = {f'episodes/{path.name}' for path in (finished / 'episodes').iterdir()}
    assert names == {'results.jsonl', 'run.json', *episodes} and len(episodes) == 2
    if shutil.which('sha256sum'):
        done = subprocess.run(['sha256sum', '-c', DIGESTS_NAME], cwd=finished, capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout.count(': OK') == 4, done.stdout + done.stderr


def test_a_changed_record_stops_the_resume_in_one_line_and_nothing_is_deleted(tmp_path, capsys):
    out = tmp_path / 'run'
    assert evaluate(out, '--rounds', '1') == 0
    results = out / 'results.jsonl'
    lines = results.read_text(encoding='utf-8').splitlines()
    first = json.loads(lines[0])
    first['intent_score'] = 1.0
    results.write_text('\n'.join([json.dumps(first), *lines[1:]]) + '\n', encoding='utf-8')
    before = sorted(path.name for path in out.iterdir())
    capsys.readouterr()
    assert evaluate(out, '--rounds', '2') == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'results.jsonl changed since the run wrote it' in err, err
    assert 'restore them or use --force-new' in err
    assert sorted(path.name for path in out.iterdir()) == before


def test_a_record_appended_after_the_last_digest_is_a_warning_and_the_run_resumes(tmp_path, capsys):
    out = tmp_path / 'run'
    assert evaluate(out) == 0
    results = out / 'results.jsonl'
    lines = results.read_text(encoding='utf-8').splitlines()
    results.write_text('\n'.join(lines[:1]) + '\n', encoding='utf-8')
    RunDigests(out).update(['results.jsonl'])
    results.write_text('\n'.join(lines) + '\n', encoding='utf-8')  # as if killed between a record and its digest
    capsys.readouterr()
    assert evaluate(out) == 0
    err = capsys.readouterr().err
    assert 'results.jsonl: ' in err and 'bytes written after its digest' in err
    assert RunDigests(out).problems() == []


def test_a_run_failed_by_a_node_that_died_resumes(tmp_path, capsys):
    # Over the graph the evaluator amends run.json when a required node died (evaluation.status.amend_status); the
    # resume refused that run.json as changed since its digest, so a run stopped by a bridge failure never resumed.
    out = tmp_path / 'run'
    assert evaluate(out, '--rounds', '1') == 0
    amend_status(out, status='failed', reason='node policy_bridge exited with code 1')
    assert json.loads((out / 'run.json').read_text(encoding='utf-8'))['status'] == 'failed'
    assert RunDigests(out).problems() == []
    capsys.readouterr()
    assert evaluate(out, '--rounds', '2') == 0, capsys.readouterr().err
    assert len((out / 'results.jsonl').read_text(encoding='utf-8').splitlines()) == 4


def test_a_run_json_rewritten_after_its_digest_is_a_warning_and_the_run_resumes(tmp_path, capsys):
    # A run killed between rewriting run.json and its digest (test_recording_kill hit it): run.json holds no result.
    out = tmp_path / 'run'
    assert evaluate(out, '--rounds', '1') == 0
    run_file = out / 'run.json'
    run_file.write_text(run_file.read_text(encoding='utf-8').replace('"complete"', '"running"'), encoding='utf-8')
    assert RunDigests(out).changed() == ['run.json changed']
    capsys.readouterr()
    assert evaluate(out, '--rounds', '2') == 0
    err = capsys.readouterr().err
    assert 'warning: run.json changed since its digest' in err, err
    assert RunDigests(out).problems() == []


def test_report_and_score_refuse_a_changed_record_or_episode_and_take_the_unchanged(tmp_path, capsys):
    out = tmp_path / 'run'
    assert evaluate(out, '--record', 'json') == 0
    episode = sorted((out / 'episodes').iterdir())[0]
    capsys.readouterr()
    assert main(['score', str(episode)]) == 0
    assert main(['report', str(out), '--out', str(tmp_path / 'report'), '--baseline', 'none']) == 0
    capsys.readouterr()
    data = json.loads(episode.read_text(encoding='utf-8'))
    data['meta']['seed'] = 1 + int(data['meta'].get('seed') or 0)
    episode.write_text(json.dumps(data), encoding='utf-8')
    assert main(['score', str(out / 'episodes')]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f'robofollow score: error: cannot score {episode}: episodes/{episode.name} changed')
    results = out / 'results.jsonl'
    results.write_text(results.read_text(encoding='utf-8').replace('"intent_score": 0.0', '"intent_score": 1.0'))
    assert main(['report', str(out), '--out', str(tmp_path / 'report2'), '--baseline', 'none']) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and f'cannot report {results}: results.jsonl changed since the run wrote it' in err
    assert not (tmp_path / 'report2').exists()
