"""``OrderedWrites``: episode files written on a background thread while the next episode simulates.

JPEG (OpenCV), H.264 (FFmpeg) and HDF5 release the GIL while they work, so a writer thread uses the second core
while the main thread steps and renders the next attempt. At most one write is in flight (a demonstration's raw
frames are ~100 MB, so they must not pile up), and what follows a write on the main thread (its ledger line, the
label's seed list) runs in submission order and only once the write has succeeded: the ledger never names an
episode whose files are not complete.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor


class OrderedWrites:
    """Runs ``write`` callables one at a time on a background thread (or inline), and their ``then`` callables on
    the caller's thread in submission order once each write is done.

    Args:
        background: write on a background thread; False writes inline in ``submit`` (the one-core way).
    """

    def __init__(self, *, background: bool = True) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix='episode-writer') if background else None
        self._pending: deque[tuple[Future[None] | None, Callable[[], None]]] = deque()

    def submit(self, write: Callable[[], None] | None, then: Callable[[], None]) -> None:
        """Queue ``write`` (None: nothing to write) and what to do after it; waits for the write in flight first.

        Raises:
            Exception: an earlier write failed (its error, unchanged); nothing after it has run.
        """
        if write is not None and self._pool is not None:
            # The earlier write must have succeeded before this one starts, so that no files follow a failure.
            self.finish()
            future = self._pool.submit(write)
            self._pending.append((future, then))
        else:
            if write is not None:
                write()
            self._pending.append((None, then))
        self.drain()

    def drain(self) -> None:
        """Run the ``then`` of every finished write at the front of the queue, in order.

        Raises:
            Exception: a write failed (its error).
        """
        while self._pending:
            future, then = self._pending[0]
            if future is not None and not future.done():
                return
            self._pending.popleft()
            if future is not None:
                future.result()
            then()

    def finish(self) -> None:
        """Wait for every write and run every ``then``.

        Raises:
            Exception: a write failed (its error).
        """
        self._wait_all()
        self.drain()

    def _wait_all(self) -> None:
        for future, _ in list(self._pending):
            if future is not None:
                future.exception()

    def close(self) -> None:
        """Wait for the write in flight (its files are complete or absent) and stop the thread; what was not
        drained is dropped, so its ledger line is not written and a resumed collection repeats that attempt."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
