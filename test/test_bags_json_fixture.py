"""Bags written before the typed interfaces still score: ``test/data/json_bag`` was recorded with the code of
1f9e2f2 (``robofollow eval --in-process --policy expert --tasks L0_pickup_yellow_block_1_left --record bag``), whose
episode and result are JSON in ``std_msgs/String``; ``record.json`` is that run's line of ``results.jsonl``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rosbags.rosbag2 import Reader

from robofollow_ros.bags import read_episode_result

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / 'test' / 'data' / 'json_bag'
BAG = DATA / 'L0_pickup_yellow_block_1_left__r01'


def test_the_fixture_is_a_json_bag() -> None:
    with Reader(BAG) as reader:
        types = {connection.topic: connection.msgtype for connection in reader.connections}
    assert types['/robofollow/result'] == types['/robofollow/episode'] == 'std_msgs/msg/String'


def test_a_json_bag_rescores_to_its_record_and_its_stored_result_reads_back() -> None:
    record = json.loads((DATA / 'record.json').read_text())
    done = subprocess.run(
        [sys.executable, '-m', 'robofollow_ros', 'score', str(BAG)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    scored = json.loads(done.stdout.strip().splitlines()[-1])
    shared = set(scored) & set(record)
    assert {'intent_score', 'exec_score', 'completion_ok', 'stages', 'adjustments'} <= shared
    assert {key: scored[key] for key in shared} == {key: record[key] for key in shared}
    stored = read_episode_result(BAG)
    assert stored is not None
    assert {key: stored[key] for key in shared} == {key: record[key] for key in shared}
