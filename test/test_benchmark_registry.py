"""The registry's public API: lookups, filters, counts, objects and layouts, helpful errors."""

from __future__ import annotations

import pytest

from robofollow_ros.benchmark import (
    TRAINING_CONFIGS,
    eval_tasks,
    get_layout,
    get_task,
    layout_names,
    layout_of,
    parse_level,
    parse_scene,
    route_references,
    scene_objects,
    training_labels,
)
from robofollow_ros.errors import (
    RegistryError,
    UnknownLayoutError,
    UnknownLevelError,
    UnknownSceneError,
    UnknownTaskError,
)

EXPECTED_COUNTS = {
    1: (16, 8, 16, 76),
    2: (16, 24, 68, 24),
    3: (16, 40, 64, 96),
    4: (27, 14, 25, 24),
}


@pytest.mark.parametrize('scene', [1, 2, 3, 4])
@pytest.mark.parametrize('level', [0, 1, 2, 3])
def test_counts_per_scene_and_level(scene: int, level: int):
    assert len(eval_tasks(scene=scene, level=level)) == EXPECTED_COUNTS[scene][level]


def test_totals():
    assert len(eval_tasks()) == 554
    assert len(eval_tasks(variant='published')) == 554
    assert len(training_labels()) == 75
    assert [len(training_labels(config=config)) for config in TRAINING_CONFIGS] == [16, 16, 16, 16, 7, 4]


def test_training_paraphrases_total_229_and_are_distinct_per_label():
    labels = training_labels()
    assert sum(len(label.paraphrases) for label in labels) == 48 + 52 + 48 + 81
    for label in labels:
        assert len(label.paraphrases) >= 3
        assert len(set(label.paraphrases)) == len(label.paraphrases)
        assert label.instruction == label.paraphrases[0]
        assert label.split == 'train' and label.level is None
        assert any(p.startswith(('Using your', 'In case')) for p in label.paraphrases), label.task_id
        assert any(f'with your {label.arm} arm' in p or p.startswith('Check whether') for p in label.paraphrases)


def test_training_paraphrases_do_not_repeat_across_labels_of_one_configuration():
    for config in TRAINING_CONFIGS:
        seen: dict[str, str] = {}
        for label in training_labels(config=config):
            for paraphrase in label.paraphrases:
                assert paraphrase not in seen, (paraphrase, seen.get(paraphrase), label.task_id)
                seen[paraphrase] = label.task_id


def test_get_task_finds_labels_and_evaluation_tasks():
    label = get_task('pickup_yellow_block_1_left')
    assert label.split == 'train' and label.truth.source == 'yellow_block_1' and label.arm == 'left'
    task = get_task('L1_s11_pick_right_of_red')
    assert task.split == 'eval' and task.level == 1 and task.layout == 'scene1_1'
    assert task.truth.source == 'yellow_block_3'


def test_unknown_task_suggests_close_matches():
    with pytest.raises(UnknownTaskError, match='L0_pickup_yellow_block_1_left'):
        get_task('L0_pickup_yelow_block_1_left')
    with pytest.raises(UnknownTaskError):
        get_task('no_such_task_anywhere')


def test_unknown_variant_is_rejected():
    with pytest.raises(RegistryError, match='variant'):
        get_task('L0_pickup_red_cylinder', variant='guess')  # type: ignore[arg-type]


@pytest.mark.parametrize('value', [2, '2', 's2', 'S2', 'scene2', 'Scene2'])
def test_parse_scene_accepts_common_spellings(value: int | str):
    assert parse_scene(value) == 2


@pytest.mark.parametrize('value', [0, 5, 's7', 'scene', 'two', '', True])
def test_parse_scene_rejects_others(value: int | str):
    with pytest.raises(UnknownSceneError):
        parse_scene(value)


@pytest.mark.parametrize('value', [3, '3', 'L3', 'l3'])
def test_parse_level_accepts_common_spellings(value: int | str):
    assert parse_level(value) == 3


@pytest.mark.parametrize('value', [4, -1, 'L4', 'train', ''])
def test_parse_level_rejects_others(value: int | str):
    with pytest.raises(UnknownLevelError):
        parse_level(value)


def test_filters_accept_names_and_patterns():
    assert eval_tasks(scene='s4', level='L1') == eval_tasks(scene=4, level=1)
    glob = eval_tasks(pattern='L1_s1*')
    assert [task.task_id for task in glob] == [task.task_id for task in eval_tasks(scene=1, level=1)]
    substring = eval_tasks(pattern='seq_')
    assert substring and all('seq_' in task.task_id for task in substring)
    assert {task.scene for task in substring} == {4}
    assert eval_tasks(pattern='definitely-not-an-id') == []
    assert [task.config for task in training_labels(scene=4)].count('scene4_2') == 7
    with pytest.raises(RegistryError):
        training_labels(config='scene5')
    with pytest.raises(UnknownLevelError):
        eval_tasks(level='L9')


def test_objects_are_specified_per_scene():
    assert scene_objects(1)['red_sphere'].size == (0.02,)
    assert scene_objects(4)['red_sphere'].size == (0.024,)
    assert scene_objects('s1')['red_sphere'].friction == 2.0
    s2 = scene_objects(2)
    assert s2['large_red_cylinder'].size == (0.03, 0.035) and s2['large_red_cylinder'].shape == 'cylinder'
    assert s2['green_bowl'].kind == 'bowl' and s2['yellow_bowl'].kind == 'bowl'
    assert s2['green_bowl'].size[0] < s2['yellow_bowl'].size[0]
    labels = [spec for spec in scene_objects(3).values() if spec.kind == 'label']
    assert len(labels) == 2 and all(spec.static and spec.size == (0.03475, 0.03475, 0.001) for spec in labels)
    assert scene_objects(4)['bowl'].static and scene_objects(4)['bowl'].kind == 'bowl'
    with pytest.raises(UnknownSceneError):
        scene_objects(5)


def test_bowls_fit_the_in_bowl_test():
    """Green (×0.6) is smaller than yellow (×0.8), both hold a 4 cm object inside the 0.04 m in-bowl radius."""
    green, yellow, s4 = scene_objects(2)['green_bowl'], scene_objects(2)['yellow_bowl'], scene_objects(4)['bowl']
    assert green.size[0] < yellow.size[0]
    for bowl in (green, yellow, s4):
        radius, height = bowl.size
        assert 0.04 <= radius <= 0.09 and 0.035 <= height <= 0.05


def test_scene2_bowls_do_not_touch_in_any_layout():
    green, yellow = scene_objects(2)['green_bowl'], scene_objects(2)['yellow_bowl']
    for name in layout_names(2):
        layout = get_layout(2, name)
        (gx, gy), (yx, yy) = layout.placement('green_bowl').xy, layout.placement('yellow_bowl').xy
        assert ((gx - yx) ** 2 + (gy - yy) ** 2) ** 0.5 > green.size[0] + yellow.size[0], name


def test_layout_lookup_by_scene_and_name_with_aliases():
    assert get_layout(1, 'default').scene == 1 and get_layout(2, 'default').scene == 2
    assert get_layout(4, 'scene4.1') is get_layout(4, 'scene4_1')
    assert get_layout(4, 'scene4.1').name == 'scene4_1'
    assert get_layout(4, 'scene4_5').name == 'scene4.5'
    assert get_layout('s2', 'scene2_5').name == 'scene2.5'
    with pytest.raises(UnknownLayoutError, match='scene1_1'):
        get_layout(1, 'scene1_9')
    with pytest.raises(UnknownLayoutError):
        get_layout(4, 'default')
    with pytest.raises(UnknownSceneError):
        get_layout(0, 'default')


def test_every_task_resolves_to_a_layout_holding_its_objects():
    for task in training_labels() + eval_tasks() + eval_tasks(variant='published'):
        layout = layout_of(task)
        assert layout.scene == task.scene
        truths = [task.truth]
        if task.conditional is not None:
            truths += [task.conditional.then_truth, task.conditional.else_truth]
            assert task.truth == task.conditional.resolved
        for truth in truths:
            for name in (truth.source, truth.target, truth.route_object, truth.then_source):
                if name is not None:
                    assert name in layout.object_names, (task.task_id, name)
            if truth.slot is not None:
                occupied = {placement.slot for placement in layout.placements}
                assert truth.slot not in occupied, task.task_id


def test_configs_are_the_six_training_configurations():
    assert {task.config for task in training_labels()} == set(TRAINING_CONFIGS)
    assert {task.config for task in eval_tasks()} <= set(TRAINING_CONFIGS)
    for task in eval_tasks(scene=4):
        assert task.config in ('scene4_1', 'scene4_2', 'scene4_3')


@pytest.mark.parametrize('variant', ['published', 'corrected'])
def test_route_references_in_the_default_layout(variant):
    assert route_references(get_task('L0_r_pick2_via4_to6_short_front', variant=variant)) == (
        'yellow_bar_4',
        'blue_bar_5',
    )
    assert route_references(get_task('L0_l_pick5_around2_to1_long_right', variant=variant)) == (
        'green_bar_3',
        'red_bar_2',
    )


def test_route_references_in_swapped_layouts_follow_the_variant():
    # In 3.3 red and yellow swap columns: green now shares the left column with yellow (corrected), while the
    # published scorer keeps the name pair red-green.
    around = 'L1_scene3_3__l_pick5_around3_to1_short_right'
    assert route_references(get_task(around, variant='corrected')) == ('yellow_bar_4', 'green_bar_3')
    assert route_references(get_task(around)) == ('red_bar_2', 'green_bar_3')
    via = 'L1_scene3_3__r_pick3_via5_to6_short_front'
    assert route_references(get_task(via, variant='corrected')) == ('blue_bar_5', 'red_bar_2')
    assert route_references(get_task(via)) == ('blue_bar_5', 'yellow_bar_4')
    with pytest.raises(RegistryError):
        route_references(get_task('L0_pickup_red_cylinder'))
