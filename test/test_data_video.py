"""Episode videos: ``robofollow eval --video`` writes one H.264 MP4 per trial, cameras side by side, then results."""

from __future__ import annotations

import json
from fractions import Fraction

import av
import numpy as np
import pytest

from robofollow_ros.benchmark import registry
from robofollow_ros.cli import main
from robofollow_ros.errors import DatasetError
from robofollow_ros.evaluation.video import END_CARD_SECONDS, decode_frames, encode_frames, end_card, side_by_side
from robofollow_ros.sim.env import CellEnv

pytestmark = pytest.mark.sim

TASK = 'L0_pickup_yellow_block_2'


def test_eval_video_has_every_frame_then_the_result_card(tmp_path):
    out = tmp_path / 'run'
    args = ['eval', '--in-process', '--policy', 'expert', '--tasks', TASK, '--out', str(out), '--quiet', '--video']
    assert main(args) == 0
    [record] = [json.loads(line) for line in (out / 'results.jsonl').read_text().splitlines()]
    path = out / record['video_file']
    assert record['video_file'] == f'videos/{TASK}__r01.mp4'
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        assert stream.codec_context.name == 'h264' and stream.codec_context.pix_fmt == 'yuv420p'
        assert stream.average_rate == Fraction(50, 3)  # one frame per executed row, as the demonstrations
    frames = decode_frames(path)
    card_frames = round(END_CARD_SECONDS * Fraction(50, 3))
    assert frames.shape == (record['frames'] + card_frames, 240 + 40, 3 * 320, 3)
    # Frame 0 is the three cameras of the reset scene side by side (within codec error), captioned below.
    with CellEnv() as env:
        images = env.reset(registry.get_task(TASK), seed=record['seed']).images
    for index, camera in enumerate(('cam_high', 'cam_left_wrist', 'cam_right_wrist')):
        shown = frames[0, :240, index * 320 : (index + 1) * 320].astype(int)
        assert np.abs(shown - images[camera].astype(int)).mean() < 3.0, camera
    assert frames[0, 240:].max() > 150
    # The end card differs from the episode and holds (green) text.
    card = frames[-1].astype(int)
    assert np.abs(card - frames[record['frames'] - 1]).mean() > 20
    assert (card[:, :, 1] - card[:, :, 0] > 60).sum() > 50


def test_end_card_names_every_stage():
    record = {
        'intent_score': 0.8,
        'exec_score': 0.4,
        'completion_ok': False,
        'stages': [
            {'name': 's1', 'intent': 0.4, 'exec': 0.4, 'max': 0.4, 'intent_reason': 'a', 'exec_reason': 'b'},
            {'name': 's2', 'intent': 0.4, 'exec': 0.0, 'max': 0.4, 'intent_reason': 'c', 'exec_reason': 'd'},
        ],
    }
    one = end_card((280, 960, 3), instruction='Pick up the block.', record=record)
    fewer = end_card((280, 960, 3), instruction='Pick up the block.', record={**record, 'stages': record['stages'][:1]})
    assert one.shape == (280, 960, 3) and (one != fewer).any()
    images = {name: np.zeros((24, 32, 3), np.uint8) for name in ('cam_high', 'cam_left_wrist', 'cam_right_wrist')}
    assert side_by_side(images, caption='x').shape == (24 + 40, 96, 3)


def test_encoder_pads_odd_sizes_and_refuses_no_frames(tmp_path):
    frames = [np.full((23, 31, 3), value, np.uint8) for value in (10, 200)]
    assert encode_frames(tmp_path / 'odd.mp4', frames, fps=10) == 2
    decoded = decode_frames(tmp_path / 'odd.mp4')
    assert decoded.shape == (2, 24, 32, 3) and abs(int(decoded[1, 5, 5, 0]) - 200) < 6
    with pytest.raises(DatasetError):
        encode_frames(tmp_path / 'none.mp4', [], fps=10)
    assert not list(tmp_path.glob('none*'))
