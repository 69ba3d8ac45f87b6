"""``--retry-errors``: run the trials that ended in a policy error again, keeping their first records aside."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from robofollow_ros.evaluation.identity import aside_folder, move_into
from robofollow_ros.evaluation.results import ResultsFile, TrialKey, jsonl_text, trial_key
from robofollow_ros.textfiles import write_atomically

FILE_FIELDS = ('episode_file', 'video_file')


def set_aside_failed_trials(
    out: Path, results: ResultsFile, *, wanted: Collection[TrialKey]
) -> tuple[int, Path | None]:
    """Move the records of ``wanted`` trials that ended in a policy error, with their episode and video files,
    into ``out/retried-<UTC time>/`` (nothing is deleted), so that the run plays those trials again.

    Returns:
        How many trials were set aside, and the folder that holds them (``None`` when there were none).
    """
    failed = [record for record in results.records if record.get('policy_error') and trial_key(record) in wanted]
    if not failed:
        return 0, None
    target = aside_folder(out, prefix='retried')
    move_into(out, [str(record[name]) for record in failed for name in FILE_FIELDS if record.get(name)], target)
    write_atomically(target / 'results.jsonl', jsonl_text(failed))
    results.keep_only([record for record in results.records if record not in failed])
    return len(failed), target
