"""The ``gr00t`` backend against a stand-in GR00T N1.6 server written from the documented wire (test/gr00t_stand_in.py,
real ZeroMQ on 127.0.0.1): every key arrives where the mapping puts it and the action groups come back as one chunk,
one episode or a batch of them; a checkpoint without a key this cell needs, a server that wants a token, one that
does not answer in time and one that is not there are each one line; an evaluation runs through it."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from gr00t_stand_in import GROUPS, HORIZON, StandIn, start

from robofollow_ros.errors import PolicyConnectionError, PolicyError
from robofollow_ros.policy.factory import BUILTIN_POLICIES
from robofollow_ros.policy.gr00t import Gr00tPolicy
from robofollow_ros.policy.gr00t_messages import Gr00tKeys
from robofollow_ros.policy.observation import CAMERAS


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[StandIn]:
    stand_in, thread = start(free_port(), **getattr(request, 'param', {}))
    yield stand_in
    stand_in.stop.set()
    thread.join(timeout=5)


def observation(value: float) -> SimpleNamespace:
    images = {camera: np.full((24, 32, 3), index * 40, dtype=np.uint8) for index, camera in enumerate(CAMERAS)}
    return SimpleNamespace(images=images, state=np.arange(14, dtype=np.float32) + value)


def expected_chunk(state: np.ndarray, index: int = 0) -> np.ndarray:
    steps = 0.01 * np.arange(1, HORIZON + 1)[:, None]
    return (np.asarray(state, dtype=np.float32)[None, :] + steps + 0.001 * index).astype(np.float32)


def test_gr00t_is_a_built_in_policy_client() -> None:
    assert BUILTIN_POLICIES['gr00t'] == 'robofollow_ros.policy.gr00t:Gr00tPolicy'


def test_one_observation_goes_out_by_key_and_the_action_groups_come_back_as_one_chunk(server: StandIn) -> None:
    policy = Gr00tPolicy(port=server.port)
    policy.reset()
    policy.set_instruction('pick up the red block')
    seen = observation(0.5)
    chunk = policy.predict(seen)
    policy.close()
    assert chunk.shape == (HORIZON, 14) and chunk.dtype == np.float32
    np.testing.assert_allclose(chunk, expected_chunk(seen.state), atol=1e-6)
    assert [r['endpoint'] for r in server.requests] == ['ping', 'get_modality_config', 'reset', 'get_action']
    sent = server.requests[-1]['data']['observation']
    assert sorted(sent['video']) == sorted(CAMERAS)
    assert all(v.shape == (1, 1, 24, 32, 3) and v.dtype == np.uint8 for v in sent['video'].values())
    assert int(sent['video']['cam_left_wrist'][0, 0, 0, 0, 0]) == 40
    assert {k: v.shape for k, v in sent['state'].items()} == {k: (1, 1, n) for k, n in GROUPS.items()}
    assert all(v.dtype == np.float32 for v in sent['state'].values())
    assert sent['language'] == {'task': [['pick up the red block']]}


def test_a_batch_of_episodes_is_one_request_and_one_chunk_each(server: StandIn) -> None:
    policy = Gr00tPolicy(port=server.port)
    batch = [observation(float(n)) for n in range(3)]
    chunks = policy.predict_batch(batch, ['a', 'b', 'c'])
    policy.close()
    assert len(chunks) == 3 and sum(r['endpoint'] == 'get_action' for r in server.requests) == 1
    for index, (seen, chunk) in enumerate(zip(batch, chunks, strict=True)):
        np.testing.assert_allclose(chunk, expected_chunk(seen.state, index), atol=1e-6)
    assert server.requests[-1]['data']['observation']['language'] == {'task': [['a'], ['b'], ['c']]}


@pytest.mark.parametrize('server', [{'video_keys': ('front', 'wrist_l', 'wrist_r')}], indirect=True)
def test_a_checkpoint_without_a_key_this_cell_needs_is_refused_naming_it_and_a_mapping_fits_it(
    server: StandIn,
) -> None:
    with pytest.raises(PolicyError, match=r"the GR00T checkpoint has no video key 'cam_high' .*front"):
        Gr00tPolicy(port=server.port)
    mapped = {'cam_high': 'front', 'cam_left_wrist': 'wrist_l', 'cam_right_wrist': 'wrist_r'}
    policy = Gr00tPolicy(port=server.port, video=mapped)
    policy.predict(observation(0.0))
    policy.close()
    assert sorted(server.requests[-1]['data']['observation']['video']) == ['front', 'wrist_l', 'wrist_r']


def test_a_mapping_that_leaves_action_columns_unset_is_refused() -> None:
    with pytest.raises(PolicyError, match=r'leave columns \[13\] of the 14-D action unset'):
        Gr00tKeys.from_options(action={'arms': [0, 13]})
    with pytest.raises(PolicyError, match='overlap'):
        Gr00tKeys.from_options(action={'a': [0, 8], 'b': [7, 14]})
    with pytest.raises(PolicyError, match='unknown cameras'):
        Gr00tKeys.from_options(video={'cam_low': 'x'})


@pytest.mark.parametrize('server', [{'token': 'sesame'}], indirect=True)
def test_a_server_that_wants_a_token_says_so(server: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv('GR00T_API_TOKEN', raising=False)
    with pytest.raises(PolicyError, match="GR00T server error on 'ping': Unauthorized"):
        Gr00tPolicy(port=server.port)
    monkeypatch.setenv('GR00T_API_TOKEN', 'sesame')
    Gr00tPolicy(port=server.port).close()  # (from the environment: not in the run's recorded arguments)


def test_a_slow_answer_times_out_and_the_next_request_goes_on_a_new_connection(server: StandIn) -> None:
    policy = Gr00tPolicy(port=server.port, timeout=0.3)
    server.delay = 0.8
    with pytest.raises(PolicyConnectionError, match=r"did not answer 'get_action' within 0\.3 s"):
        policy.predict(observation(0.0))
    server.delay = 0.0
    time.sleep(0.8)  # (the server answers one request at a time: the slow one first, to the closed socket)
    np.testing.assert_allclose(policy.predict(observation(1.0)), expected_chunk(observation(1.0).state), atol=1e-6)
    policy.close()


def test_no_server_fails_at_construction_in_one_line() -> None:
    with pytest.raises(PolicyConnectionError, match=r"GR00T server at tcp://127.0.0.1:\d+ did not answer 'ping'"):
        Gr00tPolicy(port=free_port(), timeout=0.3)


def test_an_evaluation_runs_through_the_gr00t_client(server: StandIn, tmp_path: Path) -> None:
    from robofollow_ros.evaluation.episode import EpisodeLimits
    from robofollow_ros.evaluation.options import SuiteOptions
    from robofollow_ros.evaluation.suite import run_suite

    options = SuiteOptions(
        out=tmp_path,
        policy='gr00t',
        policy_kwargs={'port': server.port},
        task_ids=['L0_s41_l_pick_red_sphere'],
        limits=EpisodeLimits(max_queries=2),
    )
    run_suite(options, progress=False)
    (record,) = [line for line in (tmp_path / 'results.jsonl').read_text().splitlines() if line.strip()]
    assert '"policy_error": null' in record and '"queries": 2' in record
    actions = [r for r in server.requests if r['endpoint'] == 'get_action']
    assert len(actions) == 2
    assert actions[0]['data']['observation']['language'] == {'task': [['Use your left arm to pick up the red sphere.']]}
