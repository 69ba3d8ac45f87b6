"""``robofollow collect --workers N``: N processes on this machine, each collecting one label at a time.

Each worker (``spawn``: it shares no state with this process) holds its own ``LabelCollector`` and writes the
episode files of the label it is handed; this process hands labels out in the collection's order and keeps the
books (``CollectionBook``: the ledger, the seed lists, the completion marks, the display), one ledger line per
attempt as each worker reports it, once that attempt's files are complete. A label's attempts walk its training
seeds in order in one worker, so the demonstrations are the same files whatever the number of workers. A worker
that dies mid-label is replaced and the label starts again from its last ledger line (the episode being written
is written again); workers ignore Ctrl-C, and the parent stops them, so a stopped collection resumes as a
one-process one does.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from multiprocessing.connection import Connection, wait
from typing import Any

from robofollow_ros.data.collect import CollectionBook, CollectOptions, LabelCollector
from robofollow_ros.errors import DatasetError
from robofollow_ros.evaluation.workers import send_failure

STOP_GRACE = 5.0
"""Seconds a worker gets to close its simulator before it is terminated."""
MAX_LOSSES = 3
"""Workers a label may kill before the collection stops (a label that crashes its process every time)."""


def serve_labels(connection: Connection, options: CollectOptions) -> None:
    """A worker process: collect every label received on ``connection``, reporting each attempt."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setsid()
    collector: LabelCollector | None = None
    try:
        collector = LabelCollector(options)
        while (job := connection.recv()) is not None:
            label, attempts, accepted = job

            def report(entry: dict[str, Any], wall: float, label: str = label) -> None:
                connection.send(('entry', label, entry, wall))

            collector.collect(label, attempts=attempts, accepted=accepted, report=report)
            connection.send(('done', label))
    except EOFError:
        return
    except Exception as error:  # the parent re-raises it: a one-process collection would have stopped the same way
        send_failure(connection, error)
    finally:
        if collector is not None:
            collector.close()


class _Worker:
    def __init__(self, context: Any, options: CollectOptions, number: int) -> None:
        self.connection, child = context.Pipe()
        self.process = context.Process(
            target=serve_labels, args=(child, options), name=f'robofollow-collect-{number}', daemon=True
        )
        self.process.start()
        child.close()
        self.label: str | None = None

    def hand(self, label: str, *, attempts: int, accepted: int) -> None:
        self.label = label
        self.connection.send((label, attempts, accepted))

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.connection.send(None)
        self.process.join(STOP_GRACE)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(STOP_GRACE)
        self.connection.close()


def collect_with_workers(options: CollectOptions, book: CollectionBook, *, workers: int) -> None:
    """Collect ``book``'s unfinished labels with ``workers`` processes (module docstring).

    Raises:
        DatasetError: a label killed ``MAX_LOSSES`` workers.
        Exception: what a worker raised (its collection stops as a one-process one would).
    """
    context = multiprocessing.get_context('spawn')
    todo = book.unfinished()
    losses: dict[str, int] = {}
    pool: list[_Worker] = []
    try:
        pool = [_Worker(context, options, number) for number in range(min(workers, len(todo)))]
        idle = list(pool)
        while todo or any(worker.label is not None for worker in pool):
            while idle and todo:
                label = todo.pop(0)
                tally = book.tallies[label]
                idle.pop(0).hand(label, attempts=tally.attempts, accepted=tally.accepted)
            busy = {worker.connection: worker for worker in pool if worker.label is not None}
            for ready in wait(list(busy)):
                worker = busy[ready]
                try:
                    message = worker.connection.recv()
                except (EOFError, OSError):
                    lost = worker.label
                    assert lost is not None
                    losses[lost] = losses.get(lost, 0) + 1
                    if losses[lost] >= MAX_LOSSES:
                        raise DatasetError(f'{lost} ended {MAX_LOSSES} worker processes; collection stopped') from None
                    todo.insert(0, lost)
                    pool.remove(worker)
                    worker.stop()
                    fresh = _Worker(context, options, len(pool) + sum(losses.values()))
                    pool.append(fresh)
                    idle.append(fresh)
                    continue
                kind = message[0]
                if kind == 'entry':
                    _, label, entry, wall = message
                    book.record(label, entry, wall)
                elif kind == 'done':
                    book.label_done(message[1])
                    worker.label = None
                    idle.append(worker)
                else:
                    raise message[1]
    finally:
        for worker in pool:
            worker.stop()
