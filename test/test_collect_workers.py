"""``robofollow collect --workers N``: the same demonstrations (file hashes, ledger lines) whatever the number of
workers, and a collection killed mid-run resumes to the same files."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from graph_helpers import ROOT, wait_until
from scale_support import pids_mentioning

from robofollow_ros.data.collect import CollectOptions, run_collection
from robofollow_ros.data.store import open_ledger, stored_episodes

pytestmark = pytest.mark.sim

LABELS = ['pickup_yellow_block_1_left', 'pickup_yellow_block_2', 'pickup_red_cylinder']
SMALL = {'width': 32, 'height': 24}
EPISODES = 2


def fingerprint(out: Path) -> dict[str, object]:
    """Every demonstration's HDF5 file hash by its path in the collection, and each label's ledger lines in order."""
    files = {
        str(stored.hdf5.relative_to(out)): hashlib.sha256(stored.hdf5.read_bytes()).hexdigest()
        for stored in stored_episodes(out)
    }
    by_label: dict[str, list[dict]] = {}
    for record in open_ledger(out).records:
        by_label.setdefault(record['task_id'], []).append(record)
    seeds = {str(path.relative_to(out)): json.loads(path.read_text()) for path in sorted(out.glob('*/*/seeds.json'))}
    return {'files': files, 'ledger': by_label, 'seeds': seeds}


@pytest.fixture(scope='module')
def one_worker(tmp_path_factory) -> dict[str, object]:
    out = tmp_path_factory.mktemp('one') / 'demos'
    options = CollectOptions(out=out, labels=LABELS, episodes=EPISODES, **SMALL)
    run_collection(options, progress=False)
    return fingerprint(out)


def test_two_workers_collect_the_same_files_as_one(one_worker, tmp_path) -> None:
    out = tmp_path / 'demos'
    options = CollectOptions(out=out, labels=LABELS, episodes=EPISODES, **SMALL)
    tallies = run_collection(options, progress=False, workers=2)
    assert all(tally.accepted == EPISODES for tally in tallies.values()), tallies
    found = fingerprint(out)
    assert len(found['files']) == EPISODES * len(LABELS)  # type: ignore[arg-type]
    assert found == one_worker


def test_a_killed_collection_with_workers_resumes_to_the_same_files(one_worker, tmp_path) -> None:
    out = tmp_path / 'demos'
    command = [sys.executable, '-m', 'robofollow_ros', 'collect', '--out', str(out), '--quiet', '--workers', '2']
    command += ['--episodes', str(EPISODES), '--image-size', '32x24', '--labels', ','.join(LABELS)]
    env = {**os.environ, 'MUJOCO_GL': os.environ.get('MUJOCO_GL', 'egl')}
    process = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)
    ledger = out / 'attempts.jsonl'

    def some_recorded() -> bool:
        return ledger.exists() and len(ledger.read_text().splitlines()) >= 2

    try:
        wait_until(some_recorded, timeout=300, what='the first attempts in the ledger')
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    time.sleep(0.5)
    assert len(open_ledger(out).records) < EPISODES * len(LABELS), 'killed before the end'
    resumed = subprocess.run([*command[:-2], '--workers', '3', *command[-2:]], cwd=ROOT, env=env, timeout=600)
    assert resumed.returncode == 0
    assert fingerprint(out) == one_worker


def test_a_collection_on_ray_actors_writes_the_same_files_as_one_process(one_worker, tmp_path) -> None:
    """A Ray instance started for the collection (loopback), two actors; the files come back to this process."""
    pytest.importorskip('ray')
    from robofollow_ros.data.collect import RaySettings

    out = tmp_path / 'demos'
    options = CollectOptions(out=out, labels=LABELS, episodes=EPISODES, **SMALL)
    tallies = run_collection(options, progress=False, workers=2, ray=RaySettings())
    assert all(tally.accepted == EPISODES for tally in tallies.values()), tallies
    assert fingerprint(out) == one_worker
    assert not list(out.rglob('.*.partial'))


def test_a_killed_collection_on_ray_resumes_to_the_same_files(one_worker, tmp_path) -> None:
    pytest.importorskip('ray')
    out = tmp_path / 'demos'
    command = [sys.executable, '-m', 'robofollow_ros', 'collect', '--out', str(out), '--quiet', '--ray']
    command += ['--workers', '2', '--episodes', str(EPISODES), '--image-size', '32x24', '--labels', ','.join(LABELS)]
    ray_tmp = tempfile.mkdtemp(prefix='rf-ray-')  # Ray's socket paths must stay short
    env = {**os.environ, 'MUJOCO_GL': os.environ.get('MUJOCO_GL', 'egl'), 'RAY_TMPDIR': ray_tmp}
    process = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)
    ledger = out / 'attempts.jsonl'
    try:
        wait_until(
            lambda: ledger.exists() and len(ledger.read_text().splitlines()) >= 2,
            timeout=300,
            what='the first attempts in the ledger',
        )
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        for pid in pids_mentioning(ray_tmp):  # a killed driver leaves its Ray instance behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    assert len(open_ledger(out).records) < EPISODES * len(LABELS), 'killed before the end'
    try:
        resumed = subprocess.run(command, cwd=ROOT, env=env, timeout=600)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert resumed.returncode == 0
    assert fingerprint(out) == one_worker


def test_a_file_sent_from_an_actor_stays_inside_the_collection(tmp_path) -> None:
    from robofollow_ros.data.collect_ray import write_files
    from robofollow_ros.errors import DatasetError

    write_files(tmp_path, {'scene1/a/data/episode0.hdf5': b'x'})
    assert (tmp_path / 'scene1/a/data/episode0.hdf5').read_bytes() == b'x'
    with pytest.raises(DatasetError, match='outside the collection'):
        write_files(tmp_path / 'scene1', {'../../escaped': b'y'})
    assert not (tmp_path.parent / 'escaped').exists()


@pytest.mark.parametrize('workers', [1, 2])
def test_a_seed_list_left_one_short_by_a_kill_is_written_again_on_resume(tmp_path, workers) -> None:
    """A kill between an attempt's ledger line and its label's seed list leaves the list one short; the label is
    finished by its ledger, so no worker is handed it again, and the resume writes the list itself."""
    out = tmp_path / 'demos'
    options = CollectOptions(out=out, labels=LABELS[:1], episodes=1, **SMALL)
    run_collection(options, progress=False)
    (seeds,) = out.glob('*/*/seeds.json')
    whole = seeds.read_text()
    seeds.write_text('[]')
    run_collection(options, progress=False, workers=workers)
    assert seeds.read_text() == whole and json.loads(whole)
