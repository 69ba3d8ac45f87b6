"""The bridge's stop socket (``realcell/stop_socket.py``): the operator's stop without DDS discovery, for this user
alone. The real bridge behind it: ``test_realtime_bridge.py``; a sandboxed policy cannot reach it:
``test_policy_sandbox.py``."""

from __future__ import annotations

import os
import socket
import stat
import tempfile
from pathlib import Path

import pytest

from robofollow_ros.realcell.stop_socket import (
    StopSocket,
    StopSocketError,
    runtime_folder,
    stop_over_socket,
    stop_socket_path,
)


@pytest.fixture
def folder(monkeypatch: pytest.MonkeyPatch):
    """A runtime folder of its own, short as a real one (pytest-xdist's tmp_path passes the 107 bytes of a socket
    path)."""
    with tempfile.TemporaryDirectory(prefix='rf-') as runtime:
        monkeypatch.setenv('XDG_RUNTIME_DIR', runtime)
        yield Path(runtime) / 'robofollow'


def test_the_path_is_in_this_users_runtime_folder_by_domain_and_service(folder: Path, monkeypatch) -> None:
    assert runtime_folder() == folder
    assert stop_socket_path(7) == folder / 'stop-d7.robofollow.stop.sock'
    assert stop_socket_path(7, '/cell1/robofollow/stop').name == 'stop-d7.cell1.robofollow.stop.sock'
    monkeypatch.delenv('XDG_RUNTIME_DIR')
    assert runtime_folder() == Path('/tmp') / f'robofollow-{os.getuid()}'


def test_a_stop_request_is_served_and_answered(folder: Path) -> None:
    calls: list[str] = []

    def stop() -> tuple[bool, str]:
        calls.append('stop')
        return True, 'both arms hold'

    path = stop_socket_path(3)
    server = StopSocket(path, stop)
    try:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE(path.stat().st_mode) == 0o600
        connected: list[bool] = []
        assert stop_over_socket(path, timeout=5.0, on_connect=lambda: connected.append(True)) == (
            True,
            'both arms hold',
        )
        assert stop_over_socket(path, timeout=5.0) == (True, 'both arms hold')
        assert calls == ['stop', 'stop'] and connected == [True]
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(5.0)
            client.connect(str(path))
            client.sendall(b'home\n')
            assert client.recv(4096).startswith(b'0 unknown request')
        assert calls == ['stop', 'stop']
    finally:
        server.close()
    assert not path.exists()
    assert stop_over_socket(path, timeout=1.0) is None  # nobody listens: the caller uses the service


def test_a_stop_that_fails_is_answered_as_not_held_and_the_socket_goes_on(folder: Path) -> None:
    answers = iter([RuntimeError('no joint state'), (False, 'no measured joint state to hold at')])

    def stop() -> tuple[bool, str]:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    server = StopSocket(stop_socket_path(4), stop)
    try:
        assert stop_over_socket(server.path, timeout=5.0) == (False, 'the stop failed: RuntimeError: no joint state')
        assert stop_over_socket(server.path, timeout=5.0) == (False, 'no measured joint state to hold at')
    finally:
        server.close()


def test_a_killed_bridges_socket_is_replaced_and_a_live_one_is_not(folder: Path) -> None:
    path = stop_socket_path(5)
    folder.mkdir(mode=0o700)
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(path))
    left.close()  # its file stays, as a killed bridge leaves it
    server = StopSocket(path, lambda: (True, 'held'))
    try:
        assert stop_over_socket(path, timeout=5.0) == (True, 'held')
        with pytest.raises(StopSocketError, match='another bridge serves'):
            StopSocket(path, lambda: (True, 'second'))
        assert stop_over_socket(path, timeout=5.0) == (True, 'held')
    finally:
        server.close()


def test_a_folder_others_can_enter_is_refused(folder: Path) -> None:
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    with pytest.raises(StopSocketError, match='not a folder of this user alone'):
        StopSocket(stop_socket_path(6), lambda: (True, 'held'))
    assert not stop_socket_path(6).exists()
