"""``RunLock``: one writer per run folder at a time.

The lock is an advisory ``flock`` on ``<folder>/.lock``. The kernel drops it when its process ends, however it
ends (even SIGKILL), so a lock left by a dead process is simply taken over; the file's text (pid, host, start
time) only serves the message shown to a second run that finds the folder busy.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import socket
from pathlib import Path
from types import TracebackType

from robofollow_ros.errors import RunFolderError

LOCK_NAME = '.lock'


def make_out_folder(out: Path) -> None:
    """Create the run folder (and its parents).

    Raises:
        RunFolderError: it cannot be created, or ``out`` is a file or a symbolic link to nowhere.
    """
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        kind = 'a file' if out.exists() else 'a symbolic link that leads nowhere (dangling, or a loop)'
        raise RunFolderError(f'--out {out} is {kind}, not a folder') from None
    except OSError as error:
        raise RunFolderError(f'cannot create --out {out}: {error.strerror or error}') from error


class RunLock:
    """An exclusive lock on a run folder, taken on ``__enter__`` (or ``acquire``) and released on exit.

    Raises:
        RunFolderError: another live process holds the folder, or the folder cannot be written.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise ``RunFolderError`` naming the process that holds it."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise RunFolderError(f'cannot write in {self.folder}: {error.strerror or error}') from error
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(os.pread(fd, 4096, 0))
            os.close(fd)
            raise RunFolderError(
                f'{self.folder} is in use by another run ({holder}): wait for it to finish or choose another --out'
            ) from None
        owner = {
            'pid': os.getpid(),
            'host': socket.gethostname(),
            'since': _dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds'),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(owner) + '\n').encode('utf-8'), 0)
        self._fd = fd

    def release(self) -> None:
        """Drop the lock (the file stays; it is harmless without a holder)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.release()


def _describe(raw: bytes) -> str:
    try:
        owner = json.loads(raw.decode('utf-8'))
        return f'pid {owner["pid"]} on {owner["host"]} since {owner["since"]}'
    except (ValueError, KeyError, TypeError):
        return 'a process that is still running'
