"""The collector's background writer: same files and ledger as writing inline, in order, and a failed write keeps
its episode (and everything after it) out of the ledger."""

from __future__ import annotations

import threading
import time

import h5py
import numpy as np
import pytest

from robofollow_ros.data import collect as collect_module
from robofollow_ros.data.background import OrderedWrites
from robofollow_ros.data.collect import CollectOptions, run_collection
from robofollow_ros.data.store import open_ledger, stored_episodes
from robofollow_ros.errors import DatasetError

LABEL = 'pickup_yellow_block_1_left'
SMALL = {'width': 32, 'height': 24}


def test_writes_run_one_at_a_time_off_the_caller_thread_and_then_in_order() -> None:
    caller = threading.get_ident()
    running, most, threads, order = [0], [0], set(), []
    lock = threading.Lock()

    def write(index: int) -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        threads.add(threading.get_ident())
        time.sleep(0.02 * (index % 3))
        with lock:
            running[0] -= 1

    writes = OrderedWrites(background=True)
    try:
        for index in range(8):
            writes.submit(
                (lambda i=index: write(i)) if index % 2 == 0 else None,
                then=lambda i=index: order.append((i, threading.get_ident())),
            )
        writes.finish()
    finally:
        writes.close()
    assert [i for i, _ in order] == list(range(8))
    assert {thread for _, thread in order} == {caller}
    assert most[0] == 1 and caller not in threads


@pytest.mark.sim
def test_background_writes_give_the_inline_files_and_ledger(tmp_path) -> None:
    folders = {}
    for background in (False, True):
        out = tmp_path / ('background' if background else 'inline')
        options = CollectOptions(out=out, labels=[LABEL], episodes=2, **SMALL)
        tallies = run_collection(options, progress=False, background_writes=background)
        assert tallies[LABEL].accepted == 2
        folders[background] = out
    inline, background = (open_ledger(folders[flag]).records for flag in (False, True))
    assert inline == background and len(inline) >= 2
    pairs = list(zip(stored_episodes(folders[False]), stored_episodes(folders[True]), strict=True))
    assert len(pairs) == 2
    for a, b in pairs:
        with h5py.File(a.hdf5) as first, h5py.File(b.hdf5) as second:
            for key in ('joint_action/vector', 'action', 'observation/head_camera/rgb', 'observation/left_camera/rgb'):
                np.testing.assert_array_equal(first[key][()], second[key][()])


@pytest.mark.sim
def test_a_failed_background_write_stops_the_collection_and_stays_out_of_the_ledger(tmp_path, monkeypatch) -> None:
    written, calls = [], []
    real = collect_module.write_raw_episode

    def failing_second(path, frames, *, attrs):
        calls.append(path)
        if len(calls) == 2:
            time.sleep(0.3)  # still writing when the next attempt starts
            raise DatasetError('disk full')
        written.append(path)
        return real(path, frames, attrs=attrs)

    monkeypatch.setattr(collect_module, 'write_raw_episode', failing_second)
    options = CollectOptions(out=tmp_path, labels=[LABEL], episodes=3, **SMALL)
    with pytest.raises(DatasetError, match='disk full'):
        run_collection(options, progress=False, background_writes=True)
    records = open_ledger(tmp_path).records
    kept = [record for record in records if record['accepted']]
    assert [record['episode'] for record in kept] == [0], records
    assert len(calls) == 2 and len(written) == 1 and written[0].is_file()
    assert sorted(written[0].parent.glob('*.hdf5')) == written, 'no episode is written after a failed write'
    # A rerun resumes after the last recorded attempt and writes the lost episode again.
    monkeypatch.setattr(collect_module, 'write_raw_episode', real)
    tallies = run_collection(options, progress=False)
    assert tallies[LABEL].accepted == 3
    assert len(stored_episodes(tmp_path)) == 3
