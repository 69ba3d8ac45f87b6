"""``--retry-errors``: run the trials that ended in a policy error again, keeping their first records aside."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from robofollow_ros.errors import RunFolderError
from robofollow_ros.evaluation.episode_files import EPISODES_DIR, VIDEOS_DIR
from robofollow_ros.evaluation.identity import aside_folder, move_into
from robofollow_ros.evaluation.results import ResultsFile, TrialKey, jsonl_text, trial_key
from robofollow_ros.textfiles import write_atomically

FILE_FIELDS = {'episode_file': EPISODES_DIR, 'video_file': VIDEOS_DIR}
"""The record fields that name a file of the run, and the folder of the run that file must be in."""


def record_file(out: Path, record: Mapping[str, Any], field: str) -> str | None:
    """The path (relative to ``out``) a record's ``field`` names, checked to be a file of the run.

    A results file is data anyone may have edited: the path must be relative and, symbolic links resolved, lie
    inside ``out/<the field's folder>`` (``episodes/`` or ``videos/``), so that nothing outside the run folder, nor
    the run's own files, is ever moved or linked from it.

    Raises:
        RunFolderError: the path leads elsewhere (one line naming the trial and the path).
    """
    value = record.get(field)
    if not value:
        return None
    folder = (Path(out) / FILE_FIELDS[field]).resolve()
    name = str(value)
    try:
        target = (Path(out) / name).resolve()
    except (OSError, RuntimeError) as error:  # a symlink loop
        raise RunFolderError(f'{field} {name!r} of {record.get("task_id")}: cannot be resolved ({error})') from None
    if Path(name).is_absolute() or target == folder or not target.is_relative_to(folder):
        raise RunFolderError(
            f'{field} {name!r} of {record.get("task_id")} round {record.get("round")} leads outside '
            f'{Path(out) / FILE_FIELDS[field]}: refusing to move it; fix or remove that record of results.jsonl'
        )
    return name


def set_aside_failed_trials(
    out: Path, results: ResultsFile, *, wanted: Collection[TrialKey]
) -> tuple[int, Path | None]:
    """Move the records of ``wanted`` trials that ended in a policy error, with their episode and video files,
    into ``out/retried-<UTC time>/`` (nothing is deleted), so that the run plays those trials again.

    Returns:
        How many trials were set aside, and the folder that holds them (``None`` when there were none).

    Raises:
        RunFolderError: a record names a file outside its folder of the run (``record_file``); nothing is moved.
    """
    failed = [record for record in results.records if record.get('policy_error') and trial_key(record) in wanted]
    if not failed:
        return 0, None
    names = [name for record in failed for field in FILE_FIELDS if (name := record_file(out, record, field))]
    target = aside_folder(out, prefix='retried')
    move_into(out, names, target)
    write_atomically(target / 'results.jsonl', jsonl_text(failed))
    results.keep_only([record for record in results.records if record not in failed])
    return len(failed), target
