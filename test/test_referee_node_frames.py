"""The referee node scores an episode only once every frame topic reached its end, object poses included.

A CI run scored an episode from a graph whose referee had matched the sim's TCP pose and joint-state writers but not
yet its object pose writers (same participant, discovered later): the record said "trajectory lacks object(s)"
although the frames came a moment later (transient local). One process in a private domain runs the real
``RefereeNode`` and a driver node that plays the evaluator, sim and bridge over DDS: the spec, the reset, a
synthetic pick of the yellow block, the end. The object poses come from writers created only after the end (a writer
discovered late hands over its history), or never.
"""

from __future__ import annotations

import json

import pytest
from pickup_episode import run_driver
from test_referee_cli import TASK_ID

pytestmark = pytest.mark.ros

DOMAIN = 29
DRIVE = r"""
import json, sys, time
import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState
from pickup_episode import driver_beside, pickup_episode
from robofollow_ros import topics
from robofollow_ros.nodes.referee import RefereeNode
from robofollow_ros.ros import qos
from robofollow_ros.ros.messages import joint_state_message, pose_message
from robofollow_ros.ros.protocol import (
    EpisodeEnd, EpisodeEndMessage, EpisodeSpecMessage, ResultMessage, SimStatus, SimStatusMessage, StatusEvent,
    record_from_result, spec_message,
)
from robofollow_ros.state_layout import ACTION_DIM, GRIP_INDEX

objects_after = sys.argv[2]
rclpy.init(args=['--ros-args', '-p', 'robot:=aloha', '-p', 'end_timeout:=3.0'])
referee = RefereeNode()
driver, executor = driver_beside(referee)
episode = pickup_episode(sys.argv[1])
spec, trajectory, stamps, layout = episode.spec, episode.trajectory, episode.stamps, episode.layout
results = []
driver.create_subscription(ResultMessage, topics.RESULT, lambda m: results.append(record_from_result(m)), qos.EVENTS)
spec_pub = driver.create_publisher(EpisodeSpecMessage, topics.EPISODE, qos.LATCHED)
status_pub = driver.create_publisher(SimStatusMessage, topics.SIM_STATUS, qos.EVENTS)
end_pub = driver.create_publisher(EpisodeEndMessage, topics.EPISODE_END, qos.EVENTS)
joints_pub = driver.create_publisher(JointState, topics.JOINT_STATES, qos.STATE)
ee = {arm: driver.create_publisher(PoseStamped, topics.ee_pose_topic(arm), qos.STATE) for arm in ('left', 'right')}
deadline = time.monotonic() + 60


def spin_until(condition, what):
    while not condition():
        assert time.monotonic() < deadline, what
        executor.spin_once(timeout_sec=0.05)


spin_until(lambda: end_pub.get_subscription_count() and joints_pub.get_subscription_count(), 'no referee')
spin_until(lambda: all(p.get_subscription_count() for p in ee.values()), 'no TCP pose readers')
unit = (1.0, 0.0, 0.0, 0.0)
spec_pub.publish(spec_message(spec))
status_pub.publish(SimStatus(StatusEvent.RESET, spec.episode_id, stamps[0]).to_message())
for i, stamp in enumerate(stamps):
    state = np.zeros(ACTION_DIM)
    for arm in ('left', 'right'):
        state[GRIP_INDEX[arm]] = trajectory.grip[arm][i]
        ee[arm].publish(pose_message(trajectory.ee[arm][i].tolist(), trajectory.ee_quat[arm][i].tolist(),
                                     stamp_ns=stamp, frame_id=topics.WORLD_FRAME))
    joints_pub.publish(joint_state_message(layout.published_names, layout.to_joints(state).tolist(), stamp_ns=stamp))
end_pub.publish(EpisodeEnd(spec.episode_id, stamps[-1], queries=1, executed_rows=len(stamps)).to_message())
ended = time.monotonic()
if objects_after != 'never':
    held = ended + float(objects_after)
    while time.monotonic() < held:
        assert not results, 'scored before the object poses were in'
        executor.spin_once(timeout_sec=0.05)
    objects = {name: driver.create_publisher(PoseStamped, topics.object_pose_topic(name), qos.STATE)
               for name in trajectory.obj_pos}
    for i, stamp in enumerate(stamps):
        for name, positions in trajectory.obj_pos.items():
            objects[name].publish(pose_message(positions[i].tolist(), unit, stamp_ns=stamp,
                                               frame_id=topics.WORLD_FRAME))
spin_until(lambda: results, 'no result')
print(json.dumps({'waited': time.monotonic() - ended, 'record': results[0]}), flush=True)
"""


def drive_referee(objects_after: str) -> tuple[dict, str]:
    """The referee's result and log when the object poses come ``objects_after`` seconds after the end (or never)."""
    done = run_driver(DRIVE, TASK_ID, objects_after, domain=DOMAIN)
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def test_an_episode_waits_for_object_poses_discovered_after_its_end() -> None:
    outcome, log = drive_referee('1.0')
    record = outcome['record']
    assert outcome['waited'] >= 1.0
    assert (record['task_id'], record['scored'], record['intent_score'], record['exec_score']) == (TASK_ID, True, 1, 1)
    assert 'scored without every frame' not in log


def test_object_poses_that_never_come_are_named_with_their_matched_writers() -> None:
    outcome, log = drive_referee('never')
    record = outcome['record']
    assert outcome['waited'] >= 3.0
    assert record['scored'] is False and 'trajectory lacks object(s)' in record['intent_msg']
    assert 'short of it: robofollow/objects/' in log
    assert 'yellow_block_1/pose (0 writers matched)' in log
