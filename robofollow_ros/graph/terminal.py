"""The terminal a graph runs at: whether a process may change its settings, and putting them back.

The evaluator of a real cell reads its terminal key by key (``realcell/operator_keys.py``: a stop key), which needs the
terminal out of line mode; every way out must put the settings back. The evaluator does on its own exits; the
launcher (``Supervisor.run``), which shares the terminal, saves the settings before it starts the nodes and restores
them once every node has ended, so that a node killed (SIGKILL after the stop grace, the OOM killer) does not leave
the operator's shell without echo.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

try:
    import termios
except ImportError:  # (not on Windows)
    termios = None  # type: ignore[assignment]


def foreground_terminal(fd: int) -> bool:
    """Whether ``fd`` is a terminal whose foreground process group this process belongs to: only then may it change
    the terminal's settings (from a background group ``tcsetattr`` stops the process with SIGTTOU)."""
    if termios is None:
        return False
    try:
        return os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False


def terminal_settings(fd: int) -> list[Any] | None:
    """The settings of terminal ``fd`` (``termios.tcgetattr``), or None when it is none this process may change."""
    if not foreground_terminal(fd):
        return None
    try:
        return termios.tcgetattr(fd)
    except (OSError, termios.error):
        return None


def restore_terminal(fd: int, settings: list[Any] | None) -> None:
    """Put ``settings`` (from ``terminal_settings``) back on ``fd``, if there are any and the terminal is still this
    process's (a terminal gone, or handed to another process group, is left alone)."""
    if settings is None or not foreground_terminal(fd):
        return
    with contextlib.suppress(OSError, termios.error):
        termios.tcsetattr(fd, termios.TCSANOW, settings)


@contextlib.contextmanager
def terminal_kept(fd: int | None = None) -> Iterator[None]:
    """Restore the settings of terminal ``fd`` (default: stdin) as they were on entry when the block ends."""
    if fd is None:
        try:
            fd = sys.stdin.fileno() if sys.stdin is not None else -1
        except (AttributeError, OSError, ValueError):
            fd = -1
    settings = terminal_settings(fd) if fd >= 0 else None
    try:
        yield
    finally:
        restore_terminal(fd, settings)
