"""Helpers for the network-policy tests: deterministic observation-only policies and a served subprocess."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

TEST_DIR = Path(__file__).resolve().parent
CAMERAS = ('cam_high', 'cam_left_wrist', 'cam_right_wrist')


class WavePolicy:
    """Moves the wrist joints a little around the observed state, differently per query and instruction.

    It needs only what travels over the wire, checks that the three camera images arrived as RGB, and
    kills its own process with SIGKILL on query ``die_at`` (counted over the process's lifetime), which
    lets a test kill a policy server at a known point of an episode.
    """

    def __init__(self, *, rows: int = 7, die_at: int | None = None) -> None:
        self.rows = rows
        self.die_at = die_at
        self.lifetime_queries = 0
        self.queries = 0
        self.instruction = ''

    def reset(self) -> None:
        self.queries = 0

    def set_instruction(self, text: str) -> None:
        self.instruction = text

    def predict(self, observation) -> np.ndarray:
        self.lifetime_queries += 1
        if self.die_at is not None and self.lifetime_queries >= self.die_at:
            os.kill(os.getpid(), signal.SIGKILL)
        for camera in CAMERAS:
            image = observation.images[camera]
            if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
                raise ValueError(f'{camera}: not an RGB image')
        self.queries += 1
        state = np.asarray(observation.state, dtype=np.float32)
        phase = self.queries + 0.1 * (len(self.instruction) % 7)
        steps = np.linspace(0.0, 1.0, self.rows, dtype=np.float32)[:, None]
        offsets = np.zeros((1, 14), dtype=np.float32)
        offsets[0, [5, 12]] = 0.04 * np.float32(np.sin(phase))
        return state[None, :] + steps * offsets


def make_wave(rows: int = 7, die_at: int | None = None) -> WavePolicy:
    """Factory for ``--policy remote_support:make_wave``."""
    return WavePolicy(rows=rows, die_at=die_at)


def free_port() -> int:
    """A loopback TCP port nobody listens on (a dead endpoint)."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class ServedPolicyProcess:
    """``robofollow serve-policy`` in a subprocess on a free port; a context manager that stops it."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(TEST_DIR), os.environ.get('PYTHONPATH', '')])}
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'robofollow_ros', 'serve-policy', '--port', '0', *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith('serving '):
            self.process.kill()
            raise RuntimeError(f'serve-policy did not start: {line}{self.process.communicate(timeout=30)[1]}')
        self.announcement = line.strip()
        self.port = int(line.rsplit(':', 1)[1])

    def __enter__(self) -> ServedPolicyProcess:
        return self

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        """Send ``sig`` and return the exit status and what the server wrote on stderr."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            _, stderr = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, stderr = self.process.communicate()
        return self.process.returncode, stderr

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


@contextmanager
def serving(server: Any) -> Iterator[Any]:
    """``server`` (a policy server already bound) answering on a thread of its own until the block ends."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        thread.join(timeout=10)
