"""Ctrl-C and SIGTERM on the command line: one line, never a traceback, whenever they arrive.

Three gaps are closed here. While the ``robofollow`` command starts (importing its subcommands pulls in
numpy, MuJoCo and more), nothing has been done yet, so a signal ends the process at once with one line.
A node process that is still importing ends at once and silently (its launcher is stopping the graph
and says so); its launcher holds both signals from the fork on (``hold_stop_signals``), so one sent before
the interpreter got that far waits for the node to take it. Later, a signal that lands while a C
extension is being imported (MuJoCo, for one) comes out of the import as an ``ImportError`` whose cause is
the ``KeyboardInterrupt``; ``interrupt_behind`` finds it so that the run is reported as interrupted, not
failed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)
PR_SET_PDEATHSIG = 1


def set_death_signal(number: int) -> bool:
    """Ask Linux to send this process ``number`` when its parent thread exits (``PR_SET_PDEATHSIG``).

    Returns whether the kernel took it (False elsewhere than on Linux, or without a C library to call).
    """
    if not sys.platform.startswith('linux'):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library('c') or None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(number), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def interrupt_behind(error: BaseException | None) -> KeyboardInterrupt | None:
    """The ``KeyboardInterrupt`` that ``error`` is, or that caused it (through ``__cause__``/``__context__``)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _exit_at_once(number: int, frame: FrameType | None) -> None:
    name = signal.Signals(number).name
    os.write(2, f'robofollow: interrupted ({name}) while starting; nothing was run\n'.encode())
    _exit_quietly(number, frame)


def _exit_quietly(number: int, frame: FrameType | None) -> None:
    os._exit(128 + number)  # nothing is open or half-written yet: no clean-up to run


def hold_stop_signals() -> None:
    """Block SIGINT and SIGTERM in this thread; a process started from it (``fork`` + ``exec``) starts with them
    held, pending until it calls ``take_stop_signals`` (for a launcher's ``preexec_fn``)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)


def take_stop_signals() -> None:
    """Unblock SIGINT and SIGTERM (``hold_stop_signals``): one that is pending is delivered now, to the handler in
    place. A no-op where they were not held."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)


def exit_quietly_while_starting() -> None:
    """From now until the process installs handlers of its own, SIGINT and SIGTERM end it at once and silently
    (exit 130 / 143), also one its launcher held for it (``take_stop_signals``). For a node process that is still
    importing: no DDS participant and no file is open yet, and its launcher reports the stop itself. A no-op
    outside the main thread.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for number in SIGNALS:
        signal.signal(number, _exit_quietly)
    take_stop_signals()


@contextmanager
def exit_at_once_while_starting() -> Iterator[None]:
    """For the duration, SIGINT and SIGTERM end the process at once with one line (exit 130 / 143).

    Only for start-up, before anything is written: the handlers of the command that runs afterwards
    (``SignalStop`` of an evaluation) take over once the block ends. A no-op outside the main thread.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, _exit_at_once) for number in SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
