"""Every layout of every scene spawns, settles and then stays put with the arms at home (menagerie-style check)."""

from __future__ import annotations

import numpy as np
import pytest

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.types import TABLE_Z, Layout
from robofollow_ros.robot.specs import robot_names
from robofollow_ros.sim.env import CellEnv

pytestmark = pytest.mark.sim
HOLD_ROWS = 50
"""50 rows of 0.06 s: 3 simulated seconds."""
MAX_DRIFT = 0.001
SPAWN_TOLERANCE = 0.003

LAYOUTS = [(scene, name) for scene in (1, 2, 3, 4) for name in registry.layout_names(scene)]


@pytest.fixture(scope='module', params=robot_names())
def env(request: pytest.FixtureRequest) -> CellEnv:
    cell_env = CellEnv(render=False, robot=request.param)
    yield cell_env
    cell_env.close()


def _reset(env: CellEnv, scene: int, name: str, seed: int = 11) -> tuple[Layout, object]:
    layout = registry.get_layout(scene, name)
    task = registry.training_labels(scene=scene)[0]
    return layout, env.reset(task, seed=seed, layout=layout)


@pytest.mark.parametrize(('scene', 'name'), LAYOUTS)
def test_layout_stays_still_for_three_seconds_with_arms_home(env: CellEnv, scene: int, name: str) -> None:
    layout, start = _reset(env, scene, name)
    home = env.robot.home_state()
    end = env.execute(np.tile(home, (HOLD_ROWS, 1)))
    assert end.time == pytest.approx(HOLD_ROWS * 0.06)
    assert set(end.object_pos) == set(layout.object_names)
    for item in layout.object_names:
        assert np.all(np.isfinite(end.object_pos[item])), item
        drift = float(np.linalg.norm(end.object_pos[item] - start.object_pos[item]))
        assert drift <= MAX_DRIFT, f'{item} moved {drift * 1000:.2f} mm'
        assert end.object_pos[item][2] > TABLE_Z - 0.002, f'{item} sank into the table'
    data = env.data
    assert np.all(np.isfinite(data.qpos)) and np.all(np.isfinite(data.qvel))
    assert float(np.max(np.abs(data.qvel))) < 0.05
    assert np.abs(end.state - home).max() < 2e-3


@pytest.mark.parametrize(('scene', 'name'), LAYOUTS)
def test_items_settle_where_they_were_spawned(env: CellEnv, scene: int, name: str) -> None:
    layout, start = _reset(env, scene, name)
    spawn_xy = registry.perturbed_positions(layout, seed=11)
    for placement in layout.placements:
        offset = np.asarray(start.object_pos[placement.name][:2]) - np.asarray(spawn_xy[placement.name])
        assert float(np.linalg.norm(offset)) <= SPAWN_TOLERANCE, f'{placement.name} settled {offset} from its spawn'


@pytest.mark.parametrize(('scene', 'name'), [(4, 'scene4_1'), (4, 'scene4_3')])
def test_stacks_and_bowl_contents_rest_on_their_supports(env: CellEnv, scene: int, name: str) -> None:
    layout, start = _reset(env, scene, name)
    for placement in layout.placements:
        z = start.object_pos[placement.name][2]
        if placement.on is not None:
            support = layout.spec(placement.on)
            expected = start.object_pos[placement.on][2] + support.half_height + placement.spec.half_height
            assert z == pytest.approx(expected, abs=0.002), placement.name
        if placement.inside is not None:
            bowl = layout.spec(placement.inside)
            rim = start.object_pos[placement.inside][2] + bowl.size[1] / 2.0
            assert z + placement.spec.half_height >= rim + 0.012, 'in-bowl cube must stand 12 mm above the rim'
            assert z - placement.spec.half_height < rim, 'in-bowl cube must be inside the bowl'
