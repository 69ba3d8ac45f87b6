"""Bad input to the bag reader and writer gets a clear BagError / TrajectoryError, never a traceback or a 0."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer
from test_bags_support import (
    JOINTS,
    META,
    POSE,
    SPEC,
    STRING,
    TS,
    joints_cdr,
    pose_cdr,
    spec_cdr,
    string_cdr,
    synthetic_trajectory,
    write_raw_bag,
)

from robofollow_ros.bags import read_episode_bag, read_episode_meta, read_episode_result, write_episode_bag
from robofollow_ros.errors import BagError, TrajectoryError
from robofollow_ros.referee.trajectory import Trajectory

EPISODE = ('/robofollow/episode', STRING, 0, string_cdr(json.dumps(META)))
GRIPPERS = ('/joint_states', JOINTS, 0, joints_cdr(0, ['left_gripper', 'right_gripper'], [1.0, 0.5]))
LEFT = ('/robofollow/ee/left/pose', POSE, 0, pose_cdr(0, (1, 2, 3)))
RIGHT = ('/robofollow/ee/right/pose', POSE, 0, pose_cdr(0, (4, 5, 6)))


def test_minimal_bag_reads(tmp_path):
    meta, trajectory = read_episode_bag(write_raw_bag(tmp_path / 'bag', [EPISODE, GRIPPERS, LEFT, RIGHT]))
    assert meta == META
    assert trajectory.t.tolist() == [0.0]
    assert trajectory.obj_pos == {}
    assert trajectory.ee['right'].tolist() == [[4.0, 5.0, 6.0]]
    assert trajectory.grip['right'].tolist() == [0.5]


@pytest.mark.parametrize(
    ('messages', 'problem'),
    [
        ([GRIPPERS, LEFT, RIGHT], r'no /robofollow/episode message'),
        ([EPISODE, GRIPPERS, LEFT], r'no EE pose data for the right arm \(/robofollow/ee/right/pose\)'),
        ([EPISODE, GRIPPERS, RIGHT], r'no EE pose data for the left arm'),
        (
            [EPISODE, LEFT, RIGHT],
            r'no gripper data for the left arm \(left_left_finger, left_joint7, left_finger_left_joint or '
            r'left_gripper in ',
        ),
        (
            [EPISODE, ('/joint_states', JOINTS, 0, joints_cdr(0, ['left_gripper'], [1.0])), LEFT, RIGHT],
            r'no gripper data for the right arm',
        ),
        ([('/robofollow/episode', STRING, 0, string_cdr('task S1')), GRIPPERS, LEFT, RIGHT], r'is not JSON'),
        ([('/robofollow/episode', STRING, 0, string_cdr('[1, 2]')), GRIPPERS, LEFT, RIGHT], r'not an object'),
        ([EPISODE, ('/joint_states', STRING, 0, string_cdr('x')), LEFT, RIGHT], r'/joint_states has type'),
        (
            [EPISODE, GRIPPERS, LEFT, RIGHT, ('/robofollow/objects/cube/pose', POSE, 5, pose_cdr(5, (0, 0, 0)))],
            r'no EE pose after every required signal has appeared \(/robofollow/objects/cube/pose starts at 0\.000',
        ),
    ],
    ids=[
        'no-episode',
        'no-right-ee',
        'no-left-ee',
        'no-grippers',
        'one-gripper',
        'episode-not-json',
        'episode-not-object',
        'wrong-type',
        'object-after-last-frame',
    ],
)
def test_incomplete_episode_bags(tmp_path, messages, problem):
    bag = write_raw_bag(tmp_path / 'bag', messages, storage=StoragePlugin.SQLITE3)
    with pytest.raises(BagError, match=problem):
        read_episode_bag(bag)


def test_result_that_is_not_a_json_object(tmp_path):
    bag = write_raw_bag(tmp_path / 'bag', [EPISODE, ('/robofollow/result', STRING, 9, string_cdr('"done"'))])
    with pytest.raises(BagError, match=r'/robofollow/result: message is JSON but not an object'):
        read_episode_result(bag)


def test_last_result_record_wins(tmp_path):
    results = [('/robofollow/result', STRING, t, string_cdr(json.dumps({'n': t}))) for t in (3, 9, 5)]
    assert read_episode_result(write_raw_bag(tmp_path / 'bag', results)) == {'n': 9}


def test_not_a_bag(tmp_path):
    with pytest.raises(BagError, match='no such bag'):
        read_episode_bag(tmp_path / 'missing')
    text = tmp_path / 'episode.txt'
    text.write_text('hello')
    with pytest.raises(BagError, match=r'not a rosbag2 bag \(expected a bag directory, a \.mcap or a \.db3 file\)'):
        read_episode_bag(text)
    ros1 = tmp_path / 'old.bag'
    ros1.write_bytes(b'#ROSBAG V2.0\n')
    with pytest.raises(BagError, match='ROS 1 bags are not supported'):
        read_episode_bag(ros1)
    empty = tmp_path / 'empty'
    empty.mkdir()
    with pytest.raises(BagError, match=r'not a rosbag2 bag \(no metadata.yaml, no .mcap or .db3 file\)'):
        read_episode_bag(empty)


def test_storage_files_that_are_not_what_their_name_says(tmp_path):
    fake_mcap = tmp_path / 'fake.mcap'
    fake_mcap.write_bytes(b'this is not mcap at all' * 10)
    with pytest.raises(BagError, match='not an MCAP file'):
        read_episode_bag(fake_mcap)
    empty = tmp_path / 'empty.mcap'
    empty.write_bytes(b'')
    with pytest.raises(BagError, match=r'empty, or cut before the end of the MCAP magic \(0 bytes\)'):
        read_episode_bag(empty)
    stub = tmp_path / 'stub.db3'
    stub.write_bytes(b'SQLite format 3\x00\x10')
    with pytest.raises(BagError, match=r'empty, or cut inside the SQLite header \(17 bytes\)'):
        read_episode_bag(stub)
    fake_db3 = tmp_path / 'fake.db3'
    fake_db3.write_bytes(b'this is not sqlite at all' * 10)
    with pytest.raises(BagError, match='not an SQLite database'):
        read_episode_bag(fake_db3)


def test_both_storage_kinds_without_metadata_is_ambiguous(tmp_path):
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=synthetic_trajectory(3))
    (bag / 'metadata.yaml').unlink()
    (bag / 'other.db3').write_bytes(b'')
    with pytest.raises(BagError, match=r'both \.mcap and \.db3'):
        read_episode_bag(bag)


def test_unknown_storage(tmp_path):
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=synthetic_trajectory(3))
    metadata = bag / 'metadata.yaml'
    metadata.write_text(metadata.read_text().replace('storage_identifier: mcap', 'storage_identifier: rosbag_v9'))
    with pytest.raises(BagError, match=r"unknown storage 'rosbag_v9' \(supported: mcap, sqlite3\)"):
        read_episode_bag(bag)
    with pytest.raises(BagError, match=r"unknown storage 'parquet'"):
        write_episode_bag(tmp_path / 'new', meta=META, trajectory=synthetic_trajectory(3), storage='parquet')
    assert not (tmp_path / 'new').exists()


def test_metadata_naming_missing_storage_files(tmp_path):
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=synthetic_trajectory(3))
    (bag / 'bag.mcap').rename(tmp_path / 'elsewhere.mcap')
    with pytest.raises(BagError, match=r'storage files are missing \(bag.mcap\)'):
        read_episode_bag(bag)


def test_poses_in_another_frame_are_used_with_a_warning(tmp_path):
    left = ('/robofollow/ee/left/pose', POSE, 0, pose_cdr(0, (1, 2, 3), frame='base_link'))
    meta, trajectory = read_episode_bag(write_raw_bag(tmp_path / 'bag', [EPISODE, GRIPPERS, left, RIGHT]))
    assert meta['warnings'] == ['/robofollow/ee/left/pose is in frame base_link, expected world; used as is']
    assert trajectory.ee['left'].tolist() == [[1.0, 2.0, 3.0]]


def test_object_topic_without_messages_is_left_out_with_a_warning(tmp_path):
    bag = tmp_path / 'bag'
    with Writer(bag, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        writer.add_connection('/robofollow/objects/ghost/pose', POSE, typestore=TS)
        for topic, msgtype, log_ns, data in (EPISODE, GRIPPERS, LEFT, RIGHT):
            writer.write(writer.add_connection(topic, msgtype, typestore=TS), log_ns, data)
    meta, trajectory = read_episode_bag(bag)
    assert meta['warnings'] == ['/robofollow/objects/ghost/pose has no messages; object ghost left out']
    assert trajectory.obj_pos == {}


def test_several_episode_messages_use_the_first_with_a_warning(tmp_path):
    later = ('/robofollow/episode', STRING, 1, string_cdr(json.dumps({'task_id': 'other'})))
    meta, _ = read_episode_bag(write_raw_bag(tmp_path / 'bag', [later, EPISODE, GRIPPERS, LEFT, RIGHT]))
    assert meta.pop('warnings') == ['2 different /robofollow/episode messages; the first one is used']
    assert meta == META


def with_changes(trajectory: Trajectory, **changes) -> Trajectory:
    fields = {name: getattr(trajectory, name) for name in ('t', 'ee', 'grip', 'obj_pos', 'ee_quat', 'obj_quat')}
    return Trajectory(**{**fields, **changes})


GOOD = synthetic_trajectory(6)


@pytest.mark.parametrize(
    ('trajectory', 'problem'),
    [
        (with_changes(GOOD, t=GOOD.t[::-1].copy()), 'strictly increasing'),
        (with_changes(GOOD, t=GOOD.t - 10), r'must lie in \[0'),
        (with_changes(GOOD, t=np.zeros(0)), 'non-empty'),
        (with_changes(GOOD, ee={'left': GOOD.ee['left']}), 'no ee/grip entry for the right arm'),
        (with_changes(GOOD, grip={**GOOD.grip, 'left': GOOD.grip['left'][:3]}), r"grip\['left'\] has shape \(3,\)"),
        (with_changes(GOOD, obj_pos={**GOOD.obj_pos, 'bad name': np.zeros((6, 3))}), "object name 'bad name'"),
        (with_changes(GOOD, obj_pos={'cube': np.full((6, 3), np.nan)}), 'non-finite'),
        (with_changes(GOOD, ee_quat={'left': np.ones((6, 3))}), r"ee_quat\['left'\] has shape \(6, 3\)"),
    ],
    ids=['decreasing-t', 'negative-t', 'empty', 'missing-arm', 'short-grip', 'bad-object-name', 'nan', 'bad-quat'],
)
def test_writer_rejects_malformed_trajectories(tmp_path, trajectory, problem):
    with pytest.raises(TrajectoryError, match=problem):
        write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory)
    assert not (tmp_path / 'bag').exists()


def test_writer_rejects_bad_joints_images_meta_and_existing_paths(tmp_path):
    joints = np.zeros((6, 14))
    with pytest.raises(TrajectoryError, match=r'gripper columns differ from trajectory\.grip'):
        write_episode_bag(tmp_path / 'a', meta=META, trajectory=GOOD, joint_positions=joints)
    with pytest.raises(TrajectoryError, match=r'joint_positions has shape \(6, 7\)'):
        write_episode_bag(tmp_path / 'a', meta=META, trajectory=GOOD, joint_positions=np.zeros((6, 7)))
    with pytest.raises(TrajectoryError, match=r"images\['cam_high'\] has 2 entries, expected one per frame \(6\)"):
        write_episode_bag(tmp_path / 'a', meta=META, trajectory=GOOD, images={'cam_high': [None, None]})
    floats = [np.zeros((4, 4, 3), np.float32)] * 6
    with pytest.raises(TrajectoryError, match=r'must be \(h, w, 3\) uint8 RGB'):
        write_episode_bag(tmp_path / 'a', meta=META, trajectory=GOOD, images={'cam_high': floats})
    with pytest.raises(BagError, match='meta cannot be stored as JSON'):
        write_episode_bag(tmp_path / 'a', meta={'seed': {1, 2}}, trajectory=GOOD)
    with pytest.raises(BagError, match='result cannot be stored as JSON'):
        write_episode_bag(tmp_path / 'a', meta=META, trajectory=GOOD, result={'score': float('nan')})
    assert not (tmp_path / 'a').exists()
    write_episode_bag(tmp_path / 'a', meta=META, trajectory=GOOD)
    with pytest.raises(BagError, match='already exists'):
        write_episode_bag(tmp_path / 'a', meta=META, trajectory=GOOD)


TYPED = {key: value for key, value in META.items() if key != 'variant'}
TYPED_EPISODE = ('/robofollow/episode', SPEC, 0, spec_cdr(episode_id='e1', **TYPED))


def test_a_typed_episode_without_its_meta_topic_reads_its_fields(tmp_path):
    """A bag of the live graph recorded by other means has the EpisodeSpec alone: its non-empty fields are the meta."""
    meta, _ = read_episode_bag(write_raw_bag(tmp_path / 'bag', [TYPED_EPISODE, GRIPPERS, LEFT, RIGHT]))
    assert meta == {**TYPED, 'episode_id': 'e1'}


@pytest.mark.parametrize(
    ('companion', 'problem'),
    [
        ('{"robot": "aloha"}', r'/robofollow/episode_meta: the episode meta object is not \{"extra"'),
        ('{"extra": [], "absent": []}', r'/robofollow/episode_meta: the episode meta object is not'),
        ('[1]', r'/robofollow/episode_meta: message is JSON but not an object'),
        ('robot', r'/robofollow/episode_meta: message is not JSON'),
    ],
)
def test_a_broken_episode_meta_topic_is_a_clear_error(tmp_path, companion, problem):
    messages = [TYPED_EPISODE, ('/robofollow/episode_meta', STRING, 0, string_cdr(companion)), GRIPPERS, LEFT, RIGHT]
    bag = write_raw_bag(tmp_path / 'bag', messages)
    with pytest.raises(BagError, match=problem):
        read_episode_bag(bag)
    with pytest.raises(BagError, match=problem):  # the meta read alone says the same
        read_episode_meta(bag)


def test_the_meta_alone_of_a_bag_without_an_episode_is_a_clear_error(tmp_path):
    with pytest.raises(BagError, match=r'no /robofollow/episode message, so it is not an episode bag'):
        read_episode_meta(write_raw_bag(tmp_path / 'bag', [GRIPPERS, LEFT, RIGHT]))


def test_a_typed_episode_of_another_version_or_type_is_a_clear_error(tmp_path):
    other = ('/robofollow/episode', SPEC, 0, spec_cdr(version=2, **TYPED))
    with pytest.raises(BagError, match=r'/robofollow/episode: EpisodeSpec version 2 is not 1'):
        read_episode_bag(write_raw_bag(tmp_path / 'a', [other, GRIPPERS, LEFT, RIGHT]))
    posed = ('/robofollow/episode', POSE, 0, pose_cdr(0, (0, 0, 0)))
    with pytest.raises(BagError, match=r'/robofollow/episode has type geometry_msgs/msg/PoseStamped, expected'):
        read_episode_bag(write_raw_bag(tmp_path / 'b', [posed, GRIPPERS, LEFT, RIGHT]))
