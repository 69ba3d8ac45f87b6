"""The safety filter with the ALOHA cell's own forward kinematics (MuJoCo's TCP site) as its ``tcp`` function: a
chunk that lowers the left TCP through the table is cut at the first row below the workspace floor, and every row
sent keeps both TCPs inside the box."""

from __future__ import annotations

import numpy as np
import pytest
from safety_support import ROW

from robofollow_ros.robot.description import load_robot
from robofollow_ros.safety.command_filter import MeasuredState, filter_chunk
from robofollow_ros.safety.limits import SafetyLimits, WorkspaceBox

pytestmark = pytest.mark.sim

FLOOR = 0.76
"""2 cm above the table top (z = 0.74)."""


def test_a_chunk_reaching_into_the_table_is_cut_where_the_tcp_leaves_the_box():
    from robofollow_ros.sim.kinematics import Kinematics
    from robofollow_ros.sim.model import CellModel

    kinematics = Kinematics(CellModel.build([], robot=load_robot('aloha')))

    def tcp(state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return kinematics.fk('left', state[0:6])[0], kinematics.fk('right', state[7:13])[0]

    box = WorkspaceBox(lower=(-0.7, -0.5, FLOOR), upper=(0.7, 0.6, 1.3))
    limits = SafetyLimits.for_robot('aloha', workspace=box)
    home = load_robot('aloha').home_state()
    start = kinematics.fk('left', home[0:6])[0]
    below = kinematics.solve('left', start + np.array([0.0, 0.05, 0.70 - start[2]]), yaw=0.0).q
    chunk = np.tile(home, (40, 1))
    chunk[:, 0:6] = home[0:6] + np.linspace(0.0, 1.0, 41)[1:, None] * (below - home[0:6])
    heights = np.array([tcp(row)[0][2] for row in chunk])
    first_below = int(np.argmax(heights < FLOOR))
    assert 0 < first_below < 40, heights

    decision = filter_chunk(chunk, state=MeasuredState(home, 0.01), limits=limits, row_period_s=ROW, tcp=tcp)

    assert decision.rows_sent == first_below
    outside = [item for item in decision.interventions if item.kind == 'outside_workspace']
    assert [(item.row, item.joint, item.limit) for item in outside] == [(first_below, 'left_tcp_z', FLOOR)]
    assert outside[0].value == pytest.approx(heights[first_below])
    for row in decision.command.positions:
        left, right = tcp(row)
        assert box.contains(left) and box.contains(right)
