"""The public trajectory format: round trip, clear errors for bad input, dropouts reported as gaps."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from golden.episodes import RATE, pick, standing, still
from golden.scenes import S1, task

from robofollow_ros.benchmark.types import GroundTruth
from robofollow_ros.errors import TrajectoryError
from robofollow_ros.referee.score import score_episode
from robofollow_ros.referee.synthetic import Motion
from robofollow_ros.referee.trajectory_json import (
    FORMAT,
    dump_trajectory,
    load_trajectory,
    trajectory_from_dict,
    trajectory_to_dict,
)

OBJECTS = standing(S1)
PICKUP = task('L0_pickup_yellow_block_1_left', GroundTruth(1, 'pickup', 'left', 'yellow_block_1'), S1)


def episode():
    motion = still(Motion(duration=8.0), OBJECTS)
    return pick(motion, arm='left', name='yellow_block_1', start=OBJECTS['yellow_block_1']).sample(RATE)


def document() -> dict:
    return trajectory_to_dict(episode(), task_id=PICKUP.task_id, meta={'seed': 7, 'round': 1})


def test_round_trip_through_a_file(tmp_path):
    trajectory = episode()
    path = tmp_path / 'episode.json'
    dump_trajectory(path, trajectory, task_id=PICKUP.task_id, variant='published', meta={'seed': 7})
    loaded = load_trajectory(path)
    assert (loaded.task_id, loaded.variant, loaded.meta) == (PICKUP.task_id, 'published', {'seed': 7})
    np.testing.assert_array_equal(loaded.trajectory.t, trajectory.t)
    np.testing.assert_array_equal(loaded.trajectory.obj_pos['yellow_block_1'], trajectory.obj_pos['yellow_block_1'])
    np.testing.assert_array_equal(loaded.trajectory.ee_quat['left'], trajectory.ee_quat['left'])
    first = score_episode(PICKUP, trajectory, layout=S1).to_record()
    again = score_episode(PICKUP, loaded.trajectory, layout=S1).to_record()
    assert first == again


def test_frames_follow_the_documented_shape():
    frame = document()['frames'][0]
    assert set(frame) == {'t', 'ee', 'ee_quat', 'grip', 'objects'}
    assert set(frame['objects']['red_sphere']) == {'p'}
    assert len(frame['ee']['left']) == 3 and len(frame['ee_quat']['right']) == 4
    assert document()['format'] == FORMAT


def broken(edit) -> dict:
    doc = copy.deepcopy(document())
    edit(doc)
    return doc


@pytest.mark.parametrize(
    ('edit', 'message'),
    [
        (lambda d: d.update(format='other/1'), 'format'),
        (lambda d: d.pop('task_id'), 'task_id'),
        (lambda d: d.update(variant='x'), 'variant'),
        (lambda d: d.update(frames=[]), 'empty trajectory'),
        (lambda d: d['frames'][5].pop('grip'), "frame 5: missing field 'grip'"),
        (lambda d: d['frames'][3]['ee'].pop('right'), 'frame 3.ee: missing arm'),
        (lambda d: d['frames'][2].update(t='soon'), 'frame 2.t'),
        (lambda d: d['frames'][4]['objects']['red_sphere'].update(p=[1, 2]), 'list of 3 numbers'),
        (lambda d: d['frames'][0].pop('objects'), 'missing field "objects"'),
    ],
)
def test_malformed_documents_name_the_problem(edit, message):
    with pytest.raises(TrajectoryError, match=message):
        trajectory_from_dict(broken(edit))


@pytest.mark.parametrize(
    ('edit', 'message'),
    [
        (lambda d: d['frames'][9].update(t=d['frames'][8]['t']), 'frame 9: time .* repeats frame 8'),
        (lambda d: d['frames'][9].update(t=0.0), 'frame 9: time .* goes back'),
        (lambda d: d['frames'][0]['objects'].update(teapot={'p': [0, 0, 0.8]}), 'unknown object.*teapot'),
        (lambda d: [f['objects'].pop('red_sphere') for f in d['frames']], 'lacks object.*red_sphere'),
    ],
)
def test_inconsistent_trajectories_are_rejected_when_scored(edit, message):
    loaded = trajectory_from_dict(broken(edit))
    with pytest.raises(TrajectoryError, match=message):
        score_episode(PICKUP, loaded.trajectory, layout=S1)


def test_not_json_and_missing_file(tmp_path):
    bad = tmp_path / 'bad.json'
    bad.write_text('{"format": ', encoding='utf-8')
    with pytest.raises(TrajectoryError, match='not valid JSON'):
        load_trajectory(bad)
    with pytest.raises(TrajectoryError, match='cannot read'):
        load_trajectory(tmp_path / 'absent.json')


def test_dropout_stretch_is_dropped_and_reported():
    # the red ball is not tracked from 6.0 s to 7.02 s (18 frames): scored over the rest, hole 5.94-7.08 s
    doc = document()
    for frame in doc['frames']:
        if 6.0 - 1e-9 <= frame['t'] <= 7.02 + 1e-9:
            frame['objects']['red_sphere'] = {'p': [None, None, None]}
    loaded = trajectory_from_dict(json.loads(json.dumps(doc)))
    record = score_episode(PICKUP, loaded.trajectory, layout=S1).to_record()
    assert record['dropped_frames'] == 18
    assert record['gaps'] == [[pytest.approx(5.94), pytest.approx(7.08)]]
    assert (record['intent_score'], record['exec_score']) == (1.0, 1.0)


def test_short_dropouts_are_dropped_silently():
    doc = document()
    doc['frames'][40]['grip']['left'] = None
    loaded = trajectory_from_dict(doc)
    record = score_episode(PICKUP, loaded.trajectory, layout=S1).to_record()
    assert record['dropped_frames'] == 1 and record['gaps'] == []


def test_nan_everywhere_is_an_error_not_a_zero():
    trajectory = episode()
    trajectory.obj_pos['red_sphere'][:] = np.nan
    with pytest.raises(TrajectoryError, match=r'only 0 of .* frames.*red_sphere'):
        score_episode(PICKUP, trajectory, layout=S1)
