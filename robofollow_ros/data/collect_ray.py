"""``robofollow collect --ray [ADDRESS]``: the labels collected on Ray actors, their files sent back to this process.

Each actor (one CPU) holds a ``LabelCollector`` that writes into a scratch folder of its own node and collects a
label's next attempts (at most ``ATTEMPTS_PER_CALL`` per call, walking the label's training seeds in order from
where its ledger stopped); it answers each attempt's ledger entry, its wall time and the files it wrote (bytes, by
their path in the collection), so the nodes need no shared file system. This process writes the files into the
collection and then the attempt's ledger line, in order (``CollectionBook``, as ``--workers`` does), and hands the
label to the same actor again until it is done. What a label holds depends on its seeds only, so the files are
those of a one-process collection. An actor lost with its node gives its label back to the queue from its last
ledger line (as a resumed collection starts it); the collection stops when no actor is left. Ray is started and
bound as for ``robofollow eval --ray`` (``evaluation.ray_workers``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from robofollow_ros.data.collect import CollectionBook, CollectOptions, LabelCollector
from robofollow_ros.errors import DatasetError, WorkerLostError

ATTEMPTS_PER_CALL = 4
"""Attempts an actor makes before it answers: the ledger and the progress display follow within a few episodes."""

Attempt = tuple[dict[str, Any], float, dict[str, bytes]]
"""One attempt as an actor answers it: its ledger entry, its wall seconds, its files by path in the collection."""


class RemoteCollector:
    """A Ray actor's state: a ``LabelCollector`` writing into a scratch folder of the actor's node."""

    def __init__(self, options: CollectOptions) -> None:
        self.scratch = Path(tempfile.mkdtemp(prefix='robofollow-collect-'))
        self.collector = LabelCollector(replace(options, out=self.scratch), background_writes=False)

    def collect(self, label: str, attempts: int, accepted: int, most: int) -> list[Attempt]:
        """At most ``most`` attempts of ``label`` from attempt number ``attempts`` (``accepted`` kept so far)."""
        answered: list[Attempt] = []

        def report(entry: dict[str, Any], wall: float) -> None:
            answered.append((entry, wall, self.take_files()))

        self.collector.collect(label, attempts=attempts, accepted=accepted, report=report, most=most)
        return answered

    def take_files(self) -> dict[str, bytes]:
        """Every file in the scratch folder by its relative path, removed from it."""
        files: dict[str, bytes] = {}
        for path in sorted(self.scratch.rglob('*')):
            if path.is_file():
                files[path.relative_to(self.scratch).as_posix()] = path.read_bytes()
                path.unlink()
        return files

    def close(self) -> None:
        """Release the simulator and remove the scratch folder."""
        try:
            self.collector.close()
        finally:
            shutil.rmtree(self.scratch, ignore_errors=True)


def write_files(out: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` (relative path: bytes) under ``out``, each whole or not at all (a temporary name, then
    renamed).

    Raises:
        DatasetError: a path that leaves ``out``.
    """
    root = out.resolve()
    for relative, data in files.items():
        target = (root / relative).resolve()
        if not target.is_relative_to(root):
            raise DatasetError(f'a Ray actor sent a file outside the collection: {relative!r}')
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f'.{target.name}.partial')
        partial.write_bytes(data)
        os.replace(partial, target)


@dataclass
class _Actor:
    handle: Any
    label: str | None = None


def collect_on_ray(
    options: CollectOptions, book: CollectionBook, *, address: str | None, workers: int, start_timeout: float
) -> int:
    """Collect ``book``'s unfinished labels on Ray actors (module docstring): ``workers`` of them, or one per CPU of
    the cluster when 0. Returns how many actors were lost.

    Raises:
        RoboFollowError: Ray is missing or did not start (one line).
        WorkerLostError: every actor was lost (resume when the cluster is back).
        Exception: what an actor raised (the collection stops as a one-process one would).
    """
    from robofollow_ros.evaluation.ray_workers import connect_ray

    ray, owned = connect_ray(address=address, cpus=workers, start_timeout=start_timeout)
    from ray.exceptions import RayActorError, RayTaskError

    remote = ray.remote(num_cpus=1, max_restarts=0)(RemoteCollector)
    todo = book.unfinished()
    count = workers or max(1, int(ray.cluster_resources().get('CPU', 1)))
    actors = [_Actor(remote.remote(options)) for _ in range(min(count, len(todo)))]
    in_flight: dict[Any, _Actor] = {}
    lost = 0

    def hand(actor: _Actor, label: str) -> None:
        tally = book.tallies[label]
        actor.label = label
        in_flight[actor.handle.collect.remote(label, tally.attempts, tally.accepted, ATTEMPTS_PER_CALL)] = actor

    try:
        while True:
            for actor in actors:
                if actor.label is None and todo:
                    hand(actor, todo.pop(0))
            if not in_flight:
                return lost
            (ref,), _ = ray.wait(list(in_flight), num_returns=1)
            actor = in_flight.pop(ref)
            label, actor.label = actor.label, None
            assert label is not None
            try:
                answered: list[Attempt] = ray.get(ref)
            except RayActorError:
                lost += 1
                actors.remove(actor)
                ray.kill(actor.handle)
                todo.insert(0, label)
                if not actors:
                    raise WorkerLostError(
                        'every Ray actor is lost; resume the collection when the cluster is back'
                    ) from None
                continue
            except RayTaskError as error:
                raise error.as_instanceof_cause() from None
            for entry, wall, files in answered:
                write_files(options.out, files)
                book.record(label, entry, wall)
            if label in book.unfinished() and answered:
                hand(actor, label)
            else:
                book.label_done(label)
    finally:
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.get(actor.handle.close.remote(), timeout=10)
            ray.kill(actor.handle)
        if owned:
            ray.shutdown()
