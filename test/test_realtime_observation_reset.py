"""The real-time environment's observations (``realcell/environment.py``) never take a part from before the reset.

Right after the cell is reset the previous episode's object poses and joint states are still younger than the
freshness limit (fake hardware and drivers publish on through the reset): the first observation must wait for
samples stamped after the evaluator's RESET, or a privileged policy plans its grasp where an object of the same
name stood in the previous layout (``bench/bench_real_mode.py`` saw the expert grasp the wrong object). No ROS here:
the observation cache and a stand-in for the measured joints.
"""

from __future__ import annotations

import threading
import time
from typing import cast

import numpy as np
import pytest

from robofollow_ros import topics
from robofollow_ros.bags.cdr import default_typestore, encode_pose
from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.types import ARMS
from robofollow_ros.errors import GraphError
from robofollow_ros.realcell.driver_feedback import MeasuredCell
from robofollow_ros.realcell.environment import RealTimeEnvironment
from robofollow_ros.realcell.safe_motion import SafeMotion
from robofollow_ros.robot.profiles import load_profile
from robofollow_ros.ros.observation_cache import ObservationCache
from robofollow_ros.ros.protocol import SimStatus, StatusEvent

EPISODE = 'episode-2'


class Feedback:
    def __init__(self) -> None:
        self.cell: MeasuredCell | None = None
        self.late_gap_s: float | None = None

    def latest(self) -> MeasuredCell | None:
        return self.cell

    def mark_gaps(self, *, late_s: float) -> None:
        self.late_gap_s = late_s


class Driver:
    def topics(self) -> list[str]:
        return ['/left_arm_controller/joint_trajectory']


class Motion:
    """What the environment reads of ``SafeMotion`` while it takes an observation."""

    def __init__(self) -> None:
        self.profile = load_profile('aloha_ros2_control')
        self.feedback = Feedback()
        self.driver = Driver()

    def release(self, *, started_ns: int) -> None:
        pass

    def connected(self) -> bool:
        return True

    def with_commanded_grips(self, state: np.ndarray) -> np.ndarray:
        return state


def publish(cache: ObservationCache, motion: Motion, names: list[str], *, stamp_ns: int, value: float) -> None:
    """Joint state and every pose, stamped ``stamp_ns``, all at ``value``."""
    typestore = default_typestore()
    motion.feedback.cell = MeasuredCell(state=np.full(14, value), age_s=0.0, stamp_ns=stamp_ns)
    for topic in [topics.ee_pose_topic(arm) for arm in ARMS] + [topics.object_pose_topic(n) for n in names]:
        pose = bytes(encode_pose(typestore, stamp_ns, 'world', (value, value, 0.8), (1.0, 0.0, 0.0, 0.0)))
        cache.add_pose(topic, stamp_ns, pose)


def environment(*, timeout: float) -> tuple[RealTimeEnvironment, ObservationCache, Motion]:
    cache, motion = ObservationCache(), Motion()
    env = RealTimeEnvironment(
        cache,
        cast(SafeMotion, motion),
        clock_ns=time.time_ns,
        episode_id=EPISODE,
        privileged=True,
        timeout=timeout,
        max_age=0.5,
        log=lambda line: None,
    )
    return env, cache, motion


def test_the_first_observation_waits_for_poses_and_joints_stamped_after_the_reset() -> None:
    task = registry.eval_tasks()[0]
    layout = registry.layout_of(task)
    env, cache, motion = environment(timeout=5.0)
    publish(cache, motion, list(layout.object_names), stamp_ns=time.time_ns(), value=0.1)  # the previous layout
    time.sleep(0.01)
    cache.add_status(SimStatus(StatusEvent.RESET, EPISODE, time.time_ns()))
    time.sleep(0.01)

    def after_the_reset() -> None:
        time.sleep(0.2)
        publish(cache, motion, list(layout.object_names), stamp_ns=time.time_ns(), value=0.3)

    threading.Thread(target=after_the_reset, daemon=True).start()
    observation = env.reset(task, seed=0, layout=layout, images=False)
    assert motion.feedback.late_gap_s == pytest.approx(2 * motion.profile.row_period)  # the real-time clock starts
    assert np.allclose(observation.state, 0.3)
    for name in layout.object_names:
        assert np.allclose(observation.object_pos[name][:2], 0.3), name
    for arm in ARMS:
        assert np.allclose(observation.ee_pos[arm][:2], 0.3), arm


def test_nothing_since_the_reset_ends_the_episode_naming_the_parts() -> None:
    task = registry.eval_tasks()[0]
    layout = registry.layout_of(task)
    env, cache, motion = environment(timeout=0.3)
    publish(cache, motion, list(layout.object_names), stamp_ns=time.time_ns(), value=0.1)
    time.sleep(0.01)
    cache.add_status(SimStatus(StatusEvent.RESET, EPISODE, time.time_ns()))
    with pytest.raises(GraphError, match='joint state none since the episode started'):
        env.reset(task, seed=0, layout=layout, images=False)


def test_an_occluded_objects_last_known_pose_is_said_once_until_it_is_seen_again() -> None:
    task = registry.eval_tasks()[0]
    layout = registry.layout_of(task)
    names = list(layout.object_names)
    env, cache, motion = environment(timeout=5.0)
    said: list[str] = []
    env.log = said.append
    cache.add_status(SimStatus(StatusEvent.RESET, EPISODE, time.time_ns()))
    time.sleep(0.01)
    publish(cache, motion, names, stamp_ns=time.time_ns(), value=0.3)
    env.reset(task, seed=0, layout=layout, images=False)
    time.sleep(0.6)  # every object pose now older than max_age; the joints and TCPs fresh again
    for _ in range(3):
        publish(cache, motion, [], stamp_ns=time.time_ns(), value=0.3)
        env._observation()
    assert len(said) == 1 and all(name in said[0] for name in names), said
    publish(cache, motion, names, stamp_ns=time.time_ns(), value=0.3)  # seen again
    env._observation()
    time.sleep(0.6)
    publish(cache, motion, [], stamp_ns=time.time_ns(), value=0.3)
    env._observation()
    assert len(said) == 2, said


def test_an_object_never_seen_since_the_trial_began_makes_it_void_not_run_blind() -> None:
    # A trial started by override while its layout check could not see an object: the first observation gets the
    # arms fresh but no pose of that object, and the episode ends as void (played again), never as a failure.
    from robofollow_ros.errors import PoseMissingError
    from robofollow_ros.ros.graph_trials import POSE_MISSING, void_kind_reason

    task = registry.eval_tasks()[0]
    layout = registry.layout_of(task)
    names = list(layout.object_names)
    env, cache, motion = environment(timeout=0.4)
    cache.add_status(SimStatus(StatusEvent.RESET, EPISODE, time.time_ns()))
    time.sleep(0.01)
    publish(cache, motion, names[1:], stamp_ns=time.time_ns(), value=0.3)
    with pytest.raises(PoseMissingError, match=f'no pose of {names[0]} from the pose source since the trial started'):
        env.reset(task, seed=0, layout=layout, images=False)
    assert void_kind_reason(POSE_MISSING, 'no pose of x') == 'no pose of x'
    assert void_kind_reason('stopped', 'stopped by /robofollow/stop') == 'stopped'
    assert void_kind_reason('graph', 'graph: timed out') is None and void_kind_reason(None, None) is None
