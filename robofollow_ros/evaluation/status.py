"""``run.json``: what a run folder holds, kept true after every trial and whenever the run stops.

``status`` is ``running`` while trials are being written, ``complete`` at the end, ``interrupted`` after
SIGINT / SIGTERM (with the signal as ``reason``) and ``failed`` after an error (with the error as
``reason``). The counts are those of the records actually written. On a real cell ``layout_checks`` sums up the
trials' layout checks (``layout_check`` in each record): how many were checked, how many passed, and every override
with its reason; a run without layout checks has no such field.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import resource
import subprocess
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal

from robofollow_ros.evaluation.digests import DIGESTS_NAME, RunDigests
from robofollow_ros.evaluation.identity import RunIdentity
from robofollow_ros.evaluation.real_time import trials_not_real_time
from robofollow_ros.textfiles import write_atomically

RUN_NAME = 'run.json'
Status = Literal['running', 'complete', 'interrupted', 'failed']


COMMIT_VARIABLE = 'ROBOFOLLOW_GIT_COMMIT'
BUILD_COMMIT = Path(__file__).resolve().parents[1] / 'BUILD_COMMIT'
"""Written by ``setup.py`` when the package is built from a git checkout (``colcon build``, ``pip install .``)."""


@cache
def git_commit() -> str | None:
    """The commit of the package's source: ``ROBOFOLLOW_GIT_COMMIT`` when whoever starts the run sets it, else
    the git checkout the package is imported from (symbolic links followed, as ``colcon build --symlink-install``
    makes them), else the commit recorded when the installed copy was built (``BUILD_COMMIT``: under the real
    ``ros2 launch`` the nodes import the copy that ``colcon build`` installed, no git checkout). Never the
    current directory's repository."""
    given = os.environ.get(COMMIT_VARIABLE, '').strip()
    if given:
        return given
    try:
        result = subprocess.run(
            ['git', 'rev-parse', 'HEAD'],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent,
            env={**os.environ, 'GIT_CEILING_DIRECTORIES': str(Path(__file__).resolve().parents[2].parent)},
        )
        if result.stdout.strip():
            return result.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    try:
        return BUILD_COMMIT.read_text(encoding='utf-8').strip() or None
    except OSError:
        return None


def trial_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Trials written, scored, with policy errors (by kind) and completed."""
    records = list(records)
    errors = Counter(str(record.get('error_kind') or 'error') for record in records if record.get('policy_error'))
    counts = {
        'trials': len(records),
        'scored': sum(record.get('scored', True) is not False for record in records),
        'with_errors': sum(errors.values()),
        'errors_by_kind': dict(sorted(errors.items())),
        'completed': sum(bool(record.get('completion_ok')) for record in records),
    }
    interventions: Counter[str] = Counter()
    for record in records:
        if isinstance(record.get('interventions'), Mapping):
            interventions.update({str(k): int(v) for k, v in record['interventions'].items() if isinstance(v, int)})
    if interventions:
        counts['interventions_by_kind'] = dict(sorted(interventions.items()))
        counts['trials_with_interventions'] = sum(bool(record.get('interventions')) for record in records)
    if any('real_time' in record for record in records):
        counts['trials_not_real_time'] = trials_not_real_time(records)
    return counts


def counts_line(counts: Mapping[str, Any]) -> str:
    """``12 trials: 10 scored, 2 with policy errors (timeout 1, build 1), 3 completed``."""
    kinds = ', '.join(f'{kind} {number}' for kind, number in counts['errors_by_kind'].items())
    errors = f'{counts["with_errors"]} with policy errors' + (f' ({kinds})' if kinds else '')
    line = f'{counts["trials"]} trials: {counts["scored"]} scored, {errors}, {counts["completed"]} completed'
    if counts.get('interventions_by_kind'):
        safety = ', '.join(f'{kind} {number}' for kind, number in counts['interventions_by_kind'].items())
        line += f'; the safety layer stepped in on {counts["trials_with_interventions"]} ({safety})'
    if counts.get('trials_not_real_time'):
        line += f'; the cell did not keep real time in {counts["trials_not_real_time"]} (their records say how)'
    return line


def layout_checks(records: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The layout checks of a real cell's records: ``checked``, ``passed`` and the ``overridden`` trials (task,
    round, reason, the objects that failed), or None when no record has one."""
    checks = [(record, record['layout_check']) for record in records if isinstance(record.get('layout_check'), Mapping)]
    if not checks:
        return None
    overridden = [
        {
            'task_id': record.get('task_id'),
            'round': record.get('round'),
            'override': check['override'],
            'failed': [o['name'] for o in check.get('objects', ()) if not o.get('passed')]
            + list(check.get('missing', ())),
        }
        for record, check in checks
        if check.get('override') is not None
    ]
    passed = sum(bool(check.get('passed')) for _record, check in checks)
    return {'checked': len(checks), 'passed': passed, 'overridden': overridden}


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
    records = list(records)
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
        'pid': os.getpid(),
        'host': platform.node(),
    }
    layout = layout_checks(records)
    if layout is not None:
        run['layout_checks'] = layout
    write_atomically(out / RUN_NAME, json.dumps(run, indent=2, default=str) + '\n')
    return run


def stale_running(run: Mapping[str, Any]) -> str | None:
    """Why a ``running`` run.json is not running any more (its process on this host is gone: killed, or the
    machine went down), or None. A process that cannot write its last status (SIGKILL, OOM) leaves ``running``."""
    pid, host = run.get('pid'), run.get('host')
    if run.get('status') != 'running' or not isinstance(pid, int) or host != platform.node():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f'run.json says running, but its process {pid} is gone (killed?): the same command resumes the run'
    except PermissionError:
        return None
    return None


def amend_status(out: Path, *, status: Status, reason: str | None) -> None:
    """Change the status and reason of an existing ``out/run.json`` (what stopped a run over the graph is known
    to the launcher that saw a node die, not to the evaluator it then stopped), and its digest with it (a resume
    refuses a run.json that differs from its digest); nothing if there is none."""
    path = out / RUN_NAME
    try:
        run = json.loads(path.read_text(encoding='utf-8'))
    except (OSError, ValueError):
        return
    run.update(status=status, reason=reason, updated=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds'))
    write_atomically(path, json.dumps(run, indent=2, default=str) + '\n')
    if (out / DIGESTS_NAME).exists():
        RunDigests(out).update([RUN_NAME])
