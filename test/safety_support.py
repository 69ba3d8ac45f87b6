"""Shared pieces of the safety tests: the ALOHA cell's URDF limits, a stand-in forward kinematics, states."""

from __future__ import annotations

import dataclasses

import numpy as np

from robofollow_ros.safety.command_filter import MeasuredState
from robofollow_ros.safety.limits import SafetyLimits, WorkspaceBox

ROW = 0.06
BOX = WorkspaceBox(lower=(-0.6, -0.1, 0.75), upper=(0.6, 0.5, 1.2))
LEFT_BASE = np.array([-0.3, 0.2, 0.9])
RIGHT_BASE = np.array([0.3, 0.2, 0.9])


def tcp(state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A stand-in FK: each TCP moves 0.1 m per radian of its arm's first three joints (home at the box centre)."""
    return LEFT_BASE + 0.1 * state[0:3], RIGHT_BASE + 0.1 * state[7:10]


def aloha_limits(**changes: object) -> SafetyLimits:
    """The ViperX cell's URDF limits with the test box, changed by ``changes``."""
    limits = SafetyLimits.for_robot('aloha', workspace=BOX)
    return dataclasses.replace(limits, **changes) if changes else limits


def home(age_s: float = 0.01) -> MeasuredState:
    """Both arms at zero joints, grippers half open, measured ``age_s`` ago."""
    positions = np.zeros(14)
    positions[[6, 13]] = 0.5
    return MeasuredState(positions=positions, age_s=age_s)
