"""``run.json``: what a run folder holds, kept true after every trial and whenever the run stops.

``status`` is ``running`` while trials are being written, ``complete`` at the end, ``interrupted`` after
SIGINT / SIGTERM (with the signal as ``reason``) and ``failed`` after an error (with the error as
``reason``). The counts are those of the records actually written.
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import resource
import subprocess
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal

from robofollow_ros.evaluation.identity import RunIdentity
from robofollow_ros.textfiles import write_atomically

RUN_NAME = 'run.json'
Status = Literal['running', 'complete', 'interrupted', 'failed']


@cache
def git_commit() -> str | None:
    """The commit of the package's source tree, when it is a git checkout."""
    try:
        result = subprocess.run(
            ['git', 'rev-parse', 'HEAD'], capture_output=True, text=True, check=True, cwd=Path(__file__).parent
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return result.stdout.strip() or None


def trial_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Trials written, scored, with policy errors (by kind) and completed."""
    records = list(records)
    errors = Counter(str(record.get('error_kind') or 'error') for record in records if record.get('policy_error'))
    return {
        'trials': len(records),
        'scored': sum(record.get('scored', True) is not False for record in records),
        'with_errors': sum(errors.values()),
        'errors_by_kind': dict(sorted(errors.items())),
        'completed': sum(bool(record.get('completion_ok')) for record in records),
    }


def counts_line(counts: Mapping[str, Any]) -> str:
    """``12 trials: 10 scored, 2 with policy errors (timeout 1, build 1), 3 completed``."""
    kinds = ', '.join(f'{kind} {number}' for kind, number in counts['errors_by_kind'].items())
    errors = f'{counts["with_errors"]} with policy errors' + (f' ({kinds})' if kinds else '')
    return f'{counts["trials"]} trials: {counts["scored"]} scored, {errors}, {counts["completed"]} completed'


def write_status(
    out: Path,
    *,
    identity: RunIdentity,
    options: Mapping[str, Any],
    status: Status,
    expected: int,
    records: Iterable[Mapping[str, Any]],
    reason: str | None = None,
) -> dict[str, Any]:
    """Rewrite ``out/run.json`` atomically and return what was written."""
    counts = trial_counts(records)
    run = {
        'status': status,
        'reason': reason,
        'updated': _dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds'),
        'run_id': identity.digest,
        'identity': identity.as_dict(),
        'privileged': identity.privileged,
        'isolation': identity.isolation,
        'robofollow_ros': identity.package_version,
        'git_commit': git_commit(),
        'python': platform.python_version(),
        'metric_version': identity.metric_version,
        'runtime': identity.runtime,
        'completion_aggregation': 'task-macro',
        'options': dict(options),
        'expected_trials': expected,
        'completed_trials': counts['trials'],
        'counts': counts,
        'peak_rss_mib': round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
    }
    write_atomically(out / RUN_NAME, json.dumps(run, indent=2, default=str) + '\n')
    return run
