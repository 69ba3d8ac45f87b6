"""Episode bags written by write_episode_bag read back equal (MCAP and SQLite3, directory or single file)."""

from __future__ import annotations

import json
from dataclasses import replace
from xml.etree import ElementTree as ET

import numpy as np
import pytest
import yaml
from rosbags.highlevel import AnyReader
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores
from test_bags_support import META, OBJECTS, synthetic_trajectory

from robofollow_ros.bags import (
    GENERIC_LAYOUT,
    load_episode,
    read_episode_bag,
    read_episode_meta,
    read_episode_result,
    write_episode_bag,
)
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.robot.description import joint_layout, load_robot
from robofollow_ros.robot.specs import robot_names

STORAGES = ('mcap', 'sqlite3')
SUFFIX = {'mcap': '.mcap', 'sqlite3': '.db3'}


def assert_same_trajectory(actual: Trajectory, expected: Trajectory) -> None:
    np.testing.assert_allclose(actual.t, expected.t, rtol=0, atol=1e-9)
    for arm in ('left', 'right'):
        np.testing.assert_array_equal(actual.ee[arm], expected.ee[arm])
        np.testing.assert_array_equal(actual.grip[arm], expected.grip[arm])
        np.testing.assert_array_equal(actual.ee_quat[arm], expected.ee_quat[arm])
    assert sorted(actual.obj_pos) == sorted(expected.obj_pos)
    for name in expected.obj_pos:
        np.testing.assert_array_equal(actual.obj_pos[name], expected.obj_pos[name])
        np.testing.assert_array_equal(actual.obj_quat[name], expected.obj_quat[name])


@pytest.mark.parametrize('storage', STORAGES)
def test_round_trip_directory_and_single_file(tmp_path, storage):
    trajectory = replace(synthetic_trajectory(150), frames_are_rows=True)
    result = {'task_id': META['task_id'], 'success': True, 'intent_score': 0.75}
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory, result=result, storage=storage)
    expected_meta = META | {'frames_are_rows': True}  # the writer records whether frames are executed rows

    meta, back = read_episode_bag(bag)
    assert meta == expected_meta
    assert back.gaps == ()
    assert back.frames_are_rows is True
    assert_same_trajectory(back, trajectory)
    assert read_episode_result(bag) == result

    assert read_episode_bag(bag / 'metadata.yaml')[0] == expected_meta
    single = bag / f'bag{SUFFIX[storage]}'
    meta_single, back_single = read_episode_bag(single)
    assert meta_single == expected_meta
    assert_same_trajectory(back_single, trajectory)


@pytest.mark.parametrize('storage', STORAGES)
def test_bag_layout_topics_types_and_counts(tmp_path, storage):
    n = 40
    trajectory = synthetic_trajectory(n)
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory, storage=storage)
    with Reader(bag) as reader:
        found = {c.topic: (c.msgtype, c.msgcount) for c in reader.connections}
        episode = [c for c in reader.connections if c.topic == '/robofollow/episode']
        first_log_ns = next(t for _, t, _ in reader.messages(connections=episode))
    expected = {
        '/robofollow/episode': ('robofollow_interfaces/msg/EpisodeSpec', 1),
        '/robofollow/episode_meta': ('std_msgs/msg/String', 1),
        '/joint_states': ('sensor_msgs/msg/JointState', n),
        '/robofollow/ee/left/pose': ('geometry_msgs/msg/PoseStamped', n),
        '/robofollow/ee/right/pose': ('geometry_msgs/msg/PoseStamped', n),
        **{f'/robofollow/objects/{name}/pose': ('geometry_msgs/msg/PoseStamped', n) for name in OBJECTS},
    }
    assert found == expected
    assert first_log_ns == 5_000_000_000
    assert read_episode_result(bag) is None


@pytest.mark.parametrize('storage', STORAGES)
@pytest.mark.parametrize('robot', [*robot_names(), 'generic'])
def test_joint_positions_round_trip_by_name_and_gripper_only_default(tmp_path, storage, robot):
    """Bags name joints after the robot (grippers as finger positions in metres); bags with the generic names of
    earlier versions (``left_joint1`` .. ``left_gripper``, normalised) still read back."""
    n = 30
    trajectory = synthetic_trajectory(n)
    joints = np.random.default_rng(3).uniform(-2, 2, size=(n, 14))
    joints[:, 6] = trajectory.grip['left']
    joints[:, 13] = trajectory.grip['right']
    layout = GENERIC_LAYOUT if robot == 'generic' else joint_layout(robot)
    meta = {**META, 'robot': robot} if robot != 'generic' else META
    exact = np.testing.assert_array_equal if layout.gripper_scale == 1.0 else _close
    path = write_episode_bag(
        tmp_path / 'full', meta=meta, trajectory=trajectory, joint_positions=joints, storage=storage, joints=layout
    )
    full = load_episode(path)
    assert full.joints.robot == robot
    exact(full.joint_positions, joints)
    with Reader(path) as reader:
        connection = next(c for c in reader.connections if c.topic == '/joint_states')
        _, _, data = next(reader.messages(connections=[connection]))
        message = reader_typestore(reader).deserialize_cdr(data, connection.msgtype)
    assert list(message.name) == list(layout.published_names)
    assert message.position[6] == pytest.approx(joints[0, 6] * layout.gripper_scale)

    grippers_only = load_episode(
        write_episode_bag(tmp_path / 'grip', meta=meta, trajectory=trajectory, storage=storage, joints=layout)
    )
    assert np.isnan(grippers_only.joint_positions[:, [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12]]).all()
    exact(grippers_only.joint_positions[:, 6], trajectory.grip['left'])
    exact(grippers_only.joint_positions[:, 13], trajectory.grip['right'])
    exact(grippers_only.trajectory.grip['left'], trajectory.grip['left'])
    assert grippers_only.joints.robot == robot
    by_meta = load_episode(write_episode_bag(tmp_path / 'meta', meta=meta, trajectory=trajectory, storage=storage))
    assert by_meta.joints.robot == robot, 'without joints=, the writer names joints after meta["robot"]'


def _close(actual: np.ndarray, expected: np.ndarray) -> None:
    """Grippers travel in metres: normalised -> metres -> normalised is exact to the last bit or two."""
    np.testing.assert_allclose(actual, expected, rtol=1e-15, atol=1e-15)


def reader_typestore(reader: Reader):
    from rosbags.typesys import get_typestore

    return get_typestore(Stores.ROS2_KILTED)


@pytest.mark.parametrize('storage', STORAGES)
def test_images_round_trip(tmp_path, storage):
    n = 12
    trajectory = synthetic_trajectory(n)
    rng = np.random.default_rng(7)
    high = [rng.integers(0, 256, size=(24, 32, 3), dtype=np.uint8) for _ in range(n)]
    wrist = [rng.integers(0, 256, size=(12, 16, 3), dtype=np.uint8) if i % 3 == 0 else None for i in range(n)]
    bag = write_episode_bag(
        tmp_path / 'bag',
        meta=META,
        trajectory=trajectory,
        images={'cam_high': high, 'cam_left_wrist': wrist},
        storage=storage,
    )
    recording = load_episode(bag, images=True)
    assert sorted(recording.cameras) == ['cam_high', 'cam_left_wrist']
    np.testing.assert_allclose(recording.cameras['cam_high'].t, trajectory.t, atol=1e-9, rtol=0)
    for got, want in zip(recording.cameras['cam_high'].images, high, strict=True):
        np.testing.assert_array_equal(got, want)
    wrist_frames = [0, 3, 6, 9]
    np.testing.assert_allclose(recording.cameras['cam_left_wrist'].t, trajectory.t[wrist_frames], atol=1e-9, rtol=0)
    for got, i in zip(recording.cameras['cam_left_wrist'].images, wrist_frames, strict=True):
        np.testing.assert_array_equal(got, wrist[i])
    assert load_episode(bag).cameras == {}
    _, back = read_episode_bag(bag)
    assert_same_trajectory(back, trajectory)


def test_missing_orientations_are_written_as_identity(tmp_path):
    base = synthetic_trajectory(10)
    trajectory = Trajectory(t=base.t, ee=base.ee, grip=base.grip, obj_pos=base.obj_pos)
    _, back = read_episode_bag(write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory))
    for quats in (*back.ee_quat.values(), *back.obj_quat.values()):
        np.testing.assert_array_equal(quats, np.tile([1.0, 0.0, 0.0, 0.0], (10, 1)))


@pytest.mark.parametrize('storage', STORAGES)
def test_the_episode_is_the_typed_spec_a_fresh_reader_decodes(tmp_path, storage):
    meta = {**META, 'episode_id': 'abc', 'robot': 'aloha'}
    bag = write_episode_bag(tmp_path / 'bag', meta=meta, trajectory=synthetic_trajectory(5), storage=storage)
    metadata = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    topics = [entry['topic_metadata'] for entry in metadata['topics_with_message_count']]
    types = {topic['name']: topic['type'] for topic in topics}
    assert types['/robofollow/episode'] == 'robofollow_interfaces/msg/EpisodeSpec'
    # A fresh AnyReader knows nothing of robofollow_interfaces: it decodes from the definition the bag embeds.
    with AnyReader([bag]) as reader:
        connection = next(c for c in reader.connections if c.topic == '/robofollow/episode')
        (_, _, raw), *_ = list(reader.messages(connections=[connection]))
        spec = reader.deserialize(raw, connection.msgtype)
        companion = next(c for c in reader.connections if c.topic == '/robofollow/episode_meta')
        (_, _, text), *_ = list(reader.messages(connections=[companion]))
        extra = json.loads(reader.deserialize(text, companion.msgtype).data)
    assert connection.ext.offered_qos_profiles[0].durability.name == 'TRANSIENT_LOCAL'
    assert (spec.version, spec.episode_id, spec.seed, spec.instruction) == (1, 'abc', 1042, META['instruction'])
    assert {name: getattr(spec, name) for name in META} == META
    assert extra == {'extra': {'robot': 'aloha'}, 'absent': []}  # the spec's fields are not repeated
    assert read_episode_bag(bag)[0] == meta
    assert read_episode_meta(bag) == meta  # the meta alone, as the whole read has it


@pytest.mark.parametrize(
    'meta',
    [
        {'task_id': 'x'},  # absent spec fields do not come back as '' or 0
        {**META, 'seed': 0, 'round': 0, 'instruction': ''},  # zero and empty values do come back
        {**META, 'seed': '7', 'round': 2**70, 'level': None, 'arm': 3.5},  # values the typed fields cannot hold
        {  # a data collection's meta data: no variant, a training level and its own keys
            'task_id': 'S1_L0_pick_red_sphere',
            'label': 'S1_L0_pick_red_sphere',
            'scene': 1,
            'layout': 'default',
            'seed': 5,
            'episode': 3,
            'instruction': 'pick',
            'arm': 'left',
            'level': 'train',
            'robot': 'aloha',
        },
        {**META, 'robot': None, 'nested': {'a': [1, 2.5, None, True]}},
    ],
)
def test_any_meta_data_reads_back_unchanged(tmp_path, meta):
    bag = write_episode_bag(tmp_path / 'bag', meta=meta, trajectory=synthetic_trajectory(5))
    assert read_episode_bag(bag)[0] == meta


@pytest.mark.parametrize('storage', STORAGES)
def test_the_result_is_the_typed_message_and_reads_back_as_the_record(tmp_path, storage):
    record = {
        'task_id': 't',
        'intent_score': 0.5,
        'stages': [
            {'name': 'reach', 'intent': 0.5, 'exec': 0.25, 'max': 0.5, 'intent_reason': 'a', 'exec_reason': 'b'}
        ],
        'events': {'grasp': 1.0},
    }
    bag = write_episode_bag(
        tmp_path / 'bag', meta=META, trajectory=synthetic_trajectory(5), result=record, storage=storage
    )
    # A fresh AnyReader knows nothing of robofollow_interfaces: it decodes from the definition the bag embeds.
    with AnyReader([bag]) as reader:
        connection = next(c for c in reader.connections if c.topic == '/robofollow/result')
        (_, _, raw), *_ = list(reader.messages(connections=[connection]))
        message = reader.deserialize(raw, connection.msgtype)
    assert connection.msgtype == 'robofollow_interfaces/msg/Result'
    assert message.stages[0].name == 'reach' and message.stages[0].exec == 0.25 and message.intent_score == 0.5
    assert read_episode_result(bag) == record


def test_jazzy_typestore_bag_reads_back(tmp_path):
    trajectory = synthetic_trajectory(20)
    bag = write_episode_bag(tmp_path / 'bag', meta=META, trajectory=trajectory, typestore=Stores.ROS2_JAZZY)
    meta, back = read_episode_bag(bag)
    assert meta == META
    assert_same_trajectory(back, trajectory)


@pytest.mark.parametrize('robot', [*robot_names(), 'generic'])
def test_a_robot_bag_carries_its_urdf_on_robot_description_transient_local(tmp_path, robot):
    """RViz and Foxglove draw the arms of a bag from /robot_description; bags without a robot have none."""
    meta = {**META, 'robot': robot} if robot != 'generic' else META
    path = write_episode_bag(tmp_path / 'bag', meta=meta, trajectory=synthetic_trajectory(5))
    with Reader(path) as reader:
        connections = [c for c in reader.connections if c.topic == '/robot_description']
        if robot == 'generic':
            assert connections == []
            return
        (connection,) = connections
        messages = list(reader.messages(connections=connections))
        store = reader_typestore(reader)
        durability = connection.ext.offered_qos_profiles[0].durability
    assert len(messages) == 1 and messages[0][1] == 5_000_000_000
    urdf = store.deserialize_cdr(messages[0][2], connection.msgtype).data
    assert urdf == load_robot(robot).spec.urdf_text()
    assert ET.fromstring(urdf).get('name') == ET.parse(load_robot(robot).spec.urdf).getroot().get('name')
    assert durability.name == 'TRANSIENT_LOCAL'
    assert load_episode(path).meta['robot'] == robot


def test_an_evaluation_bag_shows_the_scene_objects_as_markers_at_every_frame(tmp_path):
    """``robofollow eval --record bag``: one MarkerArray per frame on /robofollow/scene_markers, a marker per scene
    item at the item's recorded pose, sized and coloured from its spec, plus the robot's URDF."""
    from robofollow_ros.benchmark import registry
    from robofollow_ros.evaluation.suite import SuiteOptions, run_suite

    task_id = 'L1_s11_pick_right_of_red'
    (record,) = run_suite(SuiteOptions(out=tmp_path, policy='expert', task_ids=[task_id], record='bag'), progress=False)
    bag = tmp_path / record['episode_file']
    layout = registry.layout_of(registry.get_task(task_id))
    recorded = load_episode(bag).trajectory
    with Reader(bag) as reader:
        store = reader_typestore(reader)
        scene = [c for c in reader.connections if c.topic == '/robofollow/scene_markers']
        arrays = [store.deserialize_cdr(data, scene[0].msgtype) for _, _, data in reader.messages(connections=scene)]
        assert [c.topic for c in reader.connections].count('/robot_description') == 1
    assert len(arrays) == len(recorded)
    for frame in (0, len(arrays) - 1):
        markers = {marker.text: marker for marker in arrays[frame].markers}
        assert set(markers) == set(layout.object_names) == set(recorded.obj_pos)
        for name, marker in markers.items():
            position = marker.pose.position
            np.testing.assert_allclose([position.x, position.y, position.z], recorded.obj_pos[name][frame], atol=1e-12)
            assert (marker.color.r, marker.color.g, marker.color.b) == pytest.approx(layout.spec(name).rgba[:3])
            assert marker.header.frame_id == 'world' and marker.scale.z > 0
