"""Referee constants: the packaged defaults, partial overrides, clear errors."""

from __future__ import annotations

import pytest
from golden.episodes import pick, score, standing, still
from golden.scenes import S1, task

from robofollow_ros.benchmark.types import GroundTruth
from robofollow_ros.errors import RoboFollowError
from robofollow_ros.referee.config import load_config
from robofollow_ros.referee.synthetic import Motion


def test_packaged_defaults_are_the_protocol_constants():
    config = load_config()
    assert (config.gripper.close, config.gripper.push_close, config.gripper.open) == (0.35, 0.25, 0.7)
    assert (config.finish.window, config.finish.lateness) == (pytest.approx(20 * 0.06), pytest.approx(180 * 0.06))
    assert config.scene1.final_window == pytest.approx(10 * 0.06)
    assert config.finish.operation_area.x == (-0.20, 0.15)
    assert config.finish.home_radius == {1: 0.12, 2: 0.10, 4: 0.10}
    assert config.stages.three_stage == (0.4, 0.4, 0.2)


def test_override_replaces_only_named_keys(tmp_path):
    path = tmp_path / 'override.yaml'
    path.write_text('source:\n  radius: 0.05\nfinish:\n  home_radius: {1: 0.2}\n', encoding='utf-8')
    config = load_config(path)
    assert config.source.radius == 0.05
    assert config.source.lift == 0.01
    assert config.finish.home_radius == {1: 0.2}
    assert config.finish.window == pytest.approx(1.2)


def test_override_changes_the_score(tmp_path):
    objects = standing(S1)
    motion = pick(
        still(Motion(duration=8.0), objects),
        arm='left',
        name='yellow_block_1',
        start=objects['yellow_block_1'],
        offset=(0.0, 0.06),
    )
    pickup = task('L0_pickup_yellow_block_1_left', GroundTruth(1, 'pickup', 'left', 'yellow_block_1'), S1)
    path = tmp_path / 'tight.yaml'
    path.write_text('source:\n  radius: 0.05\n', encoding='utf-8')
    assert score(pickup, motion, S1)['intent_score'] == 1.0
    assert score(pickup, motion, S1, config=load_config(path))['intent_score'] == 0.0  # 0.06 >= 0.05


@pytest.mark.parametrize(
    ('text', 'message'),
    [
        ('source:\n  radiuss: 0.05\n', 'unknown referee config key source.radiuss'),
        ('gripper:\n  close: high\n', 'gripper.close must be a finite number'),
        ('- 1\n', 'mapping'),
        ('source: [1\n', 'not valid YAML'),
    ],
)
def test_bad_overrides_are_clear_errors(tmp_path, text, message):
    path = tmp_path / 'bad.yaml'
    path.write_text(text, encoding='utf-8')
    with pytest.raises(RoboFollowError, match=message):
        load_config(path)
