"""Gripper events (protocol §4.2) and gating (protocol §4.7) on hand-written sample sequences."""

from __future__ import annotations

import numpy as np
import pytest

from robofollow_ros.referee.events import close_event, close_starts, first_close_arm, gripper_events, open_event
from robofollow_ros.referee.gating import apply_gates
from robofollow_ros.referee.stage import StageOutcome


def g(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=float)


@pytest.mark.parametrize(
    ('grip', 'expected'),
    [
        (g(1.0, 0.9, 0.35, 0.0), 2),  # first transition prev > 0.35 >= cur
        (g(1.0, 0.36, 0.34), 2),
        (g(0.2, 0.8, 0.3), 2),  # a transition wins over the closed start
        (g(0.2, 0.2, 0.8), 0),  # no transition: first sample <= 0.35
        (g(1.0, 0.5, 0.4), None),
    ],
)
def test_close_event(grip, expected):
    assert close_event(grip, 0.35) == expected


def test_close_starts_include_a_closed_start():
    assert close_starts(g(0.2, 0.8, 0.3, 0.9, 0.1), 0.35).tolist() == [0, 2, 4]
    assert close_starts(g(1.0, 0.3), 0.35).tolist() == [1]


@pytest.mark.parametrize(
    ('grip', 'after', 'expected'),
    [
        (g(0.0, 0.0, 0.8, 0.9), 0, 2),  # rising transition
        (g(0.0, 0.8, 0.0, 0.9), 1, 3),  # search starts at after + 1 = 2
        (g(0.9, 0.9, 0.9), 0, 1),  # no rising transition: first sample >= 0.7 from the start
        (g(0.0, 0.0, 0.9), 5, 2),  # start clipped to n - 1 = 2
        (g(0.0, 0.0, 0.5), 0, None),
        (g(0.69, 0.7), 0, 1),  # 0.69 < 0.7 <= 0.7
    ],
)
def test_open_event(grip, after, expected):
    assert open_event(grip, after, 0.7) == expected


@pytest.mark.parametrize(
    ('expected_close', 'other_close', 'first'),
    [(3, None, 'left'), (3, 3, 'left'), (3, 2, 'right'), (None, 2, 'right'), (None, None, None)],
)
def test_first_close_arm(expected_close, other_close, first):
    assert first_close_arm('left', expected_close, other_close) == first


def test_wrong_arm_flag():
    open_ = g(1.0, 1.0, 1.0, 1.0)
    closing = g(1.0, 1.0, 0.0, 0.0)
    late = g(1.0, 1.0, 1.0, 0.0)
    assert not gripper_events(
        {'left': closing, 'right': open_}, 'left', close_threshold=0.35, open_threshold=0.7
    ).wrong_arm
    assert gripper_events({'left': closing, 'right': late}, 'left', close_threshold=0.35, open_threshold=0.7).wrong_arm
    # neither arm closes: first_close_arm is None != designated → flag set (nothing is scored anyway)
    assert gripper_events({'left': open_, 'right': open_}, 'left', close_threshold=0.35, open_threshold=0.7).wrong_arm


def stages(*flags: tuple[bool, bool], maxima=(0.4, 0.4, 0.2)) -> list[StageOutcome]:
    return [
        StageOutcome(f's{i}', m, i_ok, e_ok, 'r', 'r')
        for i, ((i_ok, e_ok), m) in enumerate(zip(flags, maxima, strict=True))
    ]


@pytest.mark.parametrize(
    ('raw', 'expected'),
    [
        (((True, True), (True, True), (True, True)), [(0.4, 0.4), (0.4, 0.4), (0.2, 0.2)]),
        (((False, False), (True, True), (True, True)), [(0, 0), (0, 0), (0, 0)]),
        (((True, False), (True, True), (True, True)), [(0.4, 0), (0.4, 0), (0.2, 0)]),  # E2, E3 need E1
        (((True, True), (True, False), (True, True)), [(0.4, 0.4), (0.4, 0), (0.2, 0)]),  # E3 needs E2
        (((True, True), (False, False), (True, True)), [(0.4, 0.4), (0, 0), (0, 0)]),  # I3 needs I2
        (((True, True), (True, True), (False, True)), [(0.4, 0.4), (0.4, 0.4), (0, 0)]),  # E3 needs I3
    ],
)
def test_chain_gating(raw, expected):
    gated = apply_gates(stages(*raw), 'chain')
    assert [(s.intent, s.exec) for s in gated] == expected


def test_pickup_and_sequence_gating():
    pickup = apply_gates(stages((True, False), (True, True), maxima=(0.8, 0.2)), 'pickup')
    assert [(s.intent, s.exec) for s in pickup] == [(0.8, 0.0), (0.2, 0.0)]
    assert pickup[1].exec_reason.startswith('gated: s0 Execution not full')
    sequence = apply_gates(stages((True, False), (True, True), (True, True)), 'sequence')
    # B's Execution is not gated by A's Execution; the finish still is
    assert [(s.intent, s.exec) for s in sequence] == [(0.4, 0.0), (0.4, 0.4), (0.2, 0.0)]
