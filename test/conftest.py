"""Golden referee tests run under every scoring variant unless marked ``@pytest.mark.variant(...)``.

A test module opts in with ``pytestmark = pytest.mark.usefixtures('scoring_variant')``; ``golden.episodes.score``
then scores under the variant of the current parameter.
"""

from __future__ import annotations

import pytest
from golden import episodes

from robofollow_ros.benchmark.constants import VARIANTS


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if 'scoring_variant' in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker('variant')
        metafunc.parametrize('scoring_variant', marker.args if marker else VARIANTS, indirect=True)


@pytest.fixture
def scoring_variant(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The variant this run of the test scores under."""
    monkeypatch.setattr(episodes, 'VARIANT', request.param)
    return request.param
