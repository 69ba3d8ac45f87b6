"""Diagnostics beyond the paper: what a policy went for, intent confusion, the probe and the mirage gap."""

from __future__ import annotations

import json

import pytest

from robofollow_ros.benchmark import registry
from robofollow_ros.cli import main
from robofollow_ros.diagnostics.confusion import (
    NO_GRASP,
    NOT_READ,
    OTHER_OBJECT,
    RIGHT_CHOICES,
    SAME_COLOUR,
    SAME_SHAPE,
    WRONG_ARM,
    classify,
    colour_of,
    confusion_table,
)
from robofollow_ros.diagnostics.mirage import mirage_gap, mirage_markdown
from robofollow_ros.diagnostics.probe import (
    ProbeRun,
    pair_sensitivity,
    probe_seed,
    probe_tasks,
    resolve_configs,
    run_probe,
    sensitivity_by_scene,
)
from robofollow_ros.errors import RegistryError
from robofollow_ros.evaluation.episode import run_episode
from robofollow_ros.evaluation.guard import GuardedPolicy
from robofollow_ros.policy.factory import resolve_policy
from robofollow_ros.referee.score import score_episode
from robofollow_ros.referee.selection import Selection, mismatches, required_selection
from robofollow_ros.sim.env import CellEnv

SPREAD = [registry.eval_tasks(scene=scene, level=level)[3] for scene in (1, 2, 3, 4) for level in (0, 1, 2, 3)]


def guarded(name: str) -> GuardedPolicy:
    return GuardedPolicy(resolve_policy(name))


@pytest.fixture(scope='module')
def env():
    with CellEnv(render=False) as cell:
        yield cell


def _episode(env, policy_name: str, task):
    layout = registry.layout_of(task)
    outcome = run_episode(env, guarded(policy_name), task, seed=registry.trial_seed(task.task_id, 1), layout=layout)
    return outcome.trajectory, layout


@pytest.mark.parametrize('task', SPREAD, ids=lambda task: task.task_id)
def test_the_expert_goes_for_every_required_choice(env, task):
    trajectory, layout = _episode(env, 'expert', task)
    observed = score_episode(task, trajectory, layout=layout).selection
    required = required_selection(task)
    assert required.arm == task.resolved_truth.arm and required.object == task.resolved_truth.source
    assert mismatches(observed, required) == ()


@pytest.mark.parametrize(
    ('task_id', 'category', 'detail'),
    [
        ('L0_s41_l_pick_red_sphere', SAME_COLOUR, 'red_cube_in_bowl instead of red_sphere'),
        ('L0_r_pick3_via4_to6_short_front', SAME_SHAPE, 'red_bar_2 instead of green_bar_3'),
        ('L0_s41_l_pick_blue_sphere', OTHER_OBJECT, 'red_cube_in_bowl instead of blue_sphere'),
        ('L0_place_right_cube_in_green_bowl', WRONG_ARM, 'left arm instead of right'),
        ('L0_push_red_cylinder_to_left_cube', 'wrong action', 'action pickup instead of push'),
        ('L0_r_pick2_via5_to6_short_front', 'wrong route', 'route yellow_bar_4 instead of blue_bar_5'),
        ('L0_r_pick2_via4_to6_long_front', 'wrong orientation', 'orientation 0° instead of 90°'),
    ],
)
def test_the_blind_baseline_is_confused_the_way_its_fixed_label_predicts(env, task_id, category, detail):
    task = registry.get_task(task_id)
    trajectory, layout = _episode(env, 'blind', task)
    confusion = classify(score_episode(task, trajectory, layout=layout).selection, required_selection(task), layout)
    assert (confusion.category, confusion.detail) == (category, detail)


def test_a_policy_that_never_closes_grasped_nothing(env):
    task = registry.get_task('L0_s41_l_pick_red_sphere')
    trajectory, layout = _episode(env, 'hold', task)
    observed = score_episode(task, trajectory, layout=layout).selection
    assert observed == Selection(action='none')
    assert classify(observed, required_selection(task), layout).category == NO_GRASP


def test_conditionals_name_the_branch_and_a_wrong_branch_comes_first():
    task = next(t for t in registry.eval_tasks(scene=4, level=0) if t.conditional is not None)
    required = required_selection(task)
    assert required.branch == ('then' if task.conditional.holds else 'else')
    other = task.conditional.else_truth if task.conditional.holds else task.conditional.then_truth
    observed = Selection(arm=other.arm, object=other.source, branch='else' if task.conditional.holds else 'then')
    confusion = classify(observed, required, registry.layout_of(task))
    assert confusion.category == 'wrong branch'


def test_right_choices_without_intent_are_reported_as_such():
    task = registry.get_task('L0_s41_l_pick_red_sphere')
    required = required_selection(task)
    assert classify(required, required, registry.layout_of(task)).category == RIGHT_CHOICES


def test_colour_words_of_object_names():
    assert [colour_of(n) for n in ('red_sphere', 'large_blue_cube', 'small_red_cube', 'green_bar_3', 'bowl')] == [
        'red',
        'blue',
        'red',
        'green',
        'bowl',
    ]


def _confusion_record(level: str, intent_ok: bool, observed: Selection | None, required: Selection) -> dict:
    return {
        'scene': 4,
        'layout': 'scene4_1',
        'level_tag': level,
        'intent_ok': intent_ok,
        'selection': None if observed is None else observed.to_dict(),
        'required_selection': required.to_dict(),
        'policy_error': None if observed is not None else 'policy raised RuntimeError: boom',
    }


def test_confusion_table_classifies_trials_without_full_intent_from_their_records():
    wanted = Selection(arm='left', object='red_sphere', action='pickup')
    records = [
        _confusion_record('L0', True, wanted, wanted),
        _confusion_record('L0', False, Selection(arm='right', object='red_sphere'), wanted),
        _confusion_record('L0', False, Selection(arm='right', object='blue_sphere'), wanted),
        _confusion_record('L1', False, Selection(arm='left', object='red_cube_in_bowl', action='pickup'), wanted),
        _confusion_record('L1', False, None, wanted),
    ]
    table = confusion_table(records)
    rows = {(row['scene'], row['level']): row for row in table.rows()}
    assert (rows[(4, 'L0')]['trials'], rows[(4, 'L0')]['not_full'], rows[(4, 'L0')][WRONG_ARM]) == (3, 2, 2)
    assert (rows[(4, 'L1')][SAME_COLOUR], rows[(4, 'L1')][NOT_READ]) == (1, 1)
    assert table.top_details()[(4, 'L0')] == [('right arm instead of left', 2)]
    assert ('policy raised RuntimeError: boom', 1) in table.top_details()[(4, 'L1')]
    markdown = table.markdown()
    assert WRONG_ARM in markdown and SAME_COLOUR in markdown and OTHER_OBJECT not in markdown


def _run(config: str, required: Selection, observed: Selection | None) -> ProbeRun:
    return ProbeRun(config, 1, 7, 'task', 'text', required, observed)


def test_pair_sensitivity_counts_pairs_that_ask_for_different_choices():
    red, blue = Selection(arm='left', object='red'), Selection(arm='left', object='blue')
    right = Selection(arm='right', object='red')
    follower = [_run('scene1', red, red), _run('scene1', blue, blue), _run('scene1', right, right)]
    assert pair_sensitivity(follower) == pair_sensitivity(follower).__class__(pairs=3, followed=3, changed=3)
    constant = [_run('scene1', red, red), _run('scene1', blue, red), _run('scene1', right, red)]
    result = pair_sensitivity(constant)
    assert (result.pairs, result.followed, result.changed, result.sensitivity) == (3, 0, 0, 0.0)
    swapped = [_run('scene1', red, blue), _run('scene1', blue, red)]
    assert (pair_sensitivity(swapped).followed, pair_sensitivity(swapped).changed) == (0, 1)
    same_ask = [_run('scene1', red, red), _run('scene1', red, blue)]
    assert pair_sensitivity(same_ask).pairs == 0 and pair_sensitivity(same_ask).sensitivity is None
    unreadable = [_run('scene1', red, None), _run('scene1', blue, blue)]
    assert (pair_sensitivity(unreadable).pairs, pair_sensitivity(unreadable).followed) == (1, 0)


def test_probe_instructions_share_layout_and_seed():
    tasks = probe_tasks('scene4_3')
    assert [t.task_id for t in tasks[:4]] == [t.task_id for t in registry.training_labels(config='scene4_3')]
    assert all(t.level == 2 and t.layout == 'scene4_3' for t in tasks[4:]) and len(tasks) == 9
    assert probe_seed('scene4_3', 1) == probe_seed('scene4_3', 1) != probe_seed('scene4_3', 2)
    assert resolve_configs([4], None) == ['scene4_1', 'scene4_2', 'scene4_3']
    with pytest.raises(RegistryError, match='scene9'):
        resolve_configs(None, ['scene9'])


def test_probe_separates_the_expert_from_the_blind_baseline(env):
    sensitivity = {}
    for name in ('expert', 'blind'):
        runs = run_probe(env, guarded(name), ['scene4_3'])
        assert len(runs) == 9 and len({run.seed for run in runs}) == 1
        sensitivity[name] = sensitivity_by_scene(runs)[4]
    assert sensitivity['expert'].pairs == sensitivity['blind'].pairs > 10
    assert sensitivity['expert'].sensitivity == 1.0
    assert sensitivity['blind'].sensitivity == 0.0


def test_probe_command_writes_runs_and_table(tmp_path, capsys):
    assert main(['probe', '--policy', 'blind', '--config', 'scene4_3', '--limit', '3', '--out', str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert '| S4 |' in printed and 'Sensitivity' in printed
    lines = (tmp_path / 'probe.jsonl').read_text(encoding='utf-8').splitlines()
    observed = [json.loads(line)['observed'] for line in lines]
    assert len(observed) == 3 and observed[0] == observed[1] == observed[2] and observed[0]['object']
    assert all(isinstance(json.loads(line)['intent_score'], float) for line in lines)
    assert (tmp_path / 'sensitivity.md').read_text(encoding='utf-8') in printed


def test_probe_command_refuses_bad_options(capsys):
    assert main(['probe', '--config', 'scene9']) == 2
    assert main(['probe', '--limit', '1']) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and all(line.startswith('robofollow probe: error:') for line in errors)


def _record(task: str, level: str, scene: int, intent: float, completion: bool, round_: int = 1) -> dict:
    return {
        'task_id': task,
        'round': round_,
        'seed': 1,
        'scene': scene,
        'level_tag': level,
        'intent_score': intent,
        'exec_score': intent / 2,
        'intent_ok': intent >= 0.99,
        'exec_ok': False,
        'completion_ok': completion,
    }


def test_mirage_gap_compares_the_same_trials_per_level():
    policy = [
        _record('a', 'L0', 1, 1.0, True),
        _record('b', 'L0', 2, 0.5, False),
        _record('c', 'L1', 1, 0.8, True),
        _record('only_policy', 'L1', 1, 1.0, True),
    ]
    blind = [
        _record('a', 'L0', 1, 0.2, False),
        _record('b', 'L0', 2, 0.1, False),
        _record('c', 'L1', 1, 0.8, False),
        _record('only_blind', 'L1', 1, 0.0, False),
    ]
    rows = {row.level: row for row in mirage_gap(policy, blind)}
    assert list(rows) == ['L0', 'L1', 'all']
    assert rows['L0'].trials == 2 and rows['L0'].policy.intent == pytest.approx(0.75)
    assert rows['L0'].baseline.intent == pytest.approx(0.15) and rows['L0'].gap.intent == pytest.approx(0.6)
    assert rows['L0'].gap.completion == pytest.approx(0.5)
    assert rows['L1'].trials == 1 and rows['L1'].gap.intent == pytest.approx(0.0)
    assert rows['L1'].gap.completion == pytest.approx(1.0)
    assert rows['all'].trials == 3 and rows['all'].policy.intent == pytest.approx((0.9 + 0.5) / 2)
    markdown = mirage_markdown(list(rows.values()), policy='expert', baseline='blind')
    assert '| L0 | 2 | 75.0 / 37.5 / 50.0 | 15.0 / 7.5 / 0.0 | +60.0 / +30.0 / +50.0 |' in markdown


def test_report_shows_the_mirage_gap_and_confusion_of_a_real_run(tmp_path, capsys):
    out = tmp_path / 'expert'
    tasks = 'L1_s1*'
    assert main(['eval', '--in-process', '--policy', 'expert', '--tasks', tasks, '--out', str(out), '--quiet']) == 0
    records = [json.loads(line) for line in (out / 'results.jsonl').read_text(encoding='utf-8').splitlines()]
    assert records and all(r['selection'] == r['required_selection'] for r in records)
    capsys.readouterr()
    assert main(['report', str(out / 'results.jsonl'), '--out', str(out / 'report')]) == 0
    printed = capsys.readouterr()
    assert f'same {len(records)} trials' in printed.err
    baseline = [json.loads(line) for line in (out / 'report' / 'blind-baseline' / 'results.jsonl').open()]
    assert sorted((r['task_id'], r['round']) for r in baseline) == sorted((r['task_id'], r['round']) for r in records)
    document = json.loads((out / 'report' / 'diagnostics.json').read_text(encoding='utf-8'))
    (gap_l1, gap_all) = document['mirage_gap']
    assert gap_l1['level'] == 'L1' and gap_l1['trials'] == len(records)
    assert gap_l1['policy']['intent'] == 1.0 and gap_l1['gap']['intent'] == pytest.approx(
        1 - gap_l1['baseline']['intent']
    )
    assert gap_l1['baseline']['intent'] < 0.5 and gap_all['gap'] == gap_l1['gap']
    assert 'Mirage gap: `expert` against the language-blind `blind`' in printed.out
    assert document['confusion'][0]['not_full'] == 0
    assert (out / 'report' / 'confusion.png').read_bytes()[:4] == b'\x89PNG'

    blind_report = tmp_path / 'blind-report'
    blind_results = out / 'report' / 'blind-baseline' / 'results.jsonl'
    assert main(['report', str(blind_results), '--out', str(blind_report)]) == 0
    blind = json.loads((blind_report / 'diagnostics.json').read_text(encoding='utf-8'))
    assert blind['baseline'] is None and blind['confusion'][0]['not_full'] > 0
    assert 'this run is the language-blind baseline itself' in capsys.readouterr().out
    given = tmp_path / 'given'
    assert main(['report', str(out / 'results.jsonl'), '--out', str(given), '--baseline', str(blind_results)]) == 0
    assert json.loads((given / 'diagnostics.json').read_text(encoding='utf-8'))['mirage_gap'] == document['mirage_gap']
    assert not (given / 'blind-baseline').exists()
