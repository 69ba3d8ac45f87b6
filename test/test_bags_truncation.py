"""Bags of a recording that was killed or cut short: every intact message is kept and scored.

What rosbags 0.11.9 itself does with these files (checked in ``test_rosbags_alone_refuses_*``): a missing
metadata.yaml -> FileNotFoundError for the directory; an MCAP file without footer -> "File end magic is
invalid."; an SQLite file cut short -> "database disk image is malformed". All lose the whole episode.
"""

from __future__ import annotations

import os
import shutil
import sqlite3

import numpy as np
import pytest
from rosbags.rosbag2 import CompressionFormat, CompressionMode, Reader, ReaderError, StoragePlugin, Writer
from test_bags_support import META, SPEC_TS, pose_cdr, string_cdr, synthetic_trajectory

from robofollow_ros.bags import load_episode, read_episode_bag, read_episode_result, write_episode_bag
from robofollow_ros.errors import BagError
from robofollow_ros.referee.trajectory import Trajectory

RESULT = {'task_id': META['task_id'], 'success': False}
FOOTER_SIZE = 37


def assert_prefix(actual: Trajectory, expected: Trajectory, frames: int, *, exact_last: bool = True) -> None:
    """``actual`` is the first ``frames`` frames of ``expected`` (the last one only by time unless exact_last)."""
    assert len(actual) == frames
    np.testing.assert_allclose(actual.t, expected.t[:frames], rtol=0, atol=1e-9)
    exact = frames if exact_last else frames - 1
    for arm in ('left', 'right'):
        np.testing.assert_array_equal(actual.ee[arm][:exact], expected.ee[arm][:exact])
        np.testing.assert_array_equal(actual.ee_quat[arm][:exact], expected.ee_quat[arm][:exact])
        np.testing.assert_array_equal(actual.grip[arm][:exact], expected.grip[arm][:exact])
    for name in expected.obj_pos:
        np.testing.assert_array_equal(actual.obj_pos[name][:exact], expected.obj_pos[name][:exact])
        np.testing.assert_array_equal(actual.obj_quat[name][:exact], expected.obj_quat[name][:exact])


def left_ee_offset(content: bytes, trajectory: Trajectory, frame: int) -> int:
    """Byte offset of the CDR of the left EE pose of ``frame`` in a storage file."""
    stamp = round(trajectory.t[frame] * 1e9)
    cdr = pose_cdr(stamp, trajectory.ee['left'][frame], trajectory.ee_quat['left'][frame])
    offset = content.find(cdr)
    assert offset > 0 and content.find(cdr, offset + 1) == -1
    return offset


def storage_file(bag, suffix):
    (file,) = bag.glob(f'*{suffix}')
    return file


def test_rosbags_alone_refuses_truncated_files(tmp_path):
    trajectory = synthetic_trajectory(50)
    mcap = write_episode_bag(tmp_path / 'm', meta=META, trajectory=trajectory)
    db3 = write_episode_bag(tmp_path / 's', meta=META, trajectory=trajectory, storage='sqlite3')
    mcap_file, db3_file = storage_file(mcap, '.mcap'), storage_file(db3, '.db3')
    os.truncate(mcap_file, mcap_file.stat().st_size - FOOTER_SIZE)
    os.truncate(db3_file, db3_file.stat().st_size // 2)
    with pytest.raises(ReaderError, match='magic'), Reader(mcap):
        pass
    with pytest.raises(ReaderError, match='malformed'), Reader(db3):
        pass
    (mcap / 'metadata.yaml').unlink()
    with pytest.raises(FileNotFoundError), Reader(mcap):
        pass


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_missing_metadata_yaml_loses_nothing(tmp_path, storage):
    trajectory = synthetic_trajectory(80)
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory, result=RESULT, storage=storage)
    (bag / 'metadata.yaml').unlink()
    meta, back = read_episode_bag(bag)
    assert 'metadata.yaml missing' in meta.pop('recovered')
    assert meta == META
    assert_prefix(back, trajectory, 80)
    assert read_episode_result(bag) == RESULT


def test_unreadable_metadata_yaml_is_treated_as_missing(tmp_path):
    trajectory = synthetic_trajectory(20)
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory)
    (bag / 'metadata.yaml').write_text('rosbag2_bagfile_information: [unterminated')
    meta, back = read_episode_bag(bag)
    assert 'metadata.yaml is not valid YAML' in meta['recovered']
    assert_prefix(back, trajectory, 20)


@pytest.mark.parametrize('cut', ['footer', 'summary'])
def test_mcap_without_footer_or_summary_keeps_every_message(tmp_path, cut):
    trajectory = synthetic_trajectory(90)
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory, result=RESULT)
    file = storage_file(bag, '.mcap')
    content = file.read_bytes()
    summary_start = int.from_bytes(content[-FOOTER_SIZE + 9 : -FOOTER_SIZE + 17], 'little')
    os.truncate(file, len(content) - FOOTER_SIZE if cut == 'footer' else summary_start)

    meta, back = read_episode_bag(bag)
    assert 'rosbags cannot read it' in meta['recovered']
    assert '90 frames' not in meta['recovered']
    assert_prefix(back, trajectory, 90)
    assert read_episode_result(bag) == RESULT


@pytest.mark.parametrize('frame', [1, 33, 119])
def test_mcap_cut_inside_its_chunk_keeps_the_complete_frames(tmp_path, frame):
    trajectory = synthetic_trajectory(120)
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory, result=RESULT)
    (bag / 'metadata.yaml').unlink()
    file = storage_file(bag, '.mcap')
    os.truncate(file, left_ee_offset(file.read_bytes(), trajectory, frame))

    meta, back = read_episode_bag(bag)
    assert 'metadata.yaml missing' in meta['recovered']
    assert 'cut short' in meta['recovered']
    assert_prefix(back, trajectory, frame)
    assert read_episode_result(bag) is None


def test_mcap_cut_in_a_later_chunk_keeps_earlier_chunks_and_images(tmp_path):
    n, frame = 200, 170
    trajectory = synthetic_trajectory(n)
    rng = np.random.default_rng(5)
    images = [rng.integers(0, 256, size=(48, 64, 3), dtype=np.uint8) for _ in range(n)]
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory, images={'cam_high': images})
    (bag / 'metadata.yaml').unlink()
    file = storage_file(bag, '.mcap')
    content = file.read_bytes()
    assert content.count(b'\x06') > 0 and len(content) > 1.5 * 2**20
    os.truncate(file, left_ee_offset(content, trajectory, frame))

    recording = load_episode(bag, images=True)
    assert_prefix(recording.trajectory, trajectory, frame)
    stream = recording.cameras['cam_high']
    assert len(stream.images) == frame + 1
    for got, want in zip(stream.images, images, strict=False):
        np.testing.assert_array_equal(got, want)


def test_compressed_mcap_cut_short_keeps_the_decodable_part(tmp_path):
    n = 600
    trajectory = synthetic_trajectory(n)
    plain = write_episode_bag(tmp_path / 'plain', meta=META, trajectory=trajectory)
    packed = tmp_path / 'packed'
    writer = Writer(packed, version=9, storage_plugin=StoragePlugin.MCAP)
    writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    with Reader(plain) as reader, writer:
        connections = {c.id: writer.add_connection(c.topic, c.msgtype, typestore=SPEC_TS) for c in reader.connections}
        for connection, log_ns, data in reader.messages():
            writer.write(connections[connection.id], log_ns, data)
    (packed / 'metadata.yaml').unlink()
    file = storage_file(packed, '.mcap')
    os.truncate(file, int(file.stat().st_size * 0.6))

    meta, back = read_episode_bag(packed)
    assert 'cut short' in meta['recovered']
    assert 0 < len(back) < n
    assert_prefix(back, trajectory, len(back), exact_last=False)


@pytest.mark.parametrize('keep_metadata', [True, False], ids=['with-metadata', 'without-metadata'])
def test_sqlite_file_cut_short_keeps_the_intact_pages(tmp_path, keep_metadata):
    n = 600
    trajectory = synthetic_trajectory(n)
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory, result=RESULT, storage='sqlite3')
    if not keep_metadata:
        (bag / 'metadata.yaml').unlink()
    file = storage_file(bag, '.db3')
    os.truncate(file, int(file.stat().st_size * 0.6))

    meta, back = read_episode_bag(bag)
    assert 'file cut short' in meta['recovered']
    assert n * 0.3 < len(back) < n
    assert_prefix(back, trajectory, len(back), exact_last=False)
    assert read_episode_result(bag) is None


def test_sqlite_write_ahead_log_of_a_killed_recorder_is_merged(tmp_path):
    trajectory = synthetic_trajectory(40)
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory, storage='sqlite3')
    file = storage_file(bag, '.db3')
    killed = tmp_path / 'killed'
    killed.mkdir()
    connection = sqlite3.connect(file)
    try:
        connection.execute('PRAGMA journal_mode=WAL')
        connection.execute('PRAGMA wal_autocheckpoint=0')
        connection.execute("INSERT INTO topics VALUES (99, '/robofollow/result', 'std_msgs/msg/String', 'cdr', '', '')")
        connection.execute(
            'INSERT INTO messages (topic_id, timestamp, data) VALUES (99, ?, ?)',
            (round(trajectory.t[-1] * 1e9), string_cdr('{"task_id": "late", "success": true}')),
        )
        connection.commit()
        shutil.copy(file, killed / file.name)
        shutil.copy(file.with_name(file.name + '-wal'), killed / (file.name + '-wal'))
    finally:
        connection.close()

    assert read_episode_result(killed) == {'task_id': 'late', 'success': True}
    meta, back = read_episode_bag(killed)
    assert 'write-ahead log' in meta['recovered']
    assert_prefix(back, trajectory, 40)


def test_mcap_with_nothing_usable_left_is_an_error(tmp_path):
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=synthetic_trajectory(10))
    file = storage_file(bag, '.mcap')
    os.truncate(file, 60)
    with pytest.raises(BagError, match='nothing usable is left'):
        read_episode_bag(bag)


def test_sqlite_with_nothing_usable_left_is_an_error(tmp_path):
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=synthetic_trajectory(10), storage='sqlite3')
    (bag / 'metadata.yaml').unlink()
    file = storage_file(bag, '.db3')
    os.truncate(file, 4096)
    with pytest.raises(BagError, match='nothing usable is left'):
        read_episode_bag(file)


def test_cut_before_any_pose_names_what_is_missing(tmp_path):
    trajectory = synthetic_trajectory(10)
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory)
    (bag / 'metadata.yaml').unlink()
    file = storage_file(bag, '.mcap')
    os.truncate(file, left_ee_offset(file.read_bytes(), trajectory, 0))
    with pytest.raises(BagError, match=r'no EE pose data for the left arm \(/robofollow/ee/left/pose\)'):
        read_episode_bag(bag)


def top_level_chunks(content: bytes) -> list[int]:
    """Offsets of the chunk records of an MCAP file (walking its records, independent of the code under test)."""
    offsets, pos = [], 8
    while pos + 9 <= len(content):
        op, length = content[pos], int.from_bytes(content[pos + 1 : pos + 9], 'little')
        if op == 0x06:
            offsets.append(pos)
        if op in (0x0F, 0x02):
            break
        pos += 9 + length
    return offsets


def test_mcap_chunk_failing_its_checksum_is_skipped(tmp_path):
    n = 200
    trajectory = synthetic_trajectory(n)
    rng = np.random.default_rng(9)
    images = [rng.integers(0, 256, size=(48, 64, 3), dtype=np.uint8) for _ in range(n)]
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory, images={'cam_high': images})
    file = storage_file(bag, '.mcap')
    content = bytearray(file.read_bytes())
    _, second = top_level_chunks(bytes(content))
    crc_at = second + 9 + 24
    content[crc_at : crc_at + 4] = (0xDEADBEEF).to_bytes(4, 'little')
    file.write_bytes(bytes(content))

    recording = load_episode(bag, images=True)
    assert 'fails its checksum; skipped' in recording.meta['recovered']
    frames = len(recording.trajectory)
    assert 0 < frames < n
    assert_prefix(recording.trajectory, trajectory, frames)
    assert len(recording.cameras['cam_high'].images) in (frames, frames + 1)
