"""Both policy servers on real sockets: bad frames get error frames and the server keeps serving; client errors."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from contextlib import ExitStack, contextmanager
from types import SimpleNamespace

import msgpack
import numpy as np
import pytest
from graph_helpers import wait_until
from remote_support import ServedPolicyProcess, serving
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from websockets.sync.server import serve

from robofollow_ros.cli import main
from robofollow_ros.errors import PolicyError
from robofollow_ros.policy import openpi_codec
from robofollow_ros.policy.base import Policy, PrivilegedPolicy
from robofollow_ros.policy.factory import make_policy
from robofollow_ros.policy.hold import HoldPolicy
from robofollow_ros.policy.openpi import OpenpiPolicy
from robofollow_ros.policy.robotwin_tcp import RobotwinTcpPolicy
from robofollow_ros.policy.robotwin_tcp_codec import HEADER, decode_message, encode_message, read_frame
from robofollow_ros.policy.server.openpi_server import OpenpiServer
from robofollow_ros.policy.server.robotwin_tcp_server import RobotwinTcpServer
from robofollow_ros.policy.server.served import ServedPolicy

CAMERAS = ('cam_high', 'cam_left_wrist', 'cam_right_wrist')
FRAME_CAP = 1024 * 1024


def observation(state=None):
    images = {camera: np.full((240, 320, 3), 90, dtype=np.uint8) for camera in CAMERAS}
    return SimpleNamespace(images=images, state=np.arange(14, dtype=np.float32) if state is None else state)


class FailingPolicy(HoldPolicy):
    def predict(self, observation):
        if observation.state[0] < 0:
            raise RuntimeError('model exploded')
        if observation.state[0] > 100:
            return np.full((2, 14), np.nan)
        return super().predict(observation)


def running(server_class, **options):
    return serving(
        server_class(ServedPolicy(FailingPolicy(), name='failing'), port=0, max_frame_bytes=FRAME_CAP, **options)
    )


def openpi_request(state=None):
    images = {camera: np.zeros((3, 224, 224), np.uint8) for camera in CAMERAS}
    return {'images': images, 'state': np.zeros(14, np.float32) if state is None else state, 'prompt': 'hold'}


def assert_openpi_answers(ws):
    reply = openpi_codec.unpackb(ws.recv(timeout=30))
    assert reply['actions'].shape == (5, 14)


@pytest.mark.parametrize(
    ('frame', 'message'),
    [
        (b'\xc1\xc1 garbage', 'not an openpi msgpack frame'),
        ('a text frame', 'expected a binary msgpack frame'),
        (openpi_codec.packb({'observation': 1}), 'unknown keys'),
        (openpi_codec.packb(openpi_request(state=np.zeros(3))), 'state'),
        (msgpack.packb({'a': {b'__ndarray__': True, b'data': b'', b'dtype': '|O', b'shape': [0]}}), 'cannot travel'),
        (openpi_codec.packb(openpi_request(state=np.full(14, -1.0))), 'policy raised RuntimeError: model exploded'),
        (openpi_codec.packb(openpi_request(state=np.full(14, 200.0))), 'non-finite'),
    ],
)
def test_openpi_server_answers_a_bad_request_with_an_error_frame_and_goes_on(frame, message):
    with running(OpenpiServer) as server, connect(f'ws://127.0.0.1:{server.port}') as ws:
        assert openpi_codec.unpackb(ws.recv(timeout=30))['policy'] == 'failing'
        ws.send(frame)
        error = ws.recv(timeout=30)
        assert isinstance(error, str) and message in error and '\n' not in error
        ws.send(openpi_codec.packb(openpi_request()))
        assert_openpi_answers(ws)


def test_openpi_server_refuses_oversized_frames_and_keeps_serving():
    with running(OpenpiServer) as server:
        with connect(f'ws://127.0.0.1:{server.port}') as ws:
            ws.recv(timeout=30)
            ws.send(b'\0' * (FRAME_CAP + 1))
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=30)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
        with connect(f'ws://127.0.0.1:{server.port}') as ws:
            ws.recv(timeout=30)
            ws.send(openpi_codec.packb(openpi_request()))
            assert_openpi_answers(ws)


def test_openpi_server_health_check_and_control_frames():
    with running(OpenpiServer) as server:
        client = http.client.HTTPConnection('127.0.0.1', server.port, timeout=30)
        client.request('GET', '/healthz')
        assert client.getresponse().status == 200
        client.close()
        with connect(f'ws://127.0.0.1:{server.port}') as ws:
            ws.recv(timeout=30)
            ws.send(openpi_codec.packb({'__ctrl__': 'episode_start', '__task__': 't'}))
            assert openpi_codec.unpackb(ws.recv(timeout=30)) == {'__ack__': 'episode_start'}


def tcp_call(sock, message):
    sock.sendall(encode_message(message) if not isinstance(message, bytes) else message)
    return decode_message(read_frame(sock))


def predict_message(state):
    images = {
        field: {'rgb': np.zeros((24, 32, 3), np.uint8)} for field in ('head_camera', 'left_camera', 'right_camera')
    }
    return {'cmd': 'predict', 'obs': {'observation': images, 'joint_action': {'vector': state}, 'instruction': 'x'}}


@pytest.mark.parametrize(
    ('frame', 'message'),
    [
        (HEADER.pack(8) + b'not json', 'not a UTF-8 JSON'),
        ({'cmd': 'dance', 'obs': None}, 'a request must be'),
        (['reset'], 'a request must be'),
        ({'cmd': 'set_instruction', 'obs': 5}, 'instruction must be a string'),
        ({'cmd': 'predict', 'obs': {'observation': {}, 'joint_action': {}}}, 'head_camera'),
        (predict_message(np.zeros(3)), 'joint_action.vector'),
        (predict_message(np.full(14, -1.0)), 'policy raised RuntimeError: model exploded'),
        (predict_message(np.full(14, 200.0)), 'non-finite'),
    ],
)
def test_robotwin_server_answers_a_bad_request_with_an_error_reply_and_goes_on(frame, message):
    with running(RobotwinTcpServer) as server, socket.create_connection(('127.0.0.1', server.port), timeout=30) as sock:
        reply = tcp_call(sock, frame)
        assert message in reply['error'] and reply['traceback'] and '\n' not in reply['traceback']
        assert tcp_call(sock, {'cmd': 'reset', 'obs': None}) == {'res': None}
        assert tcp_call(sock, predict_message(np.zeros(14)))['res'].shape == (5, 14)


@pytest.mark.parametrize('header', [HEADER.pack(FRAME_CAP + 1), HEADER.pack(0)])
def test_robotwin_server_refuses_a_bad_length_closes_that_connection_and_keeps_serving(header):
    with running(RobotwinTcpServer) as server:
        with socket.create_connection(('127.0.0.1', server.port), timeout=30) as sock:
            assert 'outside' in tcp_call(sock, header)['error']
            assert read_frame(sock) is None
        with socket.create_connection(('127.0.0.1', server.port), timeout=30) as sock:
            assert tcp_call(sock, predict_message(np.zeros(14)))['res'].shape == (5, 14)


def test_robotwin_server_answers_clients_while_others_sit_idle_or_half_open():
    """One silent client and one that sent 2 bytes of a frame header do not delay 200 clients querying at once."""
    with running(RobotwinTcpServer) as server:
        idle = socket.create_connection(('127.0.0.1', server.port), timeout=30)
        half_open = socket.create_connection(('127.0.0.1', server.port), timeout=30)
        half_open.sendall(HEADER.pack(100)[:2])
        replies = []

        def query():
            with socket.create_connection(('127.0.0.1', server.port), timeout=30) as sock:
                replies.append(tcp_call(sock, predict_message(np.zeros(14)))['res'].shape)

        clients = [threading.Thread(target=query) for _ in range(200)]
        for client in clients:
            client.start()
        for client in clients:
            client.join(timeout=60)
        idle.close()
        half_open.close()
    assert replies == [(5, 14)] * 200


@pytest.mark.parametrize('sent', [b'', HEADER.pack(100)[:2], HEADER.pack(100) + b'{"cmd"'])
def test_robotwin_server_closes_a_connection_silent_for_the_idle_timeout(sent):
    server_options = {'idle_timeout': 0.5}
    with (
        running(RobotwinTcpServer, **server_options) as server,
        socket.create_connection(('127.0.0.1', server.port), timeout=30) as sock,
    ):
        sock.sendall(sent)
        assert sock.recv(1) == b''  # closed by the server, with no frame a client would take for a reply


def test_serve_policy_takes_the_idle_timeout_from_the_command_line(capsys):
    with (
        ServedPolicyProcess('--policy', 'hold', '--protocol', 'robotwin-tcp', '--idle-timeout', '0.5') as server,
        socket.create_connection(('127.0.0.1', server.port), timeout=30) as sock,
    ):
        assert sock.recv(1) == b''
    assert main(['serve-policy', '--policy', 'hold', '--idle-timeout', '0']) == 2
    assert capsys.readouterr().err.strip().endswith('--idle-timeout must be positive')


def test_serve_policy_takes_the_limits_from_the_command_line(capsys):
    with (
        ServedPolicyProcess('--policy', 'hold', '--protocol', 'robotwin-tcp', '--max-connections', '1') as server,
        socket.create_connection(('127.0.0.1', server.port), timeout=30) as idle,
        socket.create_connection(('127.0.0.1', server.port), timeout=30) as sock,
    ):
        assert tcp_call(sock, {'cmd': 'reset', 'obs': None}) == {'res': None}
        assert idle.recv(1) == b''
    for options, message in (
        (['--max-connections', '0'], '--max-connections must be at least 1'),
        (['--max-inflight-mb', '-1'], '--max-inflight-mb must be a positive number of MiB'),
        (['--max-frame-mb', '32', '--max-inflight-mb', '16'], '--max-inflight-mb must be at least --max-frame-mb'),
    ):
        assert main(['serve-policy', '--policy', 'hold', *options]) == 2
        assert message in capsys.readouterr().err


def test_the_robotwin_client_reconnects_on_reset_after_the_server_closed_an_idle_connection():
    server_options = {'idle_timeout': 0.5}
    with running(RobotwinTcpServer, **server_options) as server:
        policy = RobotwinTcpPolicy(port=server.port, timeout=30)
        policy.reset()
        policy.set_instruction('hold')
        assert policy.predict(observation()).shape == (5, 14)
        wait_until(lambda: server.open_connections == 0, timeout=30, what='the idle connection to be closed')
        policy.reset()
        policy.set_instruction('hold')
        assert policy.predict(observation()).shape == (5, 14)
        policy.close()


def test_openpi_server_closes_a_connection_silent_for_the_idle_timeout():
    with running(OpenpiServer, idle_timeout=0.5) as server, connect(f'ws://127.0.0.1:{server.port}') as ws:
        ws.recv(timeout=30)
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001


def test_error_replies_name_the_exception_without_a_traceback_or_the_servers_paths():
    with running(RobotwinTcpServer) as server, socket.create_connection(('127.0.0.1', server.port), timeout=30) as sock:
        robotwin = tcp_call(sock, predict_message(np.full(14, -1.0)))
    with running(OpenpiServer) as server, connect(f'ws://127.0.0.1:{server.port}') as ws:
        ws.recv(timeout=30)
        ws.send(openpi_codec.packb(openpi_request(state=np.full(14, -1.0))))
        openpi = ws.recv(timeout=30)
    assert robotwin['traceback'] == 'RuntimeError: model exploded'
    for text in (robotwin['error'], robotwin['traceback'], openpi):
        assert 'model exploded' in text and '\n' not in text
        assert 'Traceback' not in text and 'File "' not in text and __file__ not in text and '.py' not in text


def test_clients_raise_one_line_policy_errors_for_server_errors():
    with running(OpenpiServer) as server:
        client = OpenpiPolicy('127.0.0.1', server.port, connect_retries=1)
        client.set_instruction('hold')
        assert client.predict(observation()).shape == (5, 14)
        with pytest.raises(PolicyError, match=r'^openpi server error: .*model exploded$'):
            client.predict(observation(np.full(14, -1.0, dtype=np.float32)))
        assert client.predict(observation()).shape == (5, 14)
        client.close()
    with running(RobotwinTcpServer) as server:
        client = RobotwinTcpPolicy('127.0.0.1', server.port, connect_retries=1)
        client.reset()
        client.set_instruction('hold')
        with pytest.raises(PolicyError, match=r"^robotwin-tcp server error on 'predict': .*non-finite"):
            client.predict(observation(np.full(14, 200.0, dtype=np.float32)))
        assert client.predict(observation()).shape == (5, 14)
        client.close()


@contextmanager
def fake_openpi_server(reply):
    def handler(connection):
        connection.send(openpi_codec.packb({}))
        for _ in connection:
            if reply is not None:
                connection.send(reply)

    with serve(handler, '127.0.0.1', 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield server.socket.getsockname()[1]
        server.shutdown()


@pytest.mark.parametrize(
    ('reply', 'message'),
    [
        (openpi_codec.packb({'actions': np.zeros((4, 13))}), r'shape \[T, 14\]'),
        (openpi_codec.packb({'actions': np.full((4, 14), np.inf)}), 'non-finite'),
        (openpi_codec.packb({'result': 1}), 'no "actions"'),
        (openpi_codec.packb([1, 2]), 'no "actions"'),
        (b'\xc1', 'not an openpi msgpack frame'),
        ('Traceback (most recent call last):\n  File "x"\nValueError: bad prompt\n', 'ValueError: bad prompt$'),
        (None, 'did not answer within'),
    ],
)
def test_openpi_client_rejects_malformed_replies(reply, message):
    with fake_openpi_server(reply) as port:
        client = OpenpiPolicy('127.0.0.1', port, connect_retries=1, timeout=1.0)
        with pytest.raises(PolicyError, match=message):
            client.predict(observation())
        client.close()


@contextmanager
def fake_tcp_server(reply):
    listener = socket.create_server(('127.0.0.1', 0))

    truncated = HEADER.unpack(reply[:4])[0] != len(reply) - 4

    def answer():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                while read_frame(connection) is not None:
                    connection.sendall(reply)
                    if truncated:
                        break

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


@pytest.mark.parametrize(
    ('reply', 'message'),
    [
        (encode_message({'res': np.zeros((4, 13), np.float32)}), r'shape \[T, 14\]'),
        (encode_message({'error': 'checkpoint missing', 'traceback': '...'}), "error on 'reset': checkpoint missing"),
        (encode_message({'something': 1}), 'without "res"'),
        (HEADER.pack(10) + b'{"r', 'connection closed after 7 of 14 frame bytes'),
    ],
)
def test_robotwin_client_rejects_malformed_replies(reply, message):
    with fake_tcp_server(reply) as port:
        client = RobotwinTcpPolicy('127.0.0.1', port, connect_retries=1, timeout=5.0)
        with pytest.raises(PolicyError, match=message):
            client.reset()
            client.predict(observation())
        client.close()


@pytest.mark.parametrize(('name', 'server_class'), [('openpi', OpenpiServer), ('robotwin-tcp', RobotwinTcpServer)])
def test_network_backends_are_registered_user_policies(name, server_class):
    with running(server_class) as server:
        policy = make_policy(name, kwargs={'port': server.port, 'connect_retries': 1})
        assert isinstance(policy, Policy) and not isinstance(policy, PrivilegedPolicy)
        policy.reset()
        policy.set_instruction('hold')
        assert policy.predict(observation()).shape == (5, 14)
        policy.close()
    with pytest.raises(PolicyError, match='cannot build'):
        make_policy(name, kwargs={'port': 1, 'no_such_option': True})


def test_openpi_client_sends_the_api_key_from_the_environment(monkeypatch):
    headers = []

    def handler(connection):
        headers.append(connection.request.headers.get('Authorization'))
        connection.send(openpi_codec.packb({}))

    monkeypatch.setenv('OPENPI_API_KEY', 'from-env')
    with serve(handler, '127.0.0.1', 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        port = server.socket.getsockname()[1]
        OpenpiPolicy('127.0.0.1', port, connect_retries=1).close()
        OpenpiPolicy('127.0.0.1', port, connect_retries=1, api_key='given').close()
        server.shutdown()
    assert headers == ['Api-Key from-env', 'Api-Key given']


def test_serve_policy_bridges_a_robotwin_tcp_client_to_an_openpi_server():
    with running(OpenpiServer) as upstream:
        bridge = OpenpiPolicy('127.0.0.1', upstream.port, connect_retries=1)
        server = RobotwinTcpServer(ServedPolicy(bridge, name='openpi'), port=0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        client = RobotwinTcpPolicy('127.0.0.1', server.port, connect_retries=1)
        client.reset()
        client.set_instruction('hold')
        state = np.linspace(0, 1, 14, dtype=np.float32)
        np.testing.assert_array_equal(client.predict(observation(state)), np.tile(state, (5, 1)))
        with pytest.raises(PolicyError, match=r'openpi server error: .*model exploded'):
            client.predict(observation(np.full(14, -1.0, dtype=np.float32)))
        client.close()
        server.shutdown()
        thread.join(timeout=10)
        bridge.close()


def test_robotwin_server_hangs_up_the_client_idle_longest_to_admit_a_new_one():
    with running(RobotwinTcpServer, max_connections=4) as server:
        idle = [socket.create_connection(('127.0.0.1', server.port), timeout=30) for _ in range(10)]
        with socket.create_connection(('127.0.0.1', server.port), timeout=30) as sock:
            assert tcp_call(sock, predict_message(np.zeros(14)))['res'].shape == (5, 14)
        assert [sock.recv(1) for sock in idle[:7]] == [b''] * 7
        assert [tcp_call(sock, {'cmd': 'reset', 'obs': None}) for sock in idle[7:]] == [{'res': None}] * 3
        for sock in idle:
            sock.close()


def test_robotwin_server_never_hangs_up_a_client_in_the_middle_of_a_request():
    """With its one place taken by a client half-way through a frame, a new client waits, then takes the place."""
    reset = encode_message({'cmd': 'reset', 'obs': None})
    with (
        running(RobotwinTcpServer, max_connections=1) as server,
        socket.create_connection(('127.0.0.1', server.port), timeout=30) as busy,
    ):
        busy.sendall(reset[:3])
        # Admitted is not yet busy: until the server has read its first bytes it is idle and may be hung up.
        wait_until(lambda: server.busy_connections == 1, timeout=30, what='the first client to start its request')
        with socket.create_connection(('127.0.0.1', server.port), timeout=0.5) as waiting:
            waiting.sendall(reset)
            with pytest.raises(TimeoutError):
                waiting.recv(1)
            busy.sendall(reset[3:])
            assert decode_message(read_frame(busy)) == {'res': None}
            waiting.settimeout(30)
            assert decode_message(read_frame(waiting)) == {'res': None}
            assert busy.recv(1) == b''  # idle once answered: it made room for the waiting client


def raw_websocket(port):
    """A websocket opened by hand, so that a test can send part of a frame (the server's first frames are unread)."""
    sock = socket.create_connection(('127.0.0.1', port), timeout=30)
    sock.sendall(
        b'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
        b'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n'
    )
    response = b''
    while b'\r\n\r\n' not in response:
        response += sock.recv(4096)
    assert response.startswith(b'HTTP/1.1 101'), response
    return sock


def ws_frame_header(length):
    """The header of a masked binary frame whose mask is all zeros (its payload goes as it is)."""
    if length < 126:
        size = bytes([0x80 | length])
    elif length < 1 << 16:
        size = bytes([0x80 | 126]) + length.to_bytes(2, 'big')
    else:
        size = bytes([0x80 | 127]) + length.to_bytes(8, 'big')
    return b'\x82' + size + bytes(4)


def received_until(sock, marker):
    data = b''
    while marker not in data:
        chunk = sock.recv(65536)
        assert chunk, f'closed before {marker!r}: {data[-200:]!r}'
        data += chunk
    return data


def test_openpi_server_hangs_up_the_client_idle_longest_to_admit_a_new_one():
    with running(OpenpiServer, max_connections=4) as server, ExitStack() as stack:
        idle = [stack.enter_context(connect(f'ws://127.0.0.1:{server.port}')) for _ in range(10)]
        for ws in idle:
            ws.recv(timeout=30)
        with connect(f'ws://127.0.0.1:{server.port}') as ws:
            ws.recv(timeout=30)
            ws.send(openpi_codec.packb(openpi_request()))
            assert_openpi_answers(ws)
        for ws in idle[:7]:
            with pytest.raises(ConnectionClosed):
                ws.recv(timeout=30)
        for ws in idle[7:]:
            ws.send(openpi_codec.packb(openpi_request()))
            assert_openpi_answers(ws)


def test_openpi_server_never_hangs_up_a_client_in_the_middle_of_a_request():
    payload = b'not msgpack at all'
    with running(OpenpiServer, max_connections=2) as server, raw_websocket(server.port) as busy:
        busy.sendall(ws_frame_header(len(payload)) + payload[:3])
        wait_until(lambda: server.busy_connections == 1, timeout=30, what='the first client to start its request')
        with connect(f'ws://127.0.0.1:{server.port}') as idle:
            idle.recv(timeout=30)
            with connect(f'ws://127.0.0.1:{server.port}') as ws:
                ws.recv(timeout=30)
                ws.send(openpi_codec.packb(openpi_request()))
                assert_openpi_answers(ws)
            with pytest.raises(ConnectionClosed):
                idle.recv(timeout=30)
        busy.sendall(payload[3:])
        assert b'not an openpi msgpack frame' in received_until(busy, b'msgpack frame')


MIB = 1024 * 1024


def resident_mib(pid):
    with open(f'/proc/{pid}/status', encoding='ascii') as status:
        return next(int(line.split()[1]) for line in status if line.startswith('VmRSS:')) / 1024


def settled_resident_mib(pid):
    """The process's resident memory once it has stopped growing for a second (at most 20 s)."""
    highest, since, deadline = resident_mib(pid), time.monotonic(), time.monotonic() + 20
    while time.monotonic() - since < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
        now = resident_mib(pid)
        if now > highest + 1:
            highest, since = now, time.monotonic()
    return highest


def open_client(protocol, port):
    return raw_websocket(port) if protocol == 'openpi' else socket.create_connection(('127.0.0.1', port), timeout=30)


def announce(protocol, size):
    return ws_frame_header(size) if protocol == 'openpi' else HEADER.pack(size)


@pytest.mark.parametrize('protocol', ['robotwin-tcp', 'openpi'])
def test_a_frame_announced_over_the_cap_is_refused_before_its_body_is_read(protocol):
    with ServedPolicyProcess('--policy', 'hold', '--protocol', protocol) as server:
        before = settled_resident_mib(server.process.pid)
        with open_client(protocol, server.port) as sock:
            sock.settimeout(10)
            sock.sendall(announce(protocol, 120 * MIB) + bytes(MIB))
            if protocol == 'openpi':
                assert (1009).to_bytes(2, 'big') in received_until(sock, (1009).to_bytes(2, 'big'))
            else:
                assert 'outside (0, 16777216]' in decode_message(read_frame(sock))['error']
        assert settled_resident_mib(server.process.pid) - before < 8


@pytest.mark.parametrize('protocol', ['robotwin-tcp', 'openpi'])
def test_requests_past_the_memory_budget_wait_unread_then_are_answered(protocol):
    """12 clients send all but the last byte of a 15 MiB request: the default 64 MiB budget reads four of them (the
    server's memory grows by about 64 MiB, 190 MiB when all 12 were read), then each is answered in turn."""
    size, clients = 15 * MIB, 12
    body = memoryview(b'"' + b'x' * (size - 2) + b'"')
    with ServedPolicyProcess('--policy', 'hold', '--protocol', protocol) as server:
        socks = [open_client(protocol, server.port) for _ in range(clients)]
        before = settled_resident_mib(server.process.pid)
        senders = [
            threading.Thread(target=lambda sock=sock: (sock.sendall(announce(protocol, size)), sock.sendall(body[:-1])))
            for sock in socks
        ]
        for sender in senders:
            sender.start()
        wait_until(lambda: sum(s.is_alive() for s in senders) <= clients - 4, timeout=60, what='four requests read')
        grown = settled_resident_mib(server.process.pid) - before
        waiting = sum(sender.is_alive() for sender in senders)
        replies = []

        def finish(sock, sender):
            sender.join(timeout=60)
            sock.sendall(body[-1:])
            replies.append(received_until(sock, b'msgpack frame') if protocol == 'openpi' else read_frame(sock))

        finishers = [threading.Thread(target=finish, args=pair) for pair in zip(socks, senders, strict=True)]
        for finisher in finishers:
            finisher.start()
        for finisher in finishers:
            finisher.join(timeout=120)
        for sock in socks:
            sock.close()
    assert grown < 6 * 15 and waiting > 0, f'{grown:.0f} MiB more resident, {waiting} requests waiting'
    assert len(replies) == clients
