"""Action-chunk validation, the hold policy and the policy factory."""

from types import SimpleNamespace

import numpy as np
import pytest

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.base import validate_chunk
from robofollow_ros.policy.factory import make_policy, parse_policy_kwargs
from robofollow_ros.policy.hold import HOLD_ROWS, HoldPolicy


def test_validate_chunk_casts_to_float32_and_truncates():
    chunk = np.arange(60 * 14, dtype=np.float64).reshape(60, 14)
    validated = validate_chunk(chunk, max_rows=50)
    assert validated.dtype == np.float32
    assert validated.shape == (50, 14)
    assert validated[49, 13] == chunk[49, 13]


def test_validate_chunk_accepts_one_row_as_a_two_dimensional_array_and_integers():
    assert validate_chunk([[0.5] * 14]).shape == (1, 14)
    assert validate_chunk(np.ones((2, 14), dtype=np.int64)).dtype == np.float32


@pytest.mark.parametrize(
    ('chunk', 'message'),
    [
        (np.zeros((3, 13)), 'shape'),
        (np.zeros((0, 14)), 'shape'),
        (np.zeros((2, 3, 14)), 'shape'),
        (np.zeros(14), r'shape \[T, 14\] with T >= 1, got \[14\]'),
        ([0.5] * 14, r'got \[14\]'),
        (np.ones((2, 14), dtype=bool), 'dtype bool'),
        (np.ones((2, 14), dtype=np.complex64), 'dtype complex64'),
        (np.array([[object()] * 14], dtype=object), 'dtype object'),
        ('not numbers', 'real numbers'),
    ],
)
def test_validate_chunk_rejects_bad_shapes(chunk, message):
    with pytest.raises(PolicyError, match=message):
        validate_chunk(chunk)


@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf])
def test_validate_chunk_names_the_first_non_finite_value(bad):
    chunk = np.zeros((4, 14))
    chunk[2, 7] = bad
    with pytest.raises(PolicyError, match='row 2, column 7'):
        validate_chunk(chunk)


def test_hold_policy_repeats_the_observed_state():
    state = np.linspace(-1.0, 1.0, 14)
    chunk = HoldPolicy().predict(SimpleNamespace(state=state))
    assert chunk.shape == (HOLD_ROWS, 14)
    np.testing.assert_allclose(chunk, np.tile(state, (HOLD_ROWS, 1)), rtol=1e-6)


def test_make_policy_builds_builtins_and_factories():
    assert isinstance(make_policy('hold'), HoldPolicy)
    assert isinstance(make_policy('robofollow_ros.policy.hold:HoldPolicy'), HoldPolicy)


@pytest.mark.parametrize(
    ('name', 'message'),
    [
        ('telepathy', 'unknown policy'),
        ('no_such_module_xyz:make', 'cannot import'),
        ('robofollow_ros.policy.hold:Missing', 'has no'),
    ],
)
def test_make_policy_reports_bad_names(name, message):
    with pytest.raises(PolicyError, match=message):
        make_policy(name)


def test_make_policy_reports_bad_keyword_arguments():
    with pytest.raises(PolicyError, match='cannot build'):
        make_policy('hold', kwargs={'speed': 3})


def test_policy_kwargs_must_be_a_json_object():
    assert parse_policy_kwargs('{"rows": 5}') == {'rows': 5}
    assert parse_policy_kwargs(None) == {}
    with pytest.raises(PolicyError, match='JSON object'):
        parse_policy_kwargs('[1, 2]')
    with pytest.raises(PolicyError, match='not valid JSON'):
        parse_policy_kwargs('{rows')
