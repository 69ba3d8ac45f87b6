"""A policy that answers every query with the next chunk of a file, for the bridge fuzz (``bench/bench_fuzz.py``,
``test/test_bridge_fuzz.py``): a ``module:function`` policy that runs in the bridge's sandbox, where the file must lie
in the folder the sandbox may read and write (``policy_scratch``).

``replay(chunks=<file>, scratch=<folder>)`` serves the file's chunks in order, one per query, across episodes and
across instances (a new instance after a crash or a timeout carries on where the last one stopped): the count
served is kept in ``scratch`` (default: the file's folder) as ``served`` (one integer, replaced atomically) and each
chunk served is a line of ``served.log``: its index, the wall clock (ns) and the 14 state values it observed (exact
``repr`` floats), so that the bench can rebuild exactly what was returned. Once every chunk was served it answers one
row at the observed state (not counted).

The file is a ``.npz`` written by ``bench/hostile_chunks.py`` (``save``): ``c<i>`` holds chunk i's data (any shape
and dtype), ``anchors`` (N, 14) which columns are offsets from the observed state, ``forms`` whether it is returned
as the array, as nested lists, as ragged lists, as text or as None; or a ``.npy`` of shape (N, T, 14), every chunk
absolute. What the bridge makes of a chunk (refused, filtered, sent) is its business: this policy never checks.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

SERVED = 'served'
SERVED_LOG = 'served.log'


def serve(data: np.ndarray, anchor: np.ndarray, form: str, state: np.ndarray) -> Any:
    """``data`` with its ``anchor`` columns offset by ``state`` (14,), returned in its ``form``."""
    value: Any = data
    if anchor.any() and data.ndim == 2 and data.shape[1] == 14 and data.dtype.kind == 'f':
        offset = np.where(anchor, np.asarray(state, dtype=np.float64), 0.0)
        value = (data.astype(np.float64) + offset).astype(data.dtype)
    if form == 'list':
        return np.asarray(value).tolist()
    if form == 'ragged':
        rows = np.asarray(value).tolist()
        if rows and isinstance(rows[-1], list) and rows[-1]:
            rows[-1] = rows[-1][:-1]
        return rows
    if form == 'text':
        return str(np.asarray(value).tolist())
    if form == 'none':
        return None
    return value


class ChunkFile:
    """The chunks of a ``.npz`` (read lazily, one member per chunk) or of a ``.npy`` (N, T, 14)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.stack: np.ndarray | None = None
        self.archive: Any = None
        if self.path.suffix == '.npy':
            self.stack = np.load(self.path, mmap_mode='r', allow_pickle=False)
            self.count = len(self.stack)
            self.kinds = np.array(['replayed'] * self.count)
            self.anchors = np.zeros((self.count, 14), dtype=bool)
            self.forms = np.array(['array'] * self.count)
        else:
            self.archive = np.load(self.path, allow_pickle=False)
            self.kinds = self.archive['kinds']
            self.anchors = self.archive['anchors']
            self.forms = self.archive['forms']
            self.count = len(self.kinds)

    def __len__(self) -> int:
        return self.count

    def data(self, index: int) -> np.ndarray:
        if self.stack is not None:
            return np.array(self.stack[index])
        return self.archive[f'c{index}']

    def served(self, index: int, state: np.ndarray) -> Any:
        """What chunk ``index`` returns when the policy observes ``state``."""
        return serve(self.data(index), np.asarray(self.anchors[index]), str(self.forms[index]), state)


def served_count(scratch: str | Path) -> int:
    """How many chunks the policy has served (0 before the first)."""
    try:
        return int((Path(scratch) / SERVED).read_text().strip() or 0)
    except FileNotFoundError:
        return 0


def read_log(scratch: str | Path) -> list[tuple[int, int, np.ndarray]]:
    """``served.log``: per chunk served, its index, the wall clock (ns) and the state observed (14,)."""
    path = Path(scratch) / SERVED_LOG
    if not path.exists():
        return []
    entries = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 16:
            entries.append((int(parts[0]), int(parts[1]), np.array([float(v) for v in parts[2:]])))
    return entries


class Replay:
    """The replaying policy (module docstring)."""

    needs_images = False

    def __init__(self, chunks: str, scratch: str | None = None) -> None:
        self.file = ChunkFile(chunks)
        self.scratch = Path(scratch) if scratch else self.file.path.parent
        self.served = served_count(self.scratch)

    def reset(self) -> None:
        pass

    def set_instruction(self, text: str) -> None:
        pass

    def predict(self, observation: Any) -> Any:
        state = np.asarray(observation.state, dtype=np.float64)
        index = self.served
        if index >= len(self.file):
            return state[None, :].copy()
        chunk = self.file.served(index, state)
        line = ' '.join([str(index), str(time.time_ns()), *(repr(float(v)) for v in state)])
        with (self.scratch / SERVED_LOG).open('a') as log:
            log.write(line + '\n')
        self.served = index + 1
        partial = self.scratch / f'{SERVED}.{os.getpid()}'
        partial.write_text(str(self.served))
        partial.replace(self.scratch / SERVED)
        return chunk


def replay(chunks: str, scratch: str | None = None) -> Replay:
    """The policy serving ``chunks`` in order (see the module docstring)."""
    return Replay(chunks, scratch)
