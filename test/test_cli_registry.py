"""``robofollow tasks`` and ``robofollow entropy`` through the command-line dispatcher."""

from __future__ import annotations

import json

import pytest

from robofollow_ros.cli import main


def test_count_table_shows_every_scene_and_level(capsys: pytest.CaptureFixture[str]):
    assert main(['tasks', '--count']) == 0
    rows = {line.split()[0]: [int(v) for v in line.split()[1:]] for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows['S1'] == [16, 8, 16, 76, 116]
    assert rows['S2'] == [16, 24, 68, 24, 132]
    assert rows['S3'] == [16, 40, 64, 96, 216]
    assert rows['S4'] == [27, 14, 25, 24, 90]
    assert rows['total'] == [75, 86, 173, 220, 554]


def test_listing_filters_by_scene_and_level(capsys: pytest.CaptureFixture[str]):
    assert main(['tasks', '--scene', 's4', '--level', 'L3']) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 24
    assert all(line.startswith('L3_scene4_') for line in lines)
    assert lines[0].split('\t')[3] == 'Use your left arm to pick up the ball that is not red.'


def test_json_holds_ground_truth(capsys: pytest.CaptureFixture[str]):
    assert main(['tasks', '--pattern', 'L1_s1*', '--json']) == 0
    tasks = json.loads(capsys.readouterr().out)
    assert len(tasks) == 8
    first = tasks[0]
    assert first['task_id'] == 'L1_s11_pick_left_of_green'
    assert first['truth'] == {'scene': 1, 'action': 'pickup', 'arm': 'left', 'source': 'yellow_block_1'}
    assert first['layout'] == 'scene1_1' and first['level'] == 'L1'


def test_json_variants_differ_on_swapped_bowls(capsys: pytest.CaptureFixture[str]):
    pattern = 'L3_scene2_5_01*'
    main(['tasks', '--pattern', pattern, '--json', '--variant', 'corrected'])
    literal = json.loads(capsys.readouterr().out)[0]
    main(['tasks', '--pattern', pattern, '--json'])
    published = json.loads(capsys.readouterr().out)[0]
    assert (literal['truth']['target'], published['truth']['target']) == ('yellow_bowl', 'green_bowl')
    assert literal['flags'] == ['literal_differs_from_published']


def test_training_split_lists_labels_with_paraphrases(capsys: pytest.CaptureFixture[str]):
    assert main(['tasks', '--split', 'train', '--scene', '4', '--json']) == 0
    labels = json.loads(capsys.readouterr().out)
    assert len(labels) == 27 and all(len(label['paraphrases']) == 3 for label in labels)
    conditional = next(
        label for label in labels if label['task_id'] == 's41_if_blue_right_of_red_then_l_pick_else_r_stack'
    )
    assert conditional['conditional']['holds'] is False
    assert conditional['truth']['action'] == 'stack_on_target'


def test_listing_filters_by_layout(capsys: pytest.CaptureFixture[str]):
    assert main(['tasks', '--layout', 'scene2_5']) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    # layout 2.5 (bowls swapped): 4 L1 bowl placements and their 4 L3 rewrites
    assert len(lines) == 8 and all(line.split('\t')[2] == 'scene2.5' for line in lines)
    assert main(['tasks', '--layout', 'scene4.1', '--split', 'train']) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 16


@pytest.mark.parametrize(
    ('argv', 'message'),
    [
        (['tasks', '--scene', '7'], "unknown scene '7'"),
        (['tasks', '--level', 'L5'], "unknown level 'L5'"),
        (['tasks', '--pattern', 'no_such_task'], "no eval task ID matches 'no_such_task'"),
        (['tasks', '--split', 'train', '--level', '1'], 'training labels have no level'),
        (['tasks', '--layout', 'scene9_9'], "unknown layout 'scene9_9'"),
        (['tasks', '--layout', 'scene2.5', '--scene', '1'], "unknown layout 'scene2.5'"),
    ],
)
def test_bad_input_is_one_error_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ''
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('robofollow tasks: error:') and message in lines[0]


def test_entropy_reports_both_values_and_the_grouping(capsys: pytest.CaptureFixture[str]):
    assert main(['entropy']) == 0
    out = capsys.readouterr().out
    assert 'H(T|S) = 3.782 bits' in out
    assert '0.880 bits' in out
    for config, count in [('scene1', 16), ('scene4_1', 16), ('scene4_2', 7), ('scene4_3', 4)]:
        assert any(line.split()[:2] == [config, str(count)] for line in out.splitlines())


def test_entropy_json(capsys: pytest.CaptureFixture[str]):
    assert main(['entropy', '--json']) == 0
    report = json.loads(capsys.readouterr().out)
    assert report['h_t_given_s'] == pytest.approx(3.78202, abs=1e-4)
    assert report['libero_reference'] == pytest.approx(0.8805, abs=1e-4)
    assert report['labels_per_config'] == {
        'scene1': 16,
        'scene2': 16,
        'scene3': 16,
        'scene4_1': 16,
        'scene4_2': 7,
        'scene4_3': 4,
    }
