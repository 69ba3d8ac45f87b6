"""Our openpi server against the REAL openpi-client (in its own numpy<2 venv, run as a subprocess)."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest

from robofollow_ros.policy import openpi_codec
from robofollow_ros.policy.openpi_images import resize_with_pad
from robofollow_ros.policy.server.openpi_server import OpenpiServer
from robofollow_ros.policy.server.served import ServedPolicy

ROOT = Path(__file__).resolve().parents[1]
VENV_PYTHON = ROOT / '.venv-openpi' / 'bin' / 'python'

CLIENT_SCRIPT = r"""
import json, sys
import numpy as np
from openpi_client import image_tools, msgpack_numpy
from openpi_client.websocket_client_policy import WebsocketClientPolicy

port, out = int(sys.argv[1]), sys.argv[2]
y, x = np.mgrid[0:240, 0:320]
frames = {
    name: np.stack([(x * 255 // 320 + k * 40) % 256, y * 255 // 240, (x + y) % 256], -1).astype(np.uint8)
    for k, name in enumerate(('cam_high', 'cam_left_wrist', 'cam_right_wrist'))
}
images = {
    name: image_tools.convert_to_uint8(image_tools.resize_with_pad(frame, 224, 224)).transpose(2, 0, 1)
    for name, frame in frames.items()
}
obs = {'images': images, 'state': np.linspace(-1, 1, 14).astype(np.float32), 'prompt': 'stack the blocks'}
client = WebsocketClientPolicy(host='127.0.0.1', port=port)
result = client.infer(obs)
errors = []
for bad in ({'images': {'cam_left_wrist': images['cam_left_wrist']}, 'state': obs['state'], 'prompt': 'x'},
            {'state': obs['state']}):
    try:
        client.infer(bad)
    except RuntimeError as error:
        errors.append(str(error))
again = client.infer(obs)
np.save(out + '/frames.npy', np.stack([frames[n] for n in sorted(frames)]))
np.save(out + '/padded.npy', np.stack([images[n] for n in sorted(images)]))
open(out + '/request.msgpack', 'wb').write(msgpack_numpy.packb(obs))
json.dump({
    'metadata': client.get_server_metadata(),
    'actions': result['actions'].tolist(),
    'dtype': result['actions'].dtype.str,
    'server_timing': sorted(result['server_timing']),
    'errors': errors,
    'again': again['actions'].tolist(),
    'numpy': np.__version__,
}, open(out + '/result.json', 'w'))
"""


class RecordingPolicy:
    """Remembers what it was given; answers with the state moved by a per-row offset."""

    def __init__(self) -> None:
        self.seen = []
        self.instructions = []
        self.resets = 0

    def reset(self) -> None:
        self.resets += 1

    def set_instruction(self, text: str) -> None:
        self.instructions.append(text)

    def predict(self, observation):
        self.seen.append(observation)
        return observation.state[None, :] + np.arange(50, dtype=np.float32)[:, None] * 0.01


@pytest.fixture(scope='module')
def openpi_python() -> Path:
    setup = subprocess.run(
        ['bash', str(ROOT / 'scripts' / 'setup_openpi_client.sh')], capture_output=True, text=True, timeout=540
    )
    if setup.returncode != 0 or not VENV_PYTHON.exists():
        pytest.fail(f'cannot install the real openpi-client: {setup.stdout}{setup.stderr}')
    return VENV_PYTHON


@pytest.fixture(scope='module')
def exchange(openpi_python, tmp_path_factory):
    """Runs the real client once against our server; returns what the policy saw and the client's files."""
    folder = tmp_path_factory.mktemp('openpi-client')
    policy = RecordingPolicy()
    server = OpenpiServer(ServedPolicy(policy, name='recording'), port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        run = subprocess.run(
            [str(openpi_python), '-c', CLIENT_SCRIPT, str(server.port), str(folder)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.shutdown()
        thread.join(timeout=10)
    assert run.returncode == 0, run.stderr
    return policy, folder, json.loads((folder / 'result.json').read_text())


def test_the_real_openpi_client_gets_our_servers_actions(exchange):
    _, _, result = exchange
    assert result['numpy'].startswith('1.')
    assert result['metadata']['server'] == 'robofollow' and result['metadata']['policy'] == 'recording'
    state = np.linspace(-1, 1, 14).astype(np.float32)
    expected = state[None, :] + np.arange(50, dtype=np.float32)[:, None] * 0.01
    assert result['dtype'] == '<f4' and result['server_timing'] == ['infer_ms']
    np.testing.assert_array_equal(np.asarray(result['actions'], dtype=np.float32), expected)
    np.testing.assert_array_equal(np.asarray(result['again'], dtype=np.float32), expected)


def test_the_real_openpi_client_raises_on_our_error_frames_and_can_go_on(exchange):
    _, _, result = exchange
    assert len(result['errors']) == 2
    assert 'Error in inference server' in result['errors'][0] and 'cam_high' in result['errors'][0]


def test_our_server_hands_the_policy_exactly_what_the_real_client_sent(exchange):
    policy, folder, _ = exchange
    assert policy.resets == 1 and policy.instructions == ['stack the blocks']
    padded = np.load(folder / 'padded.npy')
    first = policy.seen[0]
    for index, name in enumerate(sorted(first.images)):
        np.testing.assert_array_equal(first.images[name], padded[index].transpose(1, 2, 0))
    np.testing.assert_array_equal(first.state, np.linspace(-1, 1, 14).astype(np.float32))


def test_our_encoding_is_byte_identical_to_openpi_clients(exchange):
    _, folder, _ = exchange
    frame = (folder / 'request.msgpack').read_bytes()
    assert openpi_codec.packb(openpi_codec.unpackb(frame)) == frame


def test_our_letterboxing_matches_openpi_image_tools(exchange):
    _, folder, _ = exchange
    frames, theirs = np.load(folder / 'frames.npy'), np.load(folder / 'padded.npy')
    for frame, reference in zip(frames, theirs, strict=True):
        ours = resize_with_pad(frame, 224, 224).transpose(2, 0, 1)
        assert ((ours > 0).any(axis=0) == (reference > 0).any(axis=0)).mean() > 0.99
        assert np.abs(ours.astype(int) - reference.astype(int)).mean() < 3.0
