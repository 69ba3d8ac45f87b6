"""In-process evaluation with the real cell and referee: records, resume, policy failures, CLI errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robofollow_ros.cli import main
from robofollow_ros.evaluation.results import ResultsFile

TASK = 'L0_pickup_yellow_block_2'


class NaNAfterOnePolicy:
    """Holds still once, then returns a chunk with a NaN: the evaluator must stop querying it."""

    needs_images = False

    def __init__(self) -> None:
        self.calls = 0

    def reset(self) -> None:
        self.calls = 0

    def set_instruction(self, text: str) -> None:
        self.instruction = text

    def predict(self, observation):
        self.calls += 1
        chunk = np.tile(np.asarray(observation.state, dtype=np.float32), (3, 1))
        if self.calls > 1:
            chunk[1, 4] = np.nan
        return chunk


class RaisingPolicy(NaNAfterOnePolicy):
    def predict(self, observation):
        raise RuntimeError('model server went away')


def records(path):
    return [json.loads(line) for line in path.read_text(encoding='utf-8').splitlines()]


def test_eval_writes_one_scored_record_per_trial_and_resumes(tmp_path, capsys):
    out = tmp_path / 'run'
    args = ['eval', '--in-process', '--policy', 'hold', '--tasks', TASK, '--out', str(out), '--quiet']
    assert main(args) == 0
    [record] = records(out / 'results.jsonl')
    assert record['task_id'] == TASK and record['round'] == 1 and record['policy'] == 'hold'
    assert record['seed'] == 42 + 100 + 28
    assert record['queries'] == 10 and record['executed_rows'] == 50 and record['frames'] == 51
    assert record['intent_score'] == 0.0 and record['completion_ok'] is False
    assert 'never closes' in record['intent_msg']
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    assert run['status'] == 'complete' and run['expected_trials'] == run['completed_trials'] == 1

    assert main(args) == 0
    assert len(records(out / 'results.jsonl')) == 1

    assert main([*args, '--rounds', '2']) == 0
    assert [(r['task_id'], r['round']) for r in records(out / 'results.jsonl')] == [(TASK, 1), (TASK, 2)]
    assert '2 trials' in capsys.readouterr().out


@pytest.mark.parametrize(
    ('policy', 'message', 'queries'),
    [
        ('test_evaluation:NaNAfterOnePolicy', 'non-finite value at row 1, column 4', 1),
        ('test_evaluation:RaisingPolicy', 'RuntimeError: model server went away', 0),
    ],
)
def test_a_failing_policy_ends_the_episode_and_is_reported(tmp_path, policy, message, queries):
    out = tmp_path / 'run'
    assert main(['eval', '--in-process', '--policy', policy, '--tasks', TASK, '--out', str(out), '--quiet']) == 0
    [record] = ResultsFile(out / 'results.jsonl').records
    assert message in record['policy_error']
    assert record['queries'] == queries and record['executed_rows'] == 3 * queries
    assert record['intent_score'] == record['exec_score'] == 0.0 and record['completion_ok'] is False
    if queries:
        assert record['frames'] == 1 + 3 * queries
    else:
        assert 'not scored: only 1 frame(s) recorded' in record['intent_msg'] and record['frames'] == 1


@pytest.mark.parametrize('record_as', ['json', 'bag'])
def test_eval_with_recording_saves_episodes_that_score_the_same_offline(tmp_path, capsys, record_as):
    out = tmp_path / 'run'
    assert (
        main(
            [
                'eval',
                '--in-process',
                '--policy',
                'expert',
                '--tasks',
                'L0_place_yellow_block_2_behind_green_sphere',
                '--out',
                str(out),
                '--quiet',
                '--record',
                record_as,
            ]
        )
        == 0
    )
    [record] = records(out / 'results.jsonl')
    capsys.readouterr()
    assert main(['score', str(out / record['episode_file'])]) == 0
    [rescored] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert record['completion_ok'] is True and record['intent_score'] == 1.0
    for key in ('task_id', 'intent_score', 'exec_score', 'completion_ok', 'stages', 'seed', 'round', 'frames'):
        assert rescored[key] == record[key], key


@pytest.mark.parametrize(
    ('args', 'message'),
    [
        (['eval', '--policy', 'hold', '--record', 'json'], 'in-process'),
        (['eval', '--in-process', '--policy', 'hold', '--scene', '7'], 'unknown scene'),
        (['eval', '--in-process', '--policy', 'hold', '--level', 'L9'], 'level'),
        (['eval', '--in-process', '--policy', 'hold', '--tasks', 'no_such_task_*'], 'no evaluation task'),
        (['eval', '--in-process', '--policy', 'oracle'], 'unknown policy'),
        (['eval', '--in-process', '--policy', 'hold', '--rounds', '0'], 'at least 1'),
    ],
)
def test_eval_bad_input_is_one_error_line(tmp_path, capsys, args, message):
    assert main([*args, '--out', str(tmp_path / 'run')]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / 'run' / 'results.jsonl').exists()
