"""Golden referee tests run under every scoring variant unless marked ``@pytest.mark.variant(...)``; no ROS graph
a test started outlives it; under pytest-xdist a module runs whole on one worker.

A test module opts in with ``pytestmark = pytest.mark.usefixtures('scoring_variant')``; ``golden.episodes.score``
then scores under the variant of the current parameter.
"""

from __future__ import annotations

import subprocess

import graph_helpers
import pytest
from golden import episodes
from lerobot_checkpoint import checkpoint  # noqa: F401  (a session fixture: one LeRobot training per run)

from robofollow_ros.benchmark.constants import VARIANTS
from robofollow_ros.sim.gl import choose_gl_backend

choose_gl_backend()  # tests render in-process: before any test module imports MuJoCo

SHARED_GROUPS = {'test_collect_workers.py': 'ray', 'test_eval_ray.py': 'ray', 'test_eval_ray_start.py': 'ray'}
"""Modules that must not run beside each other on two xdist workers: each starts a local Ray instance."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With pytest-xdist's ``--dist loadgroup`` (``scripts/test.sh``) a module runs whole on one worker, its module
    fixtures built once, and the modules of one ``SHARED_GROUPS`` group run on the same worker, one after another."""
    for item in items:
        name = item.path.name
        item.add_marker(pytest.mark.xdist_group(SHARED_GROUPS.get(name, name)))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if 'scoring_variant' in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker('variant')
        metafunc.parametrize('scoring_variant', marker.args if marker else VARIANTS, indirect=True)


@pytest.fixture
def scoring_variant(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The variant this run of the test scores under."""
    monkeypatch.setattr(episodes, 'VARIANT', request.param)
    return request.param


@pytest.fixture(autouse=True)
def no_graph_outlives_its_test():
    """Stop any launcher a failed test left running, so its nodes cannot disturb later tests in that domain."""
    yield
    graph_helpers.stop_leftovers()


@pytest.fixture
def live_pid():
    """The id of a running process that is not this one."""
    process = subprocess.Popen(['sleep', '600'])
    yield process.pid
    process.kill()
    process.wait()
