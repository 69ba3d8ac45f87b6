"""The Fast DDS shared-memory segments that a graph's nodes leave when they do not exit cleanly, and their removal.

Fast DDS's shared-memory transport gives every participant a data segment in ``/dev/shm``, ``fastdds_<16 hex>``
(``fastrtps_`` in Fast DDS 2, Jazzy), 16 MiB with the shipped profile. Its name is random, and its owner holds the
lock file next to it (the name plus ``_el``) locked (``flock``) from before the segment exists until it removes both
on a clean exit; a killed participant leaves both behind. Fast DDS's own rule (``fastdds shm clean``, and a reader
that had the segment mapped): a segment whose lock nobody holds is abandoned. Only the segments whose locks the
supervisor saw a node of its own hold are candidates here, and those still locked stay.

The listening ports' files (``fastdds_port<N>``, 52 KiB, with ``_el``/``_sl`` locks and a semaphore) are left alone:
their names are port numbers that any process on the host may open next (the ports from 7000 up in any domain), and
removing one while another process opens it would leave that process listening on a file nobody else can find.
Fast DDS resets an abandoned port when it opens it again. Data-sharing segments (``fast_datasharing_*``) have no
lock to tell an owner by, and are left alone too.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterable
from pathlib import Path

SHM_DIR = Path('/dev/shm')
LOCK_SUFFIX = '_el'
SEGMENT_LOCK = re.compile(r'(?P<segment>fast(?:dds|rtps)_[0-9a-f]{16})' + LOCK_SUFFIX)


def held_segment_locks(pid: int, shm_dir: Path = SHM_DIR) -> set[str]:
    """The names of the Fast DDS segment lock files that process ``pid`` holds open (empty if it is gone or not
    readable)."""
    held = set()
    with contextlib.suppress(OSError):
        for entry in os.scandir(f'/proc/{pid}/fd'):
            with contextlib.suppress(OSError):
                target = Path(os.readlink(entry.path))
                if target.parent == shm_dir and SEGMENT_LOCK.fullmatch(target.name):
                    held.add(target.name)
    return held


def remove_abandoned(locks: Iterable[str], shm_dir: Path = SHM_DIR) -> list[Path]:
    """Remove the segments of ``locks`` (lock file names, as ``held_segment_locks`` gives them) that nobody holds
    any more, with their lock files; returns the files removed."""
    removed = []
    for segment in sorted({match['segment'] for match in map(SEGMENT_LOCK.fullmatch, locks) if match}):
        if in_use(segment, shm_dir):
            continue
        for path in (shm_dir / segment, shm_dir / f'{segment}{LOCK_SUFFIX}'):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed


def in_use(segment: str, shm_dir: Path = SHM_DIR) -> bool:
    """Whether a live process holds the lock of ``segment`` (as Fast DDS tells a live owner: an exclusive ``flock``
    of it fails)."""
    try:
        descriptor = os.open(shm_dir / f'{segment}{LOCK_SUFFIX}', os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # not ours to judge
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(descriptor)
    return False
