"""What a killed run leaves in its folder, and the only things a resume removes.

Every file the run publishes is first written under ``textfiles.partial_path``: a hidden ``.<name>.partial-<pid>``
next to its final name (``run.json``, ``identity.json``, ``results.jsonl``, an episode's JSON file or bag folder,
whether the evaluator or the ROS graph's recorder writes it, a trial's video). A kill can leave one behind. A
resume removes such a temporary only when it can prove it is the run's own stale output: the name it would
publish is one the run writes (a run file, ``<task>__rNN`` or ``<task>__rNN.json`` in ``episodes/``,
``<task>__rNN.mp4`` in ``videos/``) and the process that wrote it is gone. It also removes a published episode
of one of the run's own trials that no record refers to (a kill between publishing the episode and writing its
record). Anything else in the folder (a user's notes, a copied bag, a live writer's temporary) is left alone.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Collection, Iterable
from pathlib import Path

from robofollow_ros.evaluation.episode_files import EPISODES_DIR, VIDEOS_DIR
from robofollow_ros.evaluation.identity import IDENTITY_NAME
from robofollow_ros.evaluation.results import RESULTS_NAME
from robofollow_ros.evaluation.status import RUN_NAME
from robofollow_ros.textfiles import partial_owner

RUN_FILE_NAMES = frozenset({RUN_NAME, IDENTITY_NAME, RESULTS_NAME})
"""The files at the top of a run folder that are written through a temporary."""
_EPISODE_NAME = re.compile(r'[\w-]+__r[0-9]{2,}(\.json)?')
_VIDEO_NAME = re.compile(r'[\w-]+__r[0-9]{2,}\.mp4')


def process_gone(pid: int) -> bool:
    """Whether no process ``pid`` exists (this process counts as gone: the caller holds the run's lock, so no
    write of its own into the folder is under way)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process
        return False
    return False


def is_stale_partial(path: Path, *, publishes: re.Pattern[str] | Collection[str]) -> bool:
    """Whether ``path`` is a temporary of ``partial_path`` whose final name is one the run writes (a name in the
    collection, or matching the pattern) and whose writer is gone."""
    owner = partial_owner(path)
    if owner is None:
        return False
    name, pid = owner
    ours = publishes.fullmatch(name) is not None if isinstance(publishes, re.Pattern) else name in publishes
    return ours and process_gone(pid)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def clean_run_leftovers(out: Path, *, stems: Collection[str], referenced: Iterable[str]) -> list[Path]:
    """Remove the run's stale temporaries and the unrecorded episodes of its own trials; returns what was removed.

    Call it while holding the run's lock (``RunLock``).

    Args:
        out: the run folder.
        stems: ``episode_files.episode_stem`` of every trial of the run.
        referenced: ``episode_file`` values of the records (paths relative to ``out``).
    """
    out = Path(out)
    found = [entry for entry in _entries(out) if is_stale_partial(entry, publishes=RUN_FILE_NAMES)]
    found += [entry for entry in _entries(out / VIDEOS_DIR) if is_stale_partial(entry, publishes=_VIDEO_NAME)]
    recorded = {Path(name).name for name in referenced}
    own = {*stems, *(f'{stem}.json' for stem in stems)} - recorded
    for entry in _entries(out / EPISODES_DIR):
        if is_stale_partial(entry, publishes=_EPISODE_NAME) or (entry.name in own and not entry.is_symlink()):
            found.append(entry)
    for entry in found:
        _remove(entry)
    return found


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.iterdir()) if folder.is_dir() and not folder.is_symlink() else []
