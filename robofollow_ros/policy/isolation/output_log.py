"""A policy process's stdout and stderr, drained into a log file of bounded size, never onto the terminal.

A policy prints what it likes (progress bars, warnings, a flood meant to look like the evaluator's own lines);
the evaluator reads the pipe on a daemon thread so that the policy never blocks on a full pipe, writes the
first ``limit_bytes`` to the log and counts the rest, which is dropped with a closing line that says how much.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from pathlib import Path

DEFAULT_LIMIT_BYTES = 10 * 1024 * 1024
READ_BYTES = 1 << 16
LOG_FOLDER = 'policy-logs'
"""Name of the folder of policy logs inside a run's output folder."""


def log_path_in(folder: Path | None) -> Path:
    """A new log file's path in ``folder`` (created; the system's temporary folder when ``None``)."""
    base = Path(tempfile.gettempdir()) / 'robofollow-policy-logs' if folder is None else Path(folder)
    base.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime('%Y%m%d-%H%M%S')
    handle, name = tempfile.mkstemp(prefix=f'policy-{stamp}-', suffix='.log', dir=base)
    os.close(handle)
    return Path(name)


class OutputLog:
    """The read end of a pipe, copied into ``path`` up to ``limit_bytes`` by a daemon thread.

    Args:
        path: the log file (created or truncated).
        limit_bytes: how much of the output is kept.

    ``write_fd`` is the descriptor to give the process as stdout and stderr; close it here once the process
    holds it (``release_writer``).
    """

    def __init__(self, path: Path, *, limit_bytes: int = DEFAULT_LIMIT_BYTES) -> None:
        self.path = Path(path)
        self.limit_bytes = limit_bytes
        self.kept = 0
        self.dropped = 0
        read_fd, self.write_fd = os.pipe()
        self._file = open(self.path, 'wb')  # noqa: SIM115 - the drain thread closes it
        self._thread = threading.Thread(target=self._drain, args=(read_fd,), name='policy-output', daemon=True)
        self._thread.start()

    def release_writer(self) -> None:
        """Close this process's copy of the write end (the policy process has its own)."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def _drain(self, read_fd: int) -> None:
        try:
            while data := os.read(read_fd, READ_BYTES):
                room = max(0, self.limit_bytes - self.kept)
                if room:
                    self._file.write(data[:room])
                    self._file.flush()
                    self.kept += min(room, len(data))
                self.dropped += max(0, len(data) - room)
        except OSError:
            pass
        finally:
            os.close(read_fd)
            if self.dropped:
                self._file.write(f'\n[robofollow: {self.dropped} more bytes of output dropped]\n'.encode())
            self._file.close()

    def close(self, *, timeout: float = 0.5) -> None:
        """Wait (briefly) for the output to end once the process is gone."""
        self.release_writer()
        with contextlib.suppress(RuntimeError):
            self._thread.join(timeout)
