"""An observation the sim never completed names what is missing, and how many writers of each missing topic
discovery knows: a topic without a writer was never matched, one with writers lost its samples (the two causes of
a bridge that waited out its timeout for frame 0's images)."""

from __future__ import annotations

import numpy as np
import pytest

from robofollow_ros import topics
from robofollow_ros.benchmark.registry import get_task, layout_of
from robofollow_ros.errors import GraphError
from robofollow_ros.robot.description import joint_layout
from robofollow_ros.ros.environment import RosEnvironment
from robofollow_ros.ros.observation_cache import ObservationCache
from robofollow_ros.ros.protocol import SimStatus, StatusEvent
from robofollow_ros.state_layout import CAMERAS

TASK_ID = 'L0_place_yellow_block_2_behind_green_sphere'
STAMP = 1_000_000_000


def _frame_0_without(cameras: tuple[str, ...]) -> ObservationCache:
    cache = ObservationCache()
    cache.add_state(STAMP, b'not decoded: the observation never completes')
    for camera in CAMERAS:
        if camera not in cameras:
            cache.add_image(camera, STAMP, np.zeros((2, 2, 3), dtype=np.uint8))
    cache.add_status(SimStatus(event=StatusEvent.RESET, episode_id='e1', stamp_ns=STAMP))
    return cache


def _reset(cache: ObservationCache, **options: object) -> None:
    task = get_task(TASK_ID)
    env = RosEnvironment(
        cache,
        lambda chunk, stamp: None,
        joints=joint_layout(),
        episode_id='e1',
        privileged=False,
        timeout=0.2,
        **options,  # type: ignore[arg-type]
    )
    env.reset(task, seed=0, layout=layout_of(task), images=True)


def test_a_timed_out_observation_names_the_missing_images_and_their_known_writers() -> None:
    known = {topics.image_topic(CAMERAS[0]): 0, topics.image_topic(CAMERAS[1]): 2}
    with pytest.raises(GraphError) as raised:
        _reset(_frame_0_without(CAMERAS[:2]), writers=lambda topic: known[topic])
    message = str(raised.value)
    assert f'waiting for the observation stamped {STAMP}' in message
    assert f'missing: {topics.image_topic(CAMERAS[0])} (0 writers known), ' in message
    assert f'{topics.image_topic(CAMERAS[1])} (2 writers known))' in message
    assert topics.image_topic(CAMERAS[2]) not in message


def test_without_a_writer_count_the_missing_topics_are_named_alone() -> None:
    with pytest.raises(GraphError, match=rf'\(missing: {topics.image_topic(CAMERAS[2])}\)$'):
        _reset(_frame_0_without(CAMERAS[2:]))
