"""The real-time graph with the camera as the pose source (``robofollow launch real pose_source:=tracker
markers:=true``): fake hardware draws the ArUco tags and renders cam_high at 640x480, the ``aruco_tracker`` node
solves the camera from the board and publishes the objects' poses, and the expert acts on them and the live referee
scores from them. The trial completes and scores as the simulation's truth scores the same trial in-process, and as
the same episode's bag scores from the truth fake hardware recorded beside the tracked poses.

The task is one where the expert's arm hides another object's tag and holds still while the bridge takes the
next observation (the red sphere, under the arm that places the yellow block behind the green sphere): the bridge
must use that object's last tracked pose rather than wait for a fresh one (docs/real-cell.md, Object poses).
``bench/bench_tracker_e2e.py`` runs the 16 demo tasks with the expert and the blind baseline.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from graph_helpers import read_records, run_launch

from robofollow_ros import topics
from robofollow_ros.cli.score import score_path
from robofollow_ros.evaluation.suite import SuiteOptions, run_suite

pytestmark = pytest.mark.ros

TASK = 'L0_place_yellow_block_2_behind_green_sphere'
NOMINAL_DOMAIN = 41
SCORES = ('intent_score', 'exec_score', 'completion_ok')


def _stages(record: dict) -> list[tuple[str, float, float]]:
    return [(stage['name'], stage['intent'], stage['exec']) for stage in record['stages']]


def test_the_expert_on_tracked_poses_scores_as_simulation_truth(tmp_path: Path) -> None:
    out = tmp_path / 'tracked'
    done = run_launch(
        NOMINAL_DOMAIN,
        graph='real',
        timeout=240.0,
        pose_source='tracker',
        markers='true',
        policy='expert',
        task_ids=TASK,
        record='bag',
        out=str(out),
    )
    assert done.returncode == 0, done.stdout[-4000:]
    (live,) = read_records(out / 'results.jsonl')
    assert (live['task_id'], live['runtime'], live['pose_source']) == (TASK, 'real', 'tracker')
    assert live['policy_error'] is None and live['completion_ok'], live.get('intent_msg')
    run_suite(SuiteOptions(out=tmp_path / 'truth', policy='expert', pattern=TASK), progress=False)
    (truth,) = read_records(tmp_path / 'truth' / 'results.jsonl')
    assert [live[key] for key in SCORES] == [truth[key] for key in SCORES]
    assert _stages(live) == _stages(truth)
    # The same episode scored from the simulation truth fake hardware recorded beside the tracker.
    same_episode = score_path(out / live['episode_file'], object_poses=topics.TRUTH_POSE_PREFIX)
    assert [same_episode[key] for key in SCORES] == [live[key] for key in SCORES]
    assert _stages(same_episode) == _stages(live)
