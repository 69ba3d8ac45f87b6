"""The recorder node writes the episode as the typed EpisodeSpec, and its bag scores with ``robofollow score``.

One process in a private domain runs the real ``RecorderNode`` and a driver node that plays the evaluator, sim and
referee over DDS: the spec, the reset, a synthetic pick of the yellow block (joint states, object and TCP poses), the
result. The bag it writes must hold the typed episode connection and score exactly like the same episode written by
the in-process writer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from pickup_episode import run_driver
from rosbags.rosbag2 import Reader
from test_referee_cli import TASK_ID, pickup_trajectory

from robofollow_ros.bags import read_episode_bag, read_episode_result, write_episode_bag
from robofollow_ros.bags.cdr import default_typestore

pytestmark = pytest.mark.ros

DOMAIN = 28
DRIVE = r"""
import sys, time
from pathlib import Path
import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from pickup_episode import driver_beside, pickup_episode
from robofollow_ros import topics
from robofollow_ros.nodes.recorder import RecorderNode
from robofollow_ros.ros import qos
from robofollow_ros.ros.messages import joint_state_message, pose_message
from robofollow_ros.ros.protocol import (
    EpisodeSpecMessage, ResultMessage, SimStatus, SimStatusMessage, StatusEvent, result_message, spec_message,
)
from robofollow_ros.state_layout import ACTION_DIM, GRIP_INDEX

out = Path(sys.argv[1])
late_description = 'late-description' in sys.argv[3:]
reset_twice = 'reset-twice' in sys.argv[3:]
late_objects = 'late-objects' in sys.argv[3:]
rclpy.init(args=['--ros-args', '-p', f'out:={out}', '-p', 'robot:=aloha'])
recorder = RecorderNode()
driver, executor = driver_beside(recorder)
episode = pickup_episode(sys.argv[2])
spec, trajectory, stamps, layout = episode.spec, episode.trajectory, episode.stamps, episode.layout
spec_pub = driver.create_publisher(EpisodeSpecMessage, topics.EPISODE, qos.LATCHED)
status_pub = driver.create_publisher(SimStatusMessage, topics.SIM_STATUS, qos.EVENTS)
result_pub = driver.create_publisher(ResultMessage, topics.RESULT, qos.EVENTS)
joints_pub = driver.create_publisher(JointState, topics.JOINT_STATES, qos.STATE)
poses = {topic: driver.create_publisher(PoseStamped, topic, qos.STATE) for topic in topics.pose_topics()}
description_pub = driver.create_publisher(String, topics.ROBOT_DESCRIPTION, qos.LATCHED) if late_description else None
deadline = time.monotonic() + 60
while (
    spec_pub.get_subscription_count() == 0
    or joints_pub.get_subscription_count() == 0
    or (late_description and recorder.count_publishers(topics.ROBOT_DESCRIPTION) == 0)
):
    assert time.monotonic() < deadline, 'the recorder never subscribed'
    executor.spin_once(timeout_sec=0.05)
unit = (1.0, 0.0, 0.0, 0.0)


def publish_objects(i, stamp):
    for name, positions in trajectory.obj_pos.items():
        poses[topics.object_pose_topic(name)].publish(
            pose_message(positions[i].tolist(), unit, stamp_ns=stamp, frame_id=topics.WORLD_FRAME))


def publish_frame(i, stamp):
    state = np.zeros(ACTION_DIM)
    for arm in ('left', 'right'):
        state[GRIP_INDEX[arm]] = trajectory.grip[arm][i]
    joints_pub.publish(joint_state_message(layout.published_names, layout.to_joints(state).tolist(), stamp_ns=stamp))
    if not late_objects:
        publish_objects(i, stamp)
    for arm in ('left', 'right'):
        poses[topics.ee_pose_topic(arm)].publish(
            pose_message(trajectory.ee[arm][i].tolist(), trajectory.ee_quat[arm][i].tolist(), stamp_ns=stamp,
                         frame_id=topics.WORLD_FRAME))


spec_pub.publish(spec_message(spec))
if reset_twice:  # an earlier reset of the same episode whose answer was lost: its frame 0 is already written
    early = stamps[0] - 1_000_000_000
    status_pub.publish(SimStatus(StatusEvent.RESET, spec.episode_id, early).to_message())
    publish_frame(0, early)
    while len(getattr(recorder.bags.get(spec.episode_id), 'frame_ns', {})) < 3:
        assert time.monotonic() < deadline, 'the first reset\'s frame never reached the recorder'
        executor.spin_once(timeout_sec=0.05)
status_pub.publish(SimStatus(StatusEvent.RESET, spec.episode_id, stamps[0]).to_message())
for i, stamp in enumerate(stamps):
    publish_frame(i, stamp)
    executor.spin_once(timeout_sec=0)
record = {'episode_id': spec.episode_id, 'task_id': spec.task_id, 'seed': 439, 'round': 1, 'end_stamp_ns': stamps[-1]}
result_pub.publish(result_message(record))
bag = out / 'episodes' / f'{spec.task_id}__r01'
if description_pub is not None:
    held = time.monotonic() + 1.5
    while time.monotonic() < held:
        assert not bag.is_dir(), 'the bag was published before the robot description a known publisher holds'
        executor.spin_once(timeout_sec=0.05)
    description_pub.publish(String(data='<robot name="late"/>'))
if late_objects:
    held = time.monotonic() + 1.5
    while time.monotonic() < held:
        assert not bag.is_dir(), 'the bag was published before the object poses up to its end'
        executor.spin_once(timeout_sec=0.05)
    for i, stamp in enumerate(stamps):
        publish_objects(i, stamp)
while not bag.is_dir():
    assert time.monotonic() < deadline, 'the recorder never published its bag'
    executor.spin_once(timeout_sec=0.05)
recorder.close()
print(spec.episode_id, bag, flush=True)
"""


def drive_recorder(out: Path, *options: str) -> tuple[str, str]:
    """Run the recorder against the driver node; the episode id and the bag it published."""
    done = run_driver(DRIVE, str(out), TASK_ID, *options, domain=DOMAIN)
    episode_id, recorded = done.stdout.split()
    return episode_id, recorded


def test_the_recorder_node_writes_the_typed_episode_and_its_bag_scores(tmp_path) -> None:
    episode_id, recorded = drive_recorder(tmp_path / 'run')
    with Reader(recorded) as reader:
        types = {connection.topic: connection.msgtype for connection in reader.connections}
    assert types['/robofollow/episode'] == 'robofollow_interfaces/msg/EpisodeSpec'
    assert types['/robofollow/episode_meta'] == 'std_msgs/msg/String'

    meta, trajectory = read_episode_bag(recorded)
    spec = {'task_id': TASK_ID, 'variant': 'published', 'layout': 'default', 'seed': 439, 'round': 1, 'arm': 'left'}
    spec |= {'level': 'L0', 'instruction': 'pick up the yellow block'}
    assert meta == {**spec, 'episode_id': episode_id, 'robot': 'aloha', 'frames_are_rows': True}
    assert read_episode_result(recorded) == {'task_id': TASK_ID, 'seed': 439, 'round': 1}
    assert len(trajectory) == len(pickup_trajectory())

    in_process = write_episode_bag(
        tmp_path / 'in_process',
        meta={**spec, 'robot': 'aloha'},
        trajectory=replace(pickup_trajectory(), frames_are_rows=True),
    )
    scored = subprocess.run(
        [sys.executable, '-m', 'robofollow_ros', 'score', recorded, str(in_process)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert scored.returncode == 0, scored.stderr[-2000:]
    records = [json.loads(line) for line in scored.stdout.splitlines()]
    for record in records:
        record.pop('source')
    assert records[0] == records[1]
    assert (records[0]['task_id'], records[0]['window_units'], records[0]['intent_score']) == (TASK_ID, 'frames', 1.0)


def test_a_bag_waits_for_the_robot_description_a_known_publisher_has_not_delivered(tmp_path) -> None:
    """A latched URDF lost on a busy machine comes again only at its writer's next heartbeat: the episode's bag is
    held (up to the recorder's end timeout) until it is in, not published without it."""
    _, recorded = drive_recorder(tmp_path / 'run', 'late-description')
    typestore = default_typestore()
    with Reader(recorded) as reader:
        (description,) = [c for c in reader.connections if c.topic == '/robot_description']
        (_, _, data), *_ = reader.messages(connections=[description])
    assert typestore.deserialize_cdr(data, description.msgtype).data == '<robot name="late"/>'


def test_an_episode_reset_again_is_recorded_from_its_latest_reset_only(tmp_path) -> None:
    """The evaluator calls the reset again when its answer is lost; the sim then sends a second frame 0 of the same
    episode a second later, and the bag must hold the episode from that reset on (a CI run recorded the first frame 0
    too, one frame more than the in-process run of the same episode)."""
    _, recorded = drive_recorder(tmp_path / 'run', 'reset-twice')
    _, trajectory = read_episode_bag(recorded)
    reference = pickup_trajectory()
    assert len(trajectory) == len(reference)
    assert trajectory.t[0] == pytest.approx(reference.t[0])
    assert trajectory.gaps == ()


def test_a_bag_waits_for_the_object_poses_up_to_its_end(tmp_path) -> None:
    """Object poses of a writer discovered late come after the result: the bag is held until they are in (up to
    the recorder's end timeout), so it holds every object of the layout and scores."""
    _, recorded = drive_recorder(tmp_path / 'run', 'late-objects')
    _, trajectory = read_episode_bag(recorded)
    reference = pickup_trajectory()
    assert sorted(trajectory.obj_pos) == sorted(reference.obj_pos)
    assert len(trajectory) == len(reference)
