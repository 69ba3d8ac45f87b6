"""``serve-policy --batch``: concurrent episodes' queries answered by one ``predict_batch`` call, each episode getting
what its query alone gets, over both wires; a policy that cannot batch is refused in one line."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np
import pytest
from policy_doubles import BatchingAffine as Affine
from remote_support import ServedPolicyProcess, serving

from robofollow_ros.cli import main
from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.openpi import OpenpiPolicy
from robofollow_ros.policy.robotwin_tcp import RobotwinTcpPolicy
from robofollow_ros.policy.server.batching import BatchedPolicy
from robofollow_ros.policy.server.openpi_server import OpenpiServer
from robofollow_ros.policy.server.robotwin_tcp_server import RobotwinTcpServer
from robofollow_ros.state_layout import CAMERAS

EPISODES = 6


def episode_observation(episode: int, step: int) -> SimpleNamespace:
    images = {camera: np.full((240, 320, 3), 10 * episode + step, dtype=np.uint8) for camera in CAMERAS}
    state = np.linspace(-1.0, 1.0, 14, dtype=np.float32) * (episode + 1) + 0.001 * step
    return SimpleNamespace(images=images, state=state)


def instruction_of(episode: int) -> str:
    return 'pick up the block' + ' now' * episode


def run_episodes(make_client, steps: int) -> dict[int, list[np.ndarray]]:
    """EPISODES clients at once, each its own episode (its instruction, its observations), all started together."""
    chunks: dict[int, list[np.ndarray]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(EPISODES)

    def episode(number: int) -> None:
        client = make_client()
        try:
            client.reset()
            client.set_instruction(instruction_of(number))
            start.wait(timeout=30)
            chunks[number] = [client.predict(episode_observation(number, step)) for step in range(steps)]
        except BaseException as error:
            errors.append(error)
        finally:
            client.close()

    threads = [threading.Thread(target=episode, args=(n,)) for n in range(EPISODES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return chunks


@pytest.mark.parametrize('wire', ['openpi', 'robotwin-tcp'])
def test_concurrent_episodes_get_what_their_queries_alone_get_in_fewer_calls(wire: str) -> None:
    policy = Affine()
    served = BatchedPolicy(policy, name='affine', max_batch=4, window=0.05)
    server_class = OpenpiServer if wire == 'openpi' else RobotwinTcpServer
    with serving(server_class(served, port=0)) as server:
        if wire == 'openpi':

            def client():
                return OpenpiPolicy('127.0.0.1', server.port, connect_retries=3, image_size=320)

        else:

            def client():
                return RobotwinTcpPolicy('127.0.0.1', server.port, connect_retries=3)

        chunks = run_episodes(client, steps=3)
    served.close()
    alone = Affine()
    for number in range(EPISODES):
        alone.set_instruction(instruction_of(number))
        for step, chunk in enumerate(chunks[number]):
            expected = alone.predict(episode_observation(number, step))
            np.testing.assert_array_equal(chunk, expected, err_msg=f'episode {number} step {step}')
    assert sum(policy.batches) == EPISODES * 3
    assert max(policy.batches) > 1, policy.batches
    assert max(policy.batches) <= 4
    assert served.batch_sizes == {size: policy.batches.count(size) for size in set(policy.batches)}


def test_a_failing_batch_fails_each_of_its_queries_and_the_front_goes_on() -> None:
    policy = Affine(fail_above=50.0)
    served = BatchedPolicy(policy, name='affine', max_batch=8, window=0.0)
    session = served.session()
    try:
        bad = episode_observation(0, 0)
        bad.state[0] = 99.0
        with pytest.raises(RuntimeError, match='the batch exploded'):
            session.predict(bad.images, bad.state, 'go')
        good = episode_observation(1, 0)
        np.testing.assert_array_equal(session.predict(good.images, good.state, 'go'), Affine.chunk(good, 'go'))
    finally:
        served.close()
    with pytest.raises(PolicyError, match='the server is closing'):
        session.predict(good.images, good.state, 'go')


def test_one_bad_query_in_a_batch_fails_alone_and_its_neighbours_get_their_chunks() -> None:
    policy = Affine(fail_above=50.0)
    served = BatchedPolicy(policy, name='affine', max_batch=3, window=30.0)  # the batch goes when all three are in
    observations = [episode_observation(number, 0) for number in range(3)]
    observations[1].state[0] = 99.0
    outcomes: dict[int, object] = {}

    def query(number: int) -> None:
        try:
            observation = observations[number]
            outcomes[number] = served.session().predict(observation.images, observation.state, 'go')
        except Exception as error:
            outcomes[number] = error

    threads = [threading.Thread(target=query, args=(number,)) for number in range(3)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        served.close()
    assert policy.batches[0] == 3 and served.split_batches == 1, policy.batches
    assert isinstance(outcomes[1], RuntimeError) and 'the batch exploded' in str(outcomes[1])
    for number in (0, 2):
        np.testing.assert_array_equal(outcomes[number], Affine.chunk(observations[number], 'go'))


def test_a_policy_without_predict_batch_is_refused_in_one_line(capsys) -> None:
    with pytest.raises(PolicyError, match=r'^hold has no predict_batch\(observations, instructions\)'):
        BatchedPolicy(SimpleNamespace(), name='hold', max_batch=2)
    assert main(['serve-policy', '--policy', 'hold', '--batch', '4', '--port', '0']) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and 'hold has no predict_batch' in error, error
    assert main(['serve-policy', '--policy', 'hold', '--batch', '0']) == 2
    assert capsys.readouterr().err.strip().endswith('--batch must be at least 1')


def test_serve_policy_batches_from_the_command_line() -> None:
    with ServedPolicyProcess(
        '--policy',
        'policy_doubles:BatchingAffine',
        '--protocol',
        'robotwin-tcp',
        '--batch',
        '4',
        '--batch-window-ms',
        '50',
    ) as server:
        assert 'in batches of up to 4 within 50 ms over robotwin-tcp' in server.announcement
        chunks = run_episodes(lambda: RobotwinTcpPolicy('127.0.0.1', server.port, connect_retries=3), steps=2)
    alone = Affine()
    for number in range(EPISODES):
        alone.set_instruction(instruction_of(number))
        np.testing.assert_array_equal(chunks[number][1], alone.predict(episode_observation(number, 1)))
