"""Every instruction names what its ground truth uses, read by a small interpreter written here.

The interpreters below re-read each instruction from its words and the layout's nominal positions
(independently of the registry's own grounding code) and check the registry's ground truth.
"""

from __future__ import annotations

import re

import pytest

from robofollow_ros.benchmark import (
    FLAG_AMBIGUOUS,
    FLAG_COMPLEMENTARY_ROUTE,
    FLAG_LITERAL_DIFFERS,
    eval_tasks,
    get_layout,
    get_task,
    layout_of,
    training_labels,
)
from robofollow_ros.benchmark.types import Layout, Task

CONFIG_LAYOUT = {
    'scene1': (1, 'default'),
    'scene2': (2, 'default'),
    'scene3': (3, 'default'),
    'scene4_1': (4, 'scene4_1'),
    'scene4_2': (4, 'scene4_2'),
    'scene4_3': (4, 'scene4_3'),
}

S1_ANCHORS = {'red ball': 'red_sphere', 'green ball': 'green_sphere', 'red cylinder': 'red_cylinder'}
S1_RELATIONS = {
    'behind': ('behind', (0.0, 0.14)),
    'in front of': ('in_front', (0.0, -0.14)),
    'to the left of': ('left_of', (-0.12, 0.0)),
    'to the right of': ('right_of', (0.12, 0.0)),
}
_S1_PHRASE = r'(behind|in front of|to the left of|to the right of) the (red ball|green ball|red cylinder)'


def _all_tasks() -> list[Task]:
    return training_labels() + eval_tasks()


def _at(layout: Layout, xy: tuple[float, float]) -> str | None:
    for placement in layout.placements:
        if abs(placement.xy[0] - xy[0]) < 1e-6 and abs(placement.xy[1] - xy[1]) < 1e-6:
            return placement.name
    return None


def _s1_block(layout: Layout, relation_words: str, anchor_words: str) -> str | None:
    ax, ay = layout.placement(S1_ANCHORS[anchor_words]).xy
    dx, dy = S1_RELATIONS[relation_words][1]
    return _at(layout, (ax + dx, ay + dy))


@pytest.mark.parametrize('task', [t for t in _all_tasks() if t.scene == 1], ids=lambda t: t.task_id)
def test_scene1_instruction_names_block_and_anchor(task: Task):
    layout = layout_of(task)
    match = re.fullmatch(
        rf'Use your (left|right) arm to pick up the block {_S1_PHRASE}(?: and place it {_S1_PHRASE})?\.',
        task.instruction,
    )
    assert match, task.instruction
    arm, ref_relation, ref_anchor, place_relation, place_anchor = match.groups()
    assert arm == task.arm
    block = _s1_block(layout, ref_relation, ref_anchor)
    assert block is not None and block.startswith('yellow_block') and block == task.truth.source
    if place_relation is None:
        assert task.truth.action == 'pickup' and task.truth.target is None
    else:
        assert task.truth.action == 'place_relative'
        assert task.truth.relation == S1_RELATIONS[place_relation][0]
        assert task.truth.target == S1_ANCHORS[place_anchor]


S2_TEMPLATES = {
    'pickup': r'Use your (left|right) arm to pick up the ([a-z ]+)\.',
    'stack': r'Use your (left|right) arm to stack the ([a-z ]+) onto the ([a-z ]+)\.',
    'push': r'Use your (left|right) arm to push the ([a-z ]+) towards the ([a-z ]+)\.',
    'place_bowl': r'Use your (left|right) arm to pick up the ([a-z ]+) and place it in the ([a-z ]+)\.',
}


def _s2_candidates(layout: Layout, phrase: str) -> list[str]:
    """Objects of a Scene 2 layout a phrase can mean: words are read off the object names."""
    words = phrase.split()
    noun = words[-1]
    names = [p.name for p in layout.placements]
    if noun == 'bowl':
        names = [n for n in names if n.endswith('bowl')]
    else:
        names = [n for n in names if not n.endswith('bowl')]
        if noun != 'object':
            names = [n for n in names if n.endswith(noun)]
    for word in words[:-1]:
        if word in ('red', 'blue', 'green', 'yellow'):
            names = [n for n in names if word in n.split('_')]
        elif word in ('larger', 'smaller'):
            names = [n for n in names if n.startswith('large' if word == 'larger' else 'small')]
        elif word in ('left', 'leftmost', 'right', 'rightmost'):
            xs = {n: layout.placement(n).xy[0] for n in names}
            best = min(xs.values()) if word.startswith('left') else max(xs.values())
            names = [n for n in names if abs(xs[n] - best) < 0.02]
    return names


@pytest.mark.parametrize('variant', ['corrected', 'published'])
def test_scene2_instructions_resolve_to_ground_truth(variant: str):
    ambiguous = differing = 0
    for task in training_labels(scene=2) + eval_tasks(scene=2, variant=variant):
        layout = layout_of(task)
        match = re.fullmatch(S2_TEMPLATES[task.truth.action], task.instruction)
        assert match, task.instruction
        assert match[1] == task.arm
        meant = [task.truth.source] + ([task.truth.target] if task.truth.target else [])
        candidates = [_s2_candidates(layout, phrase) for phrase in match.groups()[1:]]
        assert len(candidates) == len(meant)
        if any(len(c) != 1 for c in candidates):
            ambiguous += 1
            assert FLAG_AMBIGUOUS in task.flags, task.task_id
            assert all(m in c for m, c in zip(meant, candidates, strict=True))
            continue
        literal = [c[0] for c in candidates]
        if variant == 'corrected' or FLAG_LITERAL_DIFFERS not in task.flags:
            assert literal == meant, task.task_id
        else:
            differing += 1
            assert literal != meant
    assert ambiguous == 4
    assert differing == (8 if variant == 'published' else 0)


def test_scene2_corrected_and_published_disagree_exactly_on_flagged_tasks():
    for literal in eval_tasks(scene=2, variant='corrected'):
        published = get_task(literal.task_id, variant='published')
        assert literal.instruction == published.instruction
        assert (literal.truth != published.truth) == (FLAG_LITERAL_DIFFERS in literal.flags)
    flagged = [t.task_id for t in eval_tasks(scene=2, variant='corrected') if FLAG_LITERAL_DIFFERS in t.flags]
    assert len(flagged) == 8 and all(re.match(r'L3_scene2_[56]_0[1-4]_place_', t) for t in flagged)
    task_id = 'L3_scene2_5_01_place_right_cube_in_green_bowl_rightmost_cube_to_green_bowl'
    literal = get_task(task_id, variant='corrected')
    assert 'left bowl' in literal.instruction
    assert literal.truth.target == 'yellow_bowl'
    assert (
        get_layout(2, 'scene2.5').placement('yellow_bowl').xy[0]
        < get_layout(2, 'scene2.5').placement('green_bowl').xy[0]
    )


def _s3_colour(name: str) -> str:
    return name.split('_')[0]


S3_NAME_PAIRS = {'red': 'green', 'green': 'red', 'yellow': 'blue', 'blue': 'yellow'}


def _s3_partner(layout: Layout, slab: str, variant: str) -> str:
    """Published: the name pair (red-green, yellow-blue); corrected: the other slab in the column of the layout."""
    if variant == 'published':
        return next(name for name in layout.object_names if name.startswith(S3_NAME_PAIRS[_s3_colour(slab)] + '_bar'))
    x = layout.placement(slab).xy[0]
    (other,) = [p.name for p in layout.placements if '_bar_' in p.name and p.name != slab and p.xy[0] == x]
    return other


S3_EQUIVALENT = {'short_front': 'long_right', 'long_front': 'short_right'}
S3_EQUIVALENT |= {value: key for key, value in S3_EQUIVALENT.items()}


S3_TASKS = [
    (variant, task)
    for variant in ('published', 'corrected')
    for task in training_labels(scene=3) + eval_tasks(scene=3, variant=variant)
]


@pytest.mark.parametrize(('variant', 'task'), S3_TASKS, ids=lambda v: v if isinstance(v, str) else v.task_id)
def test_scene3_instruction_names_source_route_and_label(variant: str, task: Task):
    layout, truth, text = layout_of(task), task.truth, task.instruction
    assert f'the {_s3_colour(truth.source)} slab' in text
    assert f'the {_s3_colour(truth.target)} square label' in text
    assert f'{task.arm} arm' in text
    slabs = set(re.findall(r'the (red|green|yellow|blue) slab', text))
    named = ({_s3_colour(truth.source)} | slabs) - {_s3_colour(truth.source)}
    assert len(named) == 1, text
    (route_colour,) = named
    side, facing = re.search(r'(short|long) (?:side|face) (?:facing|pointing to the) (front|right)', text).groups()
    mode = f'{side}_{facing}'
    if FLAG_COMPLEMENTARY_ROUTE in task.flags:
        assert route_colour == _s3_colour(_s3_partner(layout, truth.route_object, variant))
        assert mode == S3_EQUIVALENT[truth.place_mode]
        over = 'pass over' in text or 'move above' in text
        assert over == (truth.route == 'around')
    else:
        assert route_colour == _s3_colour(truth.route_object)
        assert mode == truth.place_mode
        assert ('pass over' in text) == (truth.route == 'via')


S4_SHAPES = {'ball': 'sphere', 'sphere': 'sphere', 'cube': 'box', 'cylinder': 'cylinder'}


def _s4_consistent(layout: Layout, phrase: str, name: str) -> bool:
    """Whether a Scene 4 reference phrase fits object ``name`` (colour, negated colour, shape, support)."""
    spec = layout.spec(name)
    colour = name.split('_')[0]
    negated_shape = re.search(r'not an? (\w+)', phrase)
    if negated_shape and S4_SHAPES.get(negated_shape[1]) == spec.shape:
        return False
    words = re.sub(r'not an? \w+', '', phrase).split()
    shape_words = [word for word in words if word in S4_SHAPES]
    if shape_words and S4_SHAPES[shape_words[0]] != spec.shape:
        return False
    negated = re.search(r'not (red|blue|green|yellow)\b', phrase)
    if negated and negated[1] == colour:
        return False
    plain = re.match(r'the (red|blue|green|yellow) ', phrase)
    if plain and plain[1] != colour:
        return False
    placement = layout.placement(name)
    resting = placement.on is not None or placement.inside is not None
    if 'not touching the table' in phrase and not resting:
        return False
    return not ('inside the bowl' in phrase and placement.inside != 'bowl')


def _s4_clauses(text: str) -> list[tuple[str, str]]:
    return re.findall(r'your (left|right) arm to (?:pick up|place|move) (the [a-z ]+?)(?= on | to |[,;.])', text)


@pytest.mark.parametrize('task', [t for t in _all_tasks() if t.scene == 4], ids=lambda t: t.task_id)
def test_scene4_instruction_names_what_the_truth_uses(task: Task):
    layout, truth, text = layout_of(task), task.truth, task.instruction
    assert task.reference in text
    clauses = _s4_clauses(text)
    if task.conditional is not None:
        assert text.startswith('If ') and len(clauses) == 2
        branch = clauses[0] if task.conditional.holds else clauses[1]
        assert branch[0] == truth.arm
        assert _s4_consistent(layout, branch[1], truth.source), (branch, truth)
        other = task.conditional.else_truth if task.conditional.holds else task.conditional.then_truth
        assert (clauses[1] if task.conditional.holds else clauses[0])[0] == other.arm
    elif truth.action == 'sequence_pickups':
        assert text.startswith('First ') and len(clauses) == 2
        assert [arm for arm, _ in clauses] == [truth.arm, truth.then_arm]
        assert _s4_consistent(layout, clauses[0][1], truth.source)
        assert _s4_consistent(layout, clauses[1][1], truth.then_source)
    else:
        assert len(clauses) == 1 and clauses[0][0] == truth.arm
        assert _s4_consistent(layout, clauses[0][1], truth.source)
    if truth.action == 'unstack_to_slot':
        neighbour = re.search(r'empty spot to the right of the (\w+) (\w+)', text).groups()
        slot_x = [p for p in layout.placements if p.slot == truth.slot - 1]
        assert len(slot_x) == 1 and slot_x[0].name.startswith(neighbour[0])
    if truth.action == 'stack_on_target':
        assert re.search(r' on (the [a-z ]+?)[;.]', text)


def _layout_key(task: Task) -> tuple[int, str]:
    return task.scene, layout_of(task).name


def test_l1_layouts_differ_from_their_training_layout():
    for task in eval_tasks(level=1) + eval_tasks(level=3):
        training = get_layout(*CONFIG_LAYOUT[task.config])
        layout = layout_of(task)
        assert layout.name != training.name
        placements = {(p.name, p.xy, p.on, p.inside) for p in layout.placements}
        assert placements != {(p.name, p.xy, p.on, p.inside) for p in training.placements}, task.task_id
    for task in eval_tasks(level=0) + eval_tasks(level=2):
        assert layout_of(task).name == get_layout(*CONFIG_LAYOUT[task.config]).name


def test_no_evaluation_instruction_is_a_training_paraphrase_with_another_truth_in_the_same_layout():
    trained: dict[tuple[tuple[int, str], str], object] = {}
    for label in training_labels():
        for paraphrase in label.paraphrases:
            trained[(_layout_key(label), paraphrase)] = label.truth
    for task in eval_tasks():
        key = (_layout_key(task), task.instruction)
        if key in trained:
            assert trained[key] == task.truth, task.task_id


def test_l0_and_l1_reuse_trained_wording_and_l2_l3_never_do():
    paraphrases = {p for label in training_labels() for p in label.paraphrases}
    for task in eval_tasks(level=0) + eval_tasks(level=1):
        text = task.instruction
        if task.scene == 4 and text not in paraphrases:
            condition, first, second = re.fullmatch(
                r'If (.+?), use your (.+); otherwise use your (.+)\.', text
            ).groups()
            text = f'If {condition}, use your {second}; otherwise use your {first}.'
        assert text in paraphrases, task.task_id
    for task in eval_tasks(level=2) + eval_tasks(level=3):
        assert task.instruction not in paraphrases, task.task_id


def test_l0_tasks_are_the_training_labels():
    for task in eval_tasks(level=0):
        label = get_task(task.task_id.removeprefix('L0_'))
        assert (task.instruction, task.truth, task.layout) == (label.paraphrases[0], label.truth, label.layout)


def test_l1_scene1_trained_phrase_now_names_another_block():
    for task in eval_tasks(scene=1, level=1):
        label = get_task(task.label)
        assert label.reference == task.reference
        assert label.truth.source != task.truth.source
