"""``--robot``: the cell's robot is chosen by name, recorded in every record and in the run identity."""

from __future__ import annotations

import json

import pytest

from robofollow_ros.cli import main
from robofollow_ros.evaluation.identity import RunIdentity
from robofollow_ros.robot.specs import DEFAULT_ROBOT, ROBOTS, robot_names

pytestmark = pytest.mark.sim

TASKS = 'L0_pickup_yellow_block_[23]'


def eval_args(out, robot: str) -> list[str]:
    return [
        'eval',
        '--in-process',
        '--policy',
        'expert',
        '--tasks',
        TASKS,
        '--out',
        str(out),
        '--quiet',
        '--robot',
        robot,
    ]


def test_registry_names_every_robot_and_the_default() -> None:
    assert robot_names() == ('aloha', 'piper', 'primitive')
    assert DEFAULT_ROBOT in ROBOTS
    for name, spec in ROBOTS.items():
        assert spec.name == name and spec.urdf.is_file() and len(spec.joints) == 6 and len(spec.home) == 6


@pytest.mark.parametrize('robot', robot_names())
def test_records_and_identity_carry_the_robot_and_another_robot_is_refused(tmp_path, capsys, robot: str) -> None:
    out = tmp_path / 'run'
    assert main(eval_args(out, robot)) == 0
    records = [json.loads(line) for line in (out / 'results.jsonl').read_text().splitlines()]
    assert [r['robot'] for r in records] == [robot, robot]
    assert all(r['completion_ok'] for r in records)
    assert json.loads((out / 'identity.json').read_text())['robot'] == robot
    other = next(name for name in robot_names() if name != robot)
    capsys.readouterr()
    assert main(eval_args(out, other)) == 2
    assert f'robot "{robot}" there vs "{other}" here' in capsys.readouterr().err


def test_identities_written_before_robots_were_selectable_mean_the_primitive_robot() -> None:
    current = RunIdentity(
        policy='expert',
        privileged=True,
        variant='literal',
        max_queries=10,
        actions_per_query=50,
        query_timeout=300.0,
        package_version='0.1.0',
        metric_version='m1',
    )
    old = {k: v for k, v in current.as_dict().items() if k != 'robot'}
    assert RunIdentity.from_dict(old, source='old').robot == 'primitive'
