"""Length-prefixed openpi msgpack frames over a pair of pipe file descriptors, with deadlines.

A frame is a 4-byte big-endian length and an ``openpi_codec`` payload (NumPy arrays as tagged maps, nothing
ever unpickled). The evaluator's side reads and writes with a deadline (``select.poll``), so that a policy
process that stops answering, or stops reading, is noticed in time; the policy's side blocks.
"""

from __future__ import annotations

import contextlib
import os
import select
import struct
import time
from typing import Any

from robofollow_ros.policy import openpi_codec

HEADER = struct.Struct('>I')
MAX_FRAME_BYTES = 64 * 1024 * 1024
"""Largest frame either side accepts: a chunk of a million rows fits, a runaway reply does not."""
READ_BYTES = 1 << 20


class FrameTooLarge(EOFError):
    """The peer announced a frame above ``MAX_FRAME_BYTES`` (the stream cannot be trusted any more)."""


def _remaining(deadline: float | None) -> int:
    """Milliseconds left until ``deadline`` for ``poll`` (-1: no deadline)."""
    if deadline is None:
        return -1
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return max(1, int(left * 1000))


class Channel:
    """One side of the pipe pair: ``send`` on ``write_fd``, ``receive`` from ``read_fd``.

    Args:
        read_fd: the descriptor replies (or requests) arrive on.
        write_fd: the descriptor this side writes to.

    ``send`` and ``receive`` raise ``TimeoutError`` past their deadline and ``EOFError`` when the other side
    has closed its end (it exited or died).
    """

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self._poll_in = select.poll()
        self._poll_in.register(read_fd, select.POLLIN)
        self._poll_out = select.poll()
        self._poll_out.register(write_fd, select.POLLOUT)

    def send(self, message: Any, *, deadline: float | None = None) -> None:
        """Write one frame (the write end must be non-blocking for a deadline to hold)."""
        payload = openpi_codec.packb(message)
        data = memoryview(HEADER.pack(len(payload)) + payload)
        while data:
            try:
                written = os.write(self.write_fd, data)
            except BlockingIOError:
                self._poll_out.poll(_remaining(deadline))
                continue
            except BrokenPipeError as error:
                raise EOFError('the other side closed the pipe') from error
            data = data[written:]

    def receive(self, *, deadline: float | None = None) -> Any:
        """Read one frame and decode it."""
        (length,) = HEADER.unpack(self._read_exact(HEADER.size, deadline))
        if length > MAX_FRAME_BYTES:
            raise FrameTooLarge(f'a frame of {length} bytes (at most {MAX_FRAME_BYTES})')
        return openpi_codec.unpackb(bytes(self._read_exact(length, deadline)))

    def _read_exact(self, size: int, deadline: float | None) -> bytearray:
        buffer = bytearray(size)
        view = memoryview(buffer)
        got = 0
        while got < size:
            if deadline is not None and not self._poll_in.poll(_remaining(deadline)):
                continue
            count = os.readv(self.read_fd, [view[got : got + READ_BYTES]])
            if count == 0:
                raise EOFError('the other side closed the pipe')
            got += count
        return buffer

    def close(self) -> None:
        """Close both descriptors."""
        for fd in {self.read_fd, self.write_fd}:
            with contextlib.suppress(OSError):
                os.close(fd)
