"""How every node process stops: on SIGINT and SIGTERM, and when the process that started it dies.

A signal only *asks* the node to stop (``StopRequest``): the spin loop sees the request between callbacks and the
node is closed and destroyed on the way out. Shutting rclpy down from inside the signal handler, as rclpy's own
handlers do, destroys the node's publishers while a callback may still be running in the same thread (the sim
publishes every row of a chunk from one callback), and the callback then dies with ``InvalidHandle``.

``die_with_parent`` makes the kernel send SIGTERM to the node when its parent dies (``PR_SET_PDEATHSIG`` on Linux,
or a thread watching ``getppid`` elsewhere), so no node outlives a launcher that was killed: the real ``ros2
launch`` exits at once on SIGTERM and leaves its children running.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from robofollow_ros.interrupts import set_death_signal, take_stop_signals

PARENT_POLL_SECONDS = 0.5
ORPHAN_EXIT_SECONDS = 20.0
"""How long an orphaned node may take to stop before it ends itself (``os._exit``): no launcher is left to SIGKILL a
shutdown that hangs (CI once saw an orphaned evaluator wait 30 s in Fast DDS's threads after its launcher was
killed). Nodes take 0.4-4.5 s to stop, most of it on a loaded machine."""
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_PARENT_AT_START = os.getppid()
"""The parent when this module was first imported (before rclpy starts, so a parent that dies while the node
starts is noticed after the death signal is set)."""


class StopRequest:
    """The first stop signal a process received (``signal.Signals`` name), if any; thread-safe to read."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.name: str | None = None

    def set(self, name: str) -> None:
        """Ask the process to stop (the first name is kept)."""
        if self.name is None:
            self.name = name
        self._event.set()

    def is_set(self) -> bool:
        """Whether a stop was asked for."""
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a stop is asked for (or ``timeout`` passes); whether it was."""
        return self._event.wait(timeout)


STOP = StopRequest()
"""This process's stop request (one per process: signals are per process)."""


def install_stop_handlers(*, on_stop: Callable[[str], None] | None = None) -> None:
    """SIGINT and SIGTERM set ``STOP`` (and call ``on_stop`` with the signal name, in the main thread); from the
    first one on, both are ignored (``ignore_further_stops``): the process is stopping, and a launcher sees from
    outside that it is (``graph/supervisor.py`` gives such a node longer to exit). One that a launcher held while
    the process started is taken now."""

    def handle(number: int, _frame: Any) -> None:
        name = signal.Signals(number).name
        ignore_further_stops()
        if not STOP.is_set() and os.getppid() != _PARENT_AT_START:
            _end_after(ORPHAN_EXIT_SECONDS, code=128 + number)
        STOP.set(name)
        if on_stop is not None:
            on_stop(name)

    for number in STOP_SIGNALS:
        signal.signal(number, handle)
    take_stop_signals()


def ignore_further_stops() -> None:
    """Ignore SIGINT and SIGTERM from now on (the process is already stopping). A launcher forwards the signal the
    terminal already sent to its whole process group, then SIGTERM; one that arrives while the interpreter
    finalises, after Python has put the default handlers back, would kill the process with that signal instead of
    letting it exit cleanly. An ignored signal stays ignored through finalisation; SIGKILL still ends a node that
    hangs. Both ignored is how a launcher tells a node that is exiting (``/proc/<pid>/status``, ``SigIgn``)."""
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)


def die_with_parent(*, poll: float = PARENT_POLL_SECONDS) -> str:
    """Have this process receive SIGTERM when its parent dies; returns how (``prctl`` or ``watch``).

    ``PR_SET_PDEATHSIG`` fires when the parent *thread* that started this process exits, not only the parent
    process: a launcher must start nodes from a thread that lives as long as it does (``ros2 launch`` and
    ``robofollow launch`` start them from their main thread). The setting survives the ros wheels' re-exec of
    the interpreter (the PID stays the same). A parent that died before the setting took effect is caught by
    comparing ``getppid`` with the parent seen at import.
    """
    survive_a_lost_reader()
    if set_death_signal(signal.SIGTERM):
        how = 'prctl'
        if os.getppid() != _PARENT_AT_START:
            os.kill(os.getpid(), signal.SIGTERM)
        return how
    watcher = threading.Thread(target=_watch_parent, args=(_PARENT_AT_START, poll), name='parent-watch', daemon=True)
    watcher.start()
    return 'watch'


class _OutputWithoutReader:
    """A text stream that drops what it cannot write once its reader is gone (``BrokenPipeError``).

    A launcher reads its nodes' output through pipes. When it is killed, a node's next ``print`` would raise
    ``BrokenPipeError`` in whatever code printed, racing the death signal that is on its way, and the run would
    end ``failed`` for a message nobody could read any more.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                return int(self._stream.write(text))
            except BrokenPipeError:
                self.reader_gone = True
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self.reader_gone = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def survive_a_lost_reader() -> None:
    """Make ``sys.stdout`` and ``sys.stderr`` drop output, instead of raising, once their reader is gone."""
    for name in ('stdout', 'stderr'):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _OutputWithoutReader):
            setattr(sys, name, _OutputWithoutReader(stream))


def _end_after(seconds: float, *, code: int) -> None:
    """End the process with ``code`` after ``seconds``, whatever it is doing then (a daemon timer)."""
    timer = threading.Timer(seconds, os._exit, args=(code,))
    timer.daemon = True
    timer.start()


def _watch_parent(parent: int, poll: float) -> None:
    while os.getppid() == parent:
        if STOP.wait(poll):
            return
    os.kill(os.getpid(), signal.SIGTERM)
