"""The evaluator's terminal read key by key: a stop key stops both arms at once, lines still say ready or override.

On a real cell attended at a terminal (the evaluator's stdin is a terminal of its foreground process group),
``KeyReader`` takes the terminal out of line mode (cbreak: no line buffering and no echo; Ctrl-C still interrupts), so
that one key reaches the evaluator without Enter:

* ``s`` or the space bar (``STOP_KEYS``): the stop, at once (``CellOperator`` calls ``/robofollow/stop``), unless the
  line typed so far begins with ``override`` (then they are part of the reason; the word itself has neither);
* Enter: the line typed so far, as the evaluator took lines before: an empty one says ready, ``override <why>``
  overrides a failed layout check;
* Backspace and Ctrl-U edit the line, escape sequences (arrow keys) are dropped, the rest is echoed.

The terminal's settings come back on every way out: ``close`` (the evaluator's exits, ``finally``), at interpreter
exit (``atexit``), and by the launcher once the graph has ended (``graph/terminal.py``: a node killed cannot).
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import os
import select
import threading
from collections.abc import Callable
from typing import Any

from robofollow_ros.graph.terminal import foreground_terminal, restore_terminal, terminal_settings

STOP_KEYS = frozenset({'s', 'S', ' '})
"""Keys that stop both arms at once."""
TEXT_PREFIX = 'override'
"""A line that begins with this takes the stop keys as text (the override's reason)."""
ESCAPE = '\x1b'
ERASE = frozenset({'\x7f', '\b'})
KILL_LINE = '\x15'  # Ctrl-U
JOIN_SECONDS = 1.0


class KeyEditor:
    """What the keys mean (no terminal here): ``feed`` the characters as they come; ``on_stop()`` for a stop key,
    ``on_line(text)`` for Enter, ``echo(text)`` for what the operator should see."""

    def __init__(
        self, *, on_stop: Callable[[], None], on_line: Callable[[str], None], echo: Callable[[str], None]
    ) -> None:
        self.on_stop = on_stop
        self.on_line = on_line
        self.echo = echo
        self.line = ''
        self.escape = ''
        """'' outside an escape sequence; the sequence read so far inside one."""
        self.after_cr = False

    def feed(self, text: str) -> None:
        for char in text:
            self._key(char)

    def _key(self, char: str) -> None:
        after_cr, self.after_cr = self.after_cr, char == '\r'
        if self.escape:
            self._escape(char)
        elif char == ESCAPE:
            self.escape = char
        elif char in STOP_KEYS and not self.line.lower().startswith(TEXT_PREFIX):
            if self.line:
                self.line = ''
                self.echo('\n')
            self.on_stop()
        elif char in '\r\n':
            if char == '\n' and after_cr:
                return  # one Enter sent as CR LF
            line, self.line = self.line, ''
            self.echo('\n')
            self.on_line(line)
        else:
            self._edit(char)

    def _edit(self, char: str) -> None:
        """A key that edits the line: erase, kill the line, or a printable character."""
        if char in ERASE:
            if self.line:
                self.line = self.line[:-1]
                self.echo('\b \b')
        elif char == KILL_LINE:
            self.echo('\b \b' * len(self.line))
            self.line = ''
        elif char.isprintable():
            self.line += char
            self.echo(char)

    def _escape(self, char: str) -> None:
        """Drop an escape sequence: ESC [ ... final (CSI), ESC O x (SS3), or ESC x."""
        self.escape += char
        if len(self.escape) == 2 and char in '[O':
            return
        if len(self.escape) > 2 and self.escape[1] == '[' and not '\x40' <= char <= '\x7e':
            return
        self.escape = ''


class KeyReader:
    """Reads terminal ``fd`` key by key on a thread of its own, in cbreak mode, into a ``KeyEditor``.

    Use ``for_terminal`` (None when the stream is not a terminal this process may change: then read lines as
    before), ``start``, and ``close`` on the way out (idempotent; also run at interpreter exit).
    """

    def __init__(self, fd: int, editor: KeyEditor, *, report: Callable[[str], None] = print) -> None:
        self.fd = fd
        self.editor = editor
        self.report = report
        self.saved: list[Any] | None = None
        self.wake_read, self.wake_write = os.pipe()
        self.lock = threading.Lock()
        self.closed = False
        self.thread = threading.Thread(target=self._read, name='operator-keys', daemon=True)

    @classmethod
    def for_terminal(
        cls,
        stream: Any,
        *,
        on_stop: Callable[[], None],
        on_line: Callable[[str], None],
        report: Callable[[str], None] = print,
    ) -> KeyReader | None:
        """A reader of ``stream``'s terminal, echoing to it, or None when ``stream`` has no file descriptor or it is
        not a terminal of this process's foreground process group."""
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):
            return None
        if not isinstance(fd, int) or not foreground_terminal(fd):
            return None
        echo = _terminal_writer(fd)
        return cls(fd, KeyEditor(on_stop=on_stop, on_line=on_line, echo=echo), report=report)

    def start(self) -> bool:
        """Put the terminal in cbreak mode and start reading; False (nothing changed) when its settings cannot be
        read."""
        self.saved = terminal_settings(self.fd)
        if self.saved is None:
            return False
        import termios

        iflag, oflag, cflag, lflag, ispeed, ospeed, chars = self.saved
        chars = list(chars)
        chars[termios.VMIN], chars[termios.VTIME] = 1, 0
        lflag &= ~(termios.ICANON | termios.ECHO)  # no line buffering, no echo (ISIG stays: Ctrl-C interrupts)
        mode = [iflag, oflag, cflag, lflag, ispeed, ospeed, chars]
        atexit.register(self.close)
        try:
            termios.tcsetattr(self.fd, termios.TCSANOW, mode)
        except (OSError, termios.error):
            self.saved = None
            return False
        self.thread.start()
        return True

    def close(self) -> None:
        """Put the terminal's settings back and stop reading."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            restore_terminal(self.fd, self.saved)
            with contextlib.suppress(OSError):
                os.write(self.wake_write, b'x')
        atexit.unregister(self.close)
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(timeout=JOIN_SECONDS)
        if not self.thread.is_alive():
            for fd in (self.wake_read, self.wake_write):
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _read(self) -> None:
        decoder = codecs.getincrementaldecoder('utf-8')(errors='replace')
        while not self.closed:
            try:
                ready, _, _ = select.select([self.fd, self.wake_read], [], [])
                if self.wake_read in ready or self.closed:
                    return
                data = os.read(self.fd, 1024)
            except OSError:
                return  # the terminal went away
            if not data:
                return  # end of input
            try:
                self.editor.feed(decoder.decode(data))
            except Exception as error:  # a failing stop or line must not end the reading: the next key may work
                self.report(f'operator key failed: {type(error).__name__}: {error}')


def _terminal_writer(fd: int) -> Callable[[str], None]:
    """Write to the terminal of ``fd`` (its own device, whatever stdout is redirected to)."""
    try:
        out = os.open(os.ttyname(fd), os.O_WRONLY | os.O_NOCTTY)
    except OSError:
        return lambda _text: None

    def write(text: str) -> None:
        with contextlib.suppress(OSError):
            os.write(out, text.encode('utf-8', errors='replace'))

    return write
