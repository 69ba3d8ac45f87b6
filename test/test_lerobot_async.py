"""``--policy lerobot-async`` (issue 31): a client of LeRobot's own async inference server (gRPC, pickled LeRobot
objects), tested against that server running in ``.venv-lerobot`` with a checkpoint trained here. Runs where
``.venv-lerobot`` has LeRobot with its ``async`` extra (``scripts/setup_lerobot.sh``)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from lerobot_checkpoint import lerobot_interpreter

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.factory import resolve_policy
from robofollow_ros.policy.interpreters import LEROBOT_PYTHON_ENV, package_root
from robofollow_ros.policy.isolation.sandbox import sandbox_problem

CLIENT = """
import json, sys
import numpy as np, torch
sys.path.insert(0, {root!r})
from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.lerobot_async import LeRobotAsyncPolicy
from robofollow_ros.policy.lerobot_policy import LeRobotPolicy
from robofollow_ros.policy.observation import Observation
rng = np.random.default_rng(0)
cameras = ('cam_high', 'cam_left_wrist', 'cam_right_wrist')
observation = Observation(images={{c: rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for c in cameras}},
                          state=rng.uniform(-1, 1, 14).astype(np.float32))
client = LeRobotAsyncPolicy({checkpoint!r}, policy_type='act', port={port}, actions_per_chunk=20,
                            image_size=(48, 64), timeout=60.0)
client.reset(); client.set_instruction('pick up the block')
chunk = client.predict(observation)
again = client.predict(observation)
local = LeRobotPolicy({checkpoint!r})
batch = local.preprocess(local.inputs(observation, instruction='pick up the block'))
with torch.inference_mode():
    own = local.policy.predict_action_chunk(batch)[0]
    own = torch.stack([local.postprocess(row[None]).reshape(-1) for row in own]).numpy()
print('predicted', flush=True)
sys.stdin.readline()  # the test stops the server here
try:
    client.predict(observation)
    lost = None
except PolicyError as error:
    lost = str(error)
print('lost', flush=True)
sys.stdin.readline()  # ... and starts it again
client.reset()
after = client.predict(observation)
print(json.dumps({{'shape': list(chunk.shape), 'difference': float(np.abs(chunk - own[: len(chunk)]).max()),
                  'repeat': float(np.abs(chunk - again).max()), 'lost': lost,
                  'after': float(np.abs(after - chunk).max())}}))
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return int(probe.getsockname()[1])


def read_until(process: subprocess.Popen[str], marker: str) -> bool:
    """Read ``process``'s output lines up to ``marker`` (LeRobot prints lines of its own); False at its end."""
    assert process.stdout is not None
    return any(line.strip() == marker for line in process.stdout)


def async_interpreter() -> str:
    python = lerobot_interpreter()
    found = subprocess.run([python, '-c', 'import grpc, lerobot.async_inference'], capture_output=True, check=False)
    if found.returncode != 0:
        pytest.skip(f'{python} has no lerobot[async] (grpcio): scripts/setup_lerobot.sh installs it')
    return python


@contextmanager
def policy_server(port: int) -> Iterator[subprocess.Popen[str]]:
    """LeRobot's own policy server on ``127.0.0.1:port``, ready when its port accepts."""
    command = [async_interpreter(), '-m', 'lerobot.async_inference.policy_server', '--host=127.0.0.1']
    command += [f'--port={port}', '--inference_latency=0', '--obs_queue_timeout=30']
    env = {**os.environ, 'HF_HUB_OFFLINE': '1'}
    folder = tempfile.mkdtemp(prefix='lerobot_server_')  # it writes logs/ into its working folder
    server = subprocess.Popen(
        command, env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, (server.stderr.read() if server.stderr else '')[-3000:]
            with socket.socket() as probe:
                if probe.connect_ex(('127.0.0.1', port)) == 0:
                    break
            assert time.monotonic() < deadline, 'LeRobot policy server never listened'
            time.sleep(0.2)
        yield server
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)


def test_the_client_gets_the_chunk_the_checkpoint_predicts_and_takes_a_restarted_server(checkpoint: Path) -> None:
    """The chunk from LeRobot's server equals the checkpoint's own ``predict_action_chunk`` on the same inputs; a
    server gone mid-run is a ``PolicyError`` naming the lost call, and after it is back the next episode runs."""
    python, port = async_interpreter(), free_port()
    script = CLIENT.format(root=str(package_root()), checkpoint=str(checkpoint), port=port)
    with policy_server(port):
        client = subprocess.Popen(
            [python, '-c', script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert client.stdout is not None and client.stdin is not None
        assert read_until(client, 'predicted'), client.communicate(timeout=60)[1][-3000:]
    client.stdin.write('\n')
    client.stdin.flush()
    assert read_until(client, 'lost'), client.communicate(timeout=60)[1][-3000:]
    with policy_server(port):
        output, errors = client.communicate('\n', timeout=300)
    assert client.returncode == 0, errors[-3000:]
    result = json.loads(output.strip().splitlines()[-1])
    assert result['shape'] == [20, 14]
    assert result['difference'] < 1e-5 and result['repeat'] < 1e-6 and result['after'] < 1e-6, result
    assert result['lost'].startswith(f'LeRobot policy server 127.0.0.1:{port}: ') and 'UNAVAILABLE' in result['lost']


def test_no_server_at_the_address_fails_at_construction_naming_it() -> None:
    python, port = async_interpreter(), free_port()
    script = f"""
import sys
sys.path.insert(0, {str(package_root())!r})
from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.lerobot_async import LeRobotAsyncPolicy
try:
    LeRobotAsyncPolicy('/nowhere', policy_type='act', port={port}, connect_retries=2, retry_interval=0.2)
except PolicyError as error:
    print(error)
"""
    done = subprocess.run([python, '-c', script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().startswith(f'no LeRobot policy server at 127.0.0.1:{port} after 2 attempts')


def test_the_backend_needs_the_policy_type_and_the_checkpoint() -> None:
    for kwargs in ({'policy_type': 'act'}, {'checkpoint': '/models/act'}):
        with pytest.raises(PolicyError, match=r"'lerobot-async' needs its checkpoint: .*policy_type"):
            resolve_policy('lerobot-async', kwargs=kwargs, python=sys.executable)


def test_robofollow_eval_reaches_the_server_from_the_sandbox_through_policy_network(
    checkpoint: Path, tmp_path: Path
) -> None:
    if sandbox_problem() is not None:
        pytest.skip(f'no sandbox here: {sandbox_problem()}')
    port = free_port()
    out = tmp_path / 'run'
    kwargs = {'policy_type': 'act', 'checkpoint': str(checkpoint), 'port': port, 'actions_per_chunk': 20}
    command = [sys.executable, '-m', 'robofollow_ros', 'eval', '--in-process', '--policy', 'lerobot-async']
    command += ['--policy-kwargs', json.dumps(kwargs), '--policy-network', f'127.0.0.1:{port}', '--level', 'L0']
    command += ['--tasks', 'pickup_yellow_block_1_left', '--out', str(out)]
    env = {**os.environ, 'MUJOCO_GL': os.environ.get('MUJOCO_GL', 'egl'), LEROBOT_PYTHON_ENV: async_interpreter()}
    with policy_server(port):
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = [json.loads(line) for line in (out / 'results.jsonl').read_text().splitlines()]
    assert record['policy'] == 'lerobot-async' and record['isolation'] == 'sandbox'
    assert record['policy_error'] is None and record['queries'] == 10
    assert record['executed_rows'] == 10 * 20
