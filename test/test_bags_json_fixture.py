"""Bags written before the typed interfaces still score: ``test/data/json_bag`` was recorded with the code of
1f9e2f2 (``robofollow eval --in-process --policy expert --tasks L0_pickup_yellow_block_1_left --record bag``), whose
episode and result are JSON in ``std_msgs/String``; ``record.json`` is that run's line of ``results.jsonl``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rosbags.rosbag2 import Reader

from robofollow_ros.bags import load_episode, read_episode_result, write_episode_bag

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


def test_the_json_bag_written_again_today_is_typed_and_both_score_to_the_record(tmp_path) -> None:
    """``robofollow score`` reads the JSON form and the typed form of the same episode alike."""
    record = json.loads((DATA / 'record.json').read_text())
    old = load_episode(BAG)
    typed = write_episode_bag(tmp_path / 'typed', meta=old.meta, trajectory=old.trajectory, result=old.result)
    with Reader(typed) as reader:
        types = {connection.topic: connection.msgtype for connection in reader.connections}
    assert types['/robofollow/episode'] == 'robofollow_interfaces/msg/EpisodeSpec'
    assert types['/robofollow/result'] == 'robofollow_interfaces/msg/Result'
    assert load_episode(typed).meta == old.meta
    done = subprocess.run(
        [sys.executable, '-m', 'robofollow_ros', 'score', str(BAG), str(typed)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    from_json, from_typed = (json.loads(line) for line in done.stdout.strip().splitlines())
    assert from_json.pop('source') == str(BAG) and from_typed.pop('source') == str(typed)
    assert from_typed == from_json
    assert {key: from_typed[key] for key in set(from_typed) & set(record)} == {
        key: record[key] for key in set(from_typed) & set(record)
    }
