"""Demonstration collection with the real expert, cell and referee: seeds, paraphrases, layout, resume, refusal."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from rosbags.rosbag2 import Reader
from test_bad_input import one_line

from robofollow_ros.benchmark import registry
from robofollow_ros.cli import main
from robofollow_ros.data.collect import CollectOptions, run_collection
from robofollow_ros.data.raw_hdf5 import decode_jpeg, read_raw_episode
from robofollow_ros.data.seeds import MAX_ATTEMPTS, TRAINING_SEED_BASE, training_seed
from robofollow_ros.data.store import open_ledger, stored_episodes
from robofollow_ros.errors import DatasetError

pytestmark = pytest.mark.sim

LABEL = 'pickup_yellow_block_1_left'
SMALL = {'width': 32, 'height': 24}


def test_training_seeds_never_are_evaluation_seeds():
    evaluation = {
        registry.trial_seed(task.task_id, round_)
        for task in registry.eval_tasks(variant='published')
        for round_ in range(1, 11)
    }
    assert len(evaluation) > 1000 and max(evaluation) < TRAINING_SEED_BASE
    training = {training_seed(attempt) for attempt in (0, 1, MAX_ATTEMPTS - 1)}
    assert min(training) == TRAINING_SEED_BASE and not training & evaluation
    # Any round below 9,000 stays below the first training seed.
    assert max(registry.trial_seed(task.task_id, 8999) for task in registry.eval_tasks()) < TRAINING_SEED_BASE
    with pytest.raises(DatasetError):
        training_seed(MAX_ATTEMPTS)


def test_collected_demonstrations_follow_the_raw_layout(tmp_path):
    label = registry.get_task(LABEL)
    tallies = run_collection(CollectOptions(out=tmp_path, labels=[LABEL], episodes=2, **SMALL), progress=False)
    assert tallies[LABEL].accepted == 2
    folder = tmp_path / 'scene1' / f'scene1_{LABEL}'
    seeds = json.loads((folder / 'seeds.json').read_text())
    assert len(seeds) == 2 and all(seed >= TRAINING_SEED_BASE for seed in seeds)
    assert json.loads((folder / 'complete.json').read_text())['episodes'] == 2
    for index, stored in enumerate(stored_episodes(tmp_path)):
        assert stored.instruction in label.paraphrases
        assert json.loads((folder / 'instructions' / f'episode{index}.json').read_text())['seen'] == [
            stored.instruction
        ]
        with h5py.File(stored.hdf5) as file:
            n = file['joint_action/vector'].shape[0]
            assert file['joint_action/vector'].shape == (n, 14) and n > 20
            assert file['joint_action/left_arm'].shape == (n, 6) and file['joint_action/right_gripper'].shape == (n,)
            np.testing.assert_array_equal(file['joint_action/left_arm'][()], file['joint_action/vector'][:, :6])
            assert file['action'].shape == (n - 1, 14)
            assert file.attrs['task'] == LABEL and file.attrs['seed'] == seeds[index]
            assert file.attrs['instruction'] == stored.instruction
            for camera in ('head_camera', 'left_camera', 'right_camera'):
                rgb = file[f'observation/{camera}/rgb']
                assert rgb.shape == (n,) and rgb.dtype.kind == 'S'
                assert decode_jpeg(rgb[0]).shape == (24, 32, 3)
        frames, _ = read_raw_episode(stored.hdf5)
        # The expert closes the left gripper on the block and the action leads the state.
        assert frames.states[:, 6].min() < 0.5 and frames.actions[:, 6].min() == 0.0
        assert np.abs(frames.actions[:-1, :6] - frames.states[1:-1, :6]).max() < 0.2


def test_every_training_label_is_collected_twice_without_cameras(tmp_path):
    labels = [task.task_id for task in registry.training_labels()]
    assert len(labels) == 75
    options = CollectOptions(out=tmp_path, labels=labels, episodes=2, cameras=False, max_attempts=6)
    tallies = run_collection(options, progress=False)
    rates = {label: tally.acceptance for label, tally in tallies.items()}
    short = {label: tally.accepted for label, tally in tallies.items() if tally.accepted < 2}
    assert not short, f'labels without two accepted demonstrations: {short}'
    assert sum(tally.accepted for tally in tallies.values()) == 150
    assert np.mean(list(rates.values())) > 0.9


def test_a_resumed_collection_must_use_the_same_options(tmp_path, capsys):
    base = ['collect', '--labels', LABEL, '--out', str(tmp_path), '--image-size', '32x24', '--quiet']
    assert main([*base, '--episodes', '1']) == 0
    assert main([*base, '--episodes', '1']) == 0
    assert len(open_ledger(tmp_path).records) == 1
    capsys.readouterr()
    assert main([*base, '--episodes', '2']) == 2
    error = capsys.readouterr().err.strip()
    assert error.count('\n') == 0 and 'other options' in error and 'episodes 1 -> 2' in error
    assert main(['collect', '--labels', 'L0_pickup_yellow_block_2', '--out', str(tmp_path / 'x')]) == 2
    assert 'no training label' in capsys.readouterr().err


def _ledger_lines(path: Path) -> int:
    try:
        return path.read_text().count('\n')
    except FileNotFoundError:
        return 0


def test_kill_9_then_rerun_loses_and_repeats_nothing(tmp_path):
    command = [
        sys.executable, '-c', 'import sys; from robofollow_ros.cli import main; sys.exit(main())',
        'collect', '--labels', LABEL, '--episodes', '3', '--image-size', '32x24', '--video', '--quiet',
    ]  # fmt: skip
    killed, clean = tmp_path / 'killed', tmp_path / 'clean'
    process = subprocess.Popen([*command, '--out', str(killed)], env={**os.environ, 'MUJOCO_GL': 'egl'})
    deadline = time.monotonic() + 120
    while _ledger_lines(killed / 'attempts.jsonl') < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = _ledger_lines(killed / 'attempts.jsonl')
    assert 1 <= before < 3, 'the kill should land mid-collection'
    subprocess.run([*command, '--out', str(killed)], check=True, env={**os.environ, 'MUJOCO_GL': 'egl'})
    subprocess.run([*command, '--out', str(clean)], check=True, env={**os.environ, 'MUJOCO_GL': 'egl'})
    resumed, reference = open_ledger(killed).records, open_ledger(clean).records
    assert [(r['round'], r['seed'], r['accepted'], r.get('episode')) for r in resumed] == [
        (r['round'], r['seed'], r['accepted'], r.get('episode')) for r in reference
    ]
    folder = f'scene1/scene1_{LABEL}'
    for kind, pattern in (('data', 'episode*.hdf5'), ('video', 'episode*.mp4')):
        names = sorted(path.name for path in (killed / folder / kind).glob(pattern))
        assert names == sorted(path.name for path in (clean / folder / kind).glob(pattern))
        assert len(names) == 3
    assert not list((killed / folder).rglob('*.tmp*'))
    for a, b in zip(stored_episodes(killed), stored_episodes(clean), strict=True):
        frames_a, _ = read_raw_episode(a.hdf5, images=False)
        frames_b, _ = read_raw_episode(b.hdf5, images=False)
        np.testing.assert_array_equal(frames_a.states, frames_b.states)
        assert a.instruction == b.instruction


def test_a_folder_in_use_is_refused(tmp_path, capsys):
    from robofollow_ros.evaluation.lock import RunLock

    with RunLock(tmp_path):
        assert main(['collect', '--labels', LABEL, '--episodes', '1', '--out', str(tmp_path), '--quiet']) == 2
    assert 'in use by another run' in capsys.readouterr().err
    assert not (tmp_path / 'attempts.jsonl').exists()


def test_bag_per_demonstration_replays_and_rescores(tmp_path):
    from robofollow_ros.bags import load_episode
    from robofollow_ros.referee.score import score_episode

    args = ['collect', '--labels', LABEL, '--episodes', '1', '--out', str(tmp_path), '--format', 'bag']
    assert main([*args, '--image-size', '32x24', '--quiet']) == 0
    [stored] = stored_episodes(tmp_path)
    recording = load_episode(tmp_path / f'scene1/scene1_{LABEL}/bags/episode0', images=True)
    frames, _ = read_raw_episode(stored.hdf5)
    assert recording.meta['seed'] == stored.seed and recording.meta['instruction'] == stored.instruction
    np.testing.assert_allclose(recording.joint_positions, frames.states, atol=1e-6)
    for camera in ('cam_high', 'cam_left_wrist', 'cam_right_wrist'):
        assert len(recording.cameras[camera].images) == len(frames)
    task = registry.get_task(LABEL)
    rescored = score_episode(task, recording.trajectory, layout=registry.layout_of(task)).to_record()
    assert rescored['completion_ok'] and rescored['exec_score'] == recording.result['exec_score']
    with Reader(tmp_path / f'scene1/scene1_{LABEL}/bags/episode0') as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
    assert counts['/robot_description'] == 1 and counts['/robofollow/scene_markers'] == len(frames)


def test_incomplete_episodes_are_counted_not_kept(tmp_path):
    # One query of 50 rows cannot finish a stack (about 110 rows): every attempt is rejected with a reason.
    label = 'stack_left_cube_on_red_cylinder'
    options = CollectOptions(out=tmp_path, labels=[label], episodes=1, max_attempts=2, max_queries=1, **SMALL)
    tally = run_collection(options, progress=False)[label]
    assert (tally.attempts, tally.accepted) == (2, 0)
    assert sum(tally.reasons.values()) == 2 and all('not executed' in reason for reason in tally.reasons)
    records = open_ledger(tmp_path).records
    assert [record['accepted'] for record in records] == [False, False]
    assert stored_episodes(tmp_path) == [] and not list(tmp_path.rglob('*.hdf5'))
    assert run_collection(options, progress=False)[label].attempts == 2


TINY = ['collect', '--labels', LABEL, '--episodes', '1', '--image-size', '32x24', '--quiet', '--format', 'lerobot']


@pytest.fixture(scope='module')
def tiny_collection(tmp_path_factory):
    """One accepted demonstration and its LeRobot export, made once; tests change copies of it."""
    out = tmp_path_factory.mktemp('tiny') / 'collection'
    assert main([*TINY, '--out', str(out)]) == 0
    return out


@pytest.fixture
def collection(tiny_collection, tmp_path):
    return Path(shutil.copytree(tiny_collection, tmp_path / 'collection', symlinks=True))


def snapshot(folder):
    """Every file under ``folder`` (but the lock, which each run rewrites) with a digest of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob('*'))
        if path.is_file() and path.name != '.lock'
    }


def test_a_truncated_episode_file_keeps_the_previous_lerobot_export(collection, capsys):
    [stored] = stored_episodes(collection)
    os.truncate(stored.hdf5, stored.hdf5.stat().st_size // 2)
    before = snapshot(collection)
    assert main([*TINY, '--out', str(collection)]) == 2
    error = one_line(capsys.readouterr().err)
    assert str(stored.hdf5) in error and 'not a robofollow-raw-v1 episode file' in error
    assert snapshot(collection) == before and any(name.startswith('lerobot/') for name in before)
    assert not list(collection.glob('lerobot.*'))


@pytest.mark.parametrize(
    ('line', 'problem'),
    [
        ('this is not json', 'not valid JSON'),
        ('NaN', 'a JSON float, not an object'),
        ('[1, 2]', 'a JSON list, not an object'),
        (f'{{"task_id": "{LABEL}", "round": 1, "seed": NaN, "accepted": false}}', '"seed" is nan'),
        (f'{{"task_id": "{LABEL}", "round": {"1" * 1_000_000}, "seed": 1, "accepted": false}}', 'digits'),
        (f'{{"task_id": "{LABEL}", "round": 1, "seed": 1, "accepted": true}}', 'no "episode"'),
    ],
    ids=['garbage', 'nan', 'list', 'nan-seed', 'huge-integer', 'no-episode'],
)
def test_a_ledger_line_that_is_not_an_attempt_is_one_line_and_changes_nothing(collection, capsys, line, problem):
    ledger = collection / 'attempts.jsonl'
    with ledger.open('a', encoding='utf-8') as stream:
        stream.write(line + '\n')
    before = snapshot(collection)
    assert main([*TINY, '--out', str(collection)]) == 2
    error = one_line(capsys.readouterr().err)
    assert f'{ledger}:2: ' in error and problem in error
    assert snapshot(collection) == before


def test_a_manifest_that_is_not_an_object_is_one_line_and_changes_nothing(collection, capsys):
    manifest = collection / 'collection.json'
    manifest.write_text('[1, 2]\n', encoding='utf-8')
    before = snapshot(collection)
    assert main([*TINY, '--out', str(collection)]) == 2
    error = one_line(capsys.readouterr().err)
    assert f'{manifest}: not a collection manifest' in error and 'a JSON list' in error
    assert snapshot(collection) == before


def test_an_out_that_is_no_folder_is_one_line(tmp_path, capsys):
    file = tmp_path / 'file'
    file.write_text('keep me\n', encoding='utf-8')
    loop = tmp_path / 'loop'
    loop.symlink_to(tmp_path / 'back')
    (tmp_path / 'back').symlink_to(loop)
    for out, message in (
        (file, f'--out {file} is a file, not a folder'),
        (loop, f'--out {loop} is a symbolic link that leads nowhere'),
        (loop / 'sub', f'cannot create --out {loop / "sub"}: Too many levels of symbolic links'),
        (file / 'sub', f'cannot create --out {file / "sub"}: Not a directory'),
    ):
        assert main([*TINY, '--out', str(out)]) == 2
        assert message in one_line(capsys.readouterr().err)
    assert file.read_text(encoding='utf-8') == 'keep me\n'
    assert sorted(path.name for path in tmp_path.iterdir()) == ['back', 'file', 'loop']


def run_unprivileged(*args):
    """The CLI in a process that file permissions apply to (root without the capabilities that override them)."""
    prefix = []
    if os.geteuid() == 0:
        if shutil.which('setpriv') is None:
            pytest.skip('running as root without setpriv to drop CAP_DAC_OVERRIDE')
        prefix = ['setpriv', '--bounding-set=-dac_override,-dac_read_search']
    command = [*prefix, sys.executable, '-c', 'import sys; from robofollow_ros.cli import main; sys.exit(main())']
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=300, check=False)


def test_an_out_that_cannot_be_written_is_one_line_and_changes_nothing(collection, tmp_path):
    empty = tmp_path / 'empty'
    empty.mkdir()
    before = snapshot(collection)
    cases = (
        (empty / 'new', f'cannot create --out {empty / "new"}: Permission denied'),
        (empty, f'cannot write in {empty}: Permission denied'),
        (collection, f'cannot write the LeRobot dataset {collection / "lerobot"}: Permission denied'),
    )
    for folder in (empty, collection):
        folder.chmod(0o555)
    try:
        for out, message in cases:
            done = run_unprivileged(*TINY, '--out', str(out))
            assert done.returncode == 2 and message in one_line(done.stderr), done.stderr
    finally:
        for folder in (empty, collection):
            folder.chmod(0o755)
    assert list(empty.iterdir()) == [] and snapshot(collection) == before
