"""``robofollow score`` on input a careful user tripped over: one clear line each, exit 2, nothing hangs."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys

import numpy as np
import pytest
from test_referee_cli import TASK_ID, pickup_trajectory

from robofollow_ros.bags import write_episode_bag
from robofollow_ros.benchmark import registry
from robofollow_ros.cli import main
from robofollow_ros.referee import trajectory_json
from robofollow_ros.referee.trajectory_json import dump_trajectory

META = {'task_id': TASK_ID, 'seed': 1, 'round': 1, 'layout': 'default'}
BILLION_LAUGHS = 'a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n' + ''.join(
    f'{name}: &{name} [{", ".join([f"*{chr(ord(name) - 1)}"] * 9)}]\n' for name in 'bcdefghi'
)
"""Nine levels of nine aliases: 10⁹ values from 400 bytes of YAML (top-level keys ``a`` to ``i``)."""


def one_line(err):
    assert err.count('\n') == 1 and 'Traceback' not in err, err
    return err


def good_file(path, *, task_id=TASK_ID, meta=None):
    dump_trajectory(path, pickup_trajectory(), task_id=task_id, meta={'layout': 'default'} if meta is None else meta)
    return path


def test_an_empty_folder_is_an_error_not_silence(tmp_path, capsys):
    (tmp_path / 'notes.txt').write_text('not an episode\n', encoding='utf-8')
    assert main(['score', str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ''
    assert f'robofollow score: error: no episodes found in {tmp_path}' in one_line(captured.err)


def test_a_fifo_is_named_and_never_opened(tmp_path):
    folder = tmp_path / 'episodes'
    folder.mkdir()
    good_file(folder / 'a.json')
    os.mkfifo(folder / 'b.json')
    bag = write_episode_bag(folder / 'c', meta=META, trajectory=pickup_trajectory())
    (mcap,) = bag.glob('*.mcap')
    mcap.unlink()
    os.mkfifo(mcap)
    lone = tmp_path / 'lone.json'
    os.mkfifo(lone)
    # A subprocess, so that a reader blocked on a FIFO fails the test by its timeout instead of hanging it.
    done = subprocess.run(
        [sys.executable, '-m', 'robofollow_ros', 'score', str(folder), str(lone)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert [json.loads(line)['source'] for line in done.stdout.splitlines()] == [str(folder / 'a.json')]
    errors = done.stderr.splitlines()
    assert 'Traceback' not in done.stderr
    assert f'{folder / "b.json"}: is a FIFO, not a file or folder; skipped without opening it' in errors[0]
    assert str(folder / 'c') in errors[1] and f'{mcap.name} is not a regular file' in errors[1]
    assert f'{lone}: is a FIFO' in errors[2]
    assert errors[3] == 'robofollow score: 3 of 4 episodes could not be scored'


def test_json_nested_too_deeply_is_one_line(tmp_path, capsys):
    deep = tmp_path / 'deep.json'
    deep.write_text('[' * 100_000 + ']' * 100_000, encoding='utf-8')
    assert main(['score', str(deep)]) == 2
    assert f'{deep}: not a trajectory (JSON nested too deeply to read)' in one_line(capsys.readouterr().err)
    assert main(['report', str(deep), '--baseline', 'none']) == 2
    assert f'{deep}: not result records (JSON nested too deeply to read)' in one_line(capsys.readouterr().err)
    lines = tmp_path / 'results.jsonl'
    lines.write_text('{"a": ' + '[' * 100_000 + ']' * 100_000 + '}\n', encoding='utf-8')
    assert main(['report', str(lines), '--baseline', 'none']) == 2
    assert f'{lines}:1: not a result record (JSON nested too deeply to read)' in one_line(capsys.readouterr().err)


def set_object(frame, value):
    frame['objects']['red_sphere']['p'][0] = value


def set_grip(frame, value):
    frame['grip']['right'] = value


def set_quaternion(frame, value):
    frame['ee_quat']['left'] = [value, 0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ('change', 'value', 'message'),
    [
        (set_object, 1e308, 'frame 7: objects.red_sphere.p is [1e+308, '),
        (set_object, 6.0, 'frame 7: objects.red_sphere.p is [6, '),
        (set_object, float('inf'), 'frame 7: objects.red_sphere.p is [inf, '),
        (set_grip, -1e308, 'frame 7: grip.right is -1e+308, which is not physical: a gripper value must lie in'),
        (set_grip, 1.5, 'frame 7: grip.right is 1.5, which is not physical'),
        (set_quaternion, 1e308, 'frame 7: ee_quat.left is [1e+308, 0, 0, 0], which is not physical: a quaternion'),
    ],
)
def test_non_physical_values_are_refused_with_frame_and_field(tmp_path, capsys, change, value, message):
    path = good_file(tmp_path / 'episode.json')
    document = json.loads(path.read_text(encoding='utf-8'))
    assert 'ee_quat' in document['frames'][7]
    change(document['frames'][7], value)
    path.write_text(json.dumps(document), encoding='utf-8')  # Python's json writes inf as Infinity
    assert main(['score', str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ''
    assert message in one_line(captured.err)


def test_a_gripper_a_little_past_its_range_and_a_dropout_still_score(tmp_path, capsys):
    path = good_file(tmp_path / 'episode.json')
    document = json.loads(path.read_text(encoding='utf-8'))
    document['frames'][7]['grip']['right'] = 1.02  # calibration error of a real recorder
    document['frames'][8]['objects']['red_sphere']['p'] = None  # a dropout, not an error
    path.write_text(json.dumps(document), encoding='utf-8')
    assert main(['score', str(path)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record['intent_score'], record['dropped_frames']) == (1.0, 1)


def test_an_invalid_metadata_yaml_is_described(tmp_path, capsys):
    empty = tmp_path / 'empty_bag'
    empty.mkdir()
    (empty / 'metadata.yaml').write_text('rosbag2_bagfile_information: [\n', encoding='utf-8')
    assert main(['score', str(empty)]) == 2
    err = one_line(capsys.readouterr().err)
    assert 'metadata.yaml is not valid YAML (' in err and 'at line 2, column 1), and no .mcap or .db3 file' in err
    assert 'no metadata.yaml' not in err

    (empty / 'metadata.yaml').write_text('rosbag2_bagfile_information: {storage_identifier: mcap}\n', encoding='utf-8')
    assert main(['score', str(empty)]) == 2
    assert 'rosbag2_bagfile_information lacks a list of relative_file_paths' in one_line(capsys.readouterr().err)

    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=pickup_trajectory())
    (bag / 'metadata.yaml').write_text('rosbag2_bagfile_information: [\n', encoding='utf-8')
    assert main(['score', str(bag)]) == 0  # the storage file is intact: scored, with one warning line
    captured = capsys.readouterr()
    assert json.loads(captured.out)['intent_score'] == 1.0
    assert 'metadata.yaml is not valid YAML' in one_line(captured.err)


def task_of(layout):
    return next(task for task in registry.eval_tasks() if task.layout == layout)


def test_a_task_of_another_layout_is_refused_naming_the_mismatch(tmp_path, capsys):
    # pickup_trajectory() is recorded in Scene 1's default layout.
    scene1_1 = task_of('scene1_1').task_id
    named = good_file(tmp_path / 'named.json', task_id=scene1_1)
    unnamed = good_file(tmp_path / 'unnamed.json', task_id=scene1_1, meta={})
    scene4 = good_file(tmp_path / 'scene4.json', task_id=task_of('scene4_2').task_id, meta={})
    assert main(['score', str(named), str(unnamed), str(scene4)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ''
    errors = captured.err.splitlines()
    recorded_elsewhere = 'but the episode was recorded in layout \'default\' (meta "layout")'
    assert f"task {scene1_1} is set in layout 'scene1_1' of scene 1, {recorded_elsewhere}" in errors[0]
    assert f"{unnamed}: task {scene1_1} is set in layout 'scene1_1', but the frames start elsewhere: " in errors[1]
    assert 'from its place (-0.140, -0.040)' in errors[1] and errors[1].endswith("the frames fit layout 'default'")
    assert 'but the frames do not hold its objects (objects not in that layout: green_sphere, ' in errors[2]
    assert 'layout objects never recorded: blue_cube_right, blue_sphere, bowl, ' in errors[2]


def unprivileged() -> list[str]:
    """A command prefix under which a file of mode 000 cannot be read, even by root: it drops the capabilities that
    let root read any file (the file's owner, root, has no permission on it either)."""
    if os.geteuid() != 0:
        return []
    if shutil.which('setpriv') is None:
        pytest.skip('root cannot be denied a file without setpriv')
    return ['setpriv', '--bounding-set=-dac_override,-dac_read_search']


def robofollow(*argv: str, prefix: tuple[str, ...] = (), memory_gib: int = 4) -> subprocess.CompletedProcess[str]:
    """``robofollow *argv`` in its own process, within ``memory_gib`` of address space and two minutes, so that a
    reader that hangs or blows up fails the test instead of taking the machine."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_gib << 30, memory_gib << 30))

    command = [*prefix, sys.executable, '-m', 'robofollow_ros', *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, preexec_fn=limit)


def test_an_unreadable_bag_file_is_named_with_the_reason(tmp_path):
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=pickup_trajectory())
    (mcap,) = bag.glob('*.mcap')
    lone = tmp_path / 'lone.mcap'
    shutil.copyfile(mcap, lone)
    for path in (mcap, lone):
        path.chmod(0)
    done = robofollow('score', str(bag), str(lone), prefix=tuple(unprivileged()))
    assert done.returncode == 2 and 'Traceback' not in done.stderr, done.stderr
    assert done.stderr.splitlines() == [
        f'robofollow score: error: cannot read bag file {mcap}: Permission denied',
        f'robofollow score: error: cannot read bag file {lone}: Permission denied',
        'robofollow score: 2 of 2 episodes could not be scored',
    ]


DIGITS = sys.get_int_max_str_digits()


@pytest.mark.parametrize(
    ('meta', 'message'),
    [
        ('"seed": NaN', 'meta "seed" must be an integer or null, got NaN'),
        ('"round": true', 'meta "round" must be an integer or null, got true'),
        ('"warnings": 1.5', 'meta "warnings" must be a list of texts or null, got 1.5'),
        ('"seed": ' + '7' * 1_000_000, f'not a trajectory (it holds an integer of more than {DIGITS} digits)'),
    ],
    ids=['nan-seed', 'boolean-round', 'number-warnings', 'huge-integer'],
)
def test_meta_values_a_record_cannot_hold_are_one_line(tmp_path, capsys, meta, message):
    path = good_file(tmp_path / 'episode.json', meta={'layout': 'default', 'seed': 1})
    path.write_text(path.read_text(encoding='utf-8').replace('"seed":1', meta), encoding='utf-8')
    assert main(['score', str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ''
    assert one_line(captured.err) == f'robofollow score: error: {path}: {message}\n'


def test_oversized_metadata_and_trajectory_are_refused_without_parsing_them(tmp_path):
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=pickup_trajectory())
    with (bag / 'metadata.yaml').open('ab') as stream:  # 200 MiB of comment: PyYAML would scan it for hours
        comment = b'#' * ((1 << 20) - 1) + b'\n'
        for _ in range(200):
            stream.write(comment)
    big = good_file(tmp_path / 'big.json')
    with big.open('ab') as stream:
        stream.write(b' ' * (32 << 20))  # trajectory_json.MAX_BYTES
    done = robofollow('score', str(bag), str(big))
    assert done.returncode == 2, done.stderr
    metadata = bag / 'metadata.yaml'
    assert done.stderr.splitlines() == [
        f'robofollow score: error: bag metadata {metadata} is 200.0 MiB, over the limit of 1 MiB; not read '
        '(rosbag2 writes a few KiB)',
        f'robofollow score: error: trajectory {big} is {big.stat().st_size / 2**20:.1f} MiB, over the limit of 32 MiB; '
        'not read',
        'robofollow score: 2 of 2 episodes could not be scored',
    ]


def test_reading_frames_costs_the_same_per_frame_however_many_there_are(monkeypatch):
    """Each signal's column is made once, not once per frame (a 69 MB file took minutes to reach frame 73)."""
    document = trajectory_json.trajectory_to_dict(pickup_trajectory(), task_id=TASK_ID)
    real, made = np.full, []

    def full(shape, value):
        made.append(shape)
        return real(shape, value)

    monkeypatch.setattr(np, 'full', full)
    counts = []
    for count in (10, 80):
        made.clear()
        trajectory_json.trajectory_from_dict({**document, 'frames': document['frames'][:count]})
        counts.append(len(made))
    assert counts[0] == counts[1], counts


def test_yaml_aliases_expanding_without_bound_are_refused(tmp_path):
    """``BILLION_LAUGHS`` in a bag's metadata.yaml (``calibrate`` reads the same file: test_calibrate_cli)."""
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=pickup_trajectory())
    (bag / 'metadata.yaml').write_text(
        BILLION_LAUGHS + 'rosbag2_bagfile_information: {storage_identifier: mcap, relative_file_paths: *i}\n',
        encoding='utf-8',
    )
    done = robofollow('score', str(bag))
    assert done.returncode == 0, done.stderr  # the storage file is intact: scored, with one warning line
    assert 'metadata.yaml is not valid YAML (aliases expand it past 1000000 values at line' in one_line(done.stderr)
