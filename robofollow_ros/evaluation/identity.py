"""Run identity: what must be equal for records to belong to one run, and the check before resuming.

Everything that changes what a trial's record means is part of the identity: the policy and its keyword
arguments, whether it is privileged, how it is isolated (``isolation``), the ground-truth variant, the episode
limits, the package and referee metric versions, and the runtime. Scenes, levels, tasks and rounds are not: a
run may be extended with more of them and stays one run.

A run folder stores its identity in ``identity.json`` when the first trial starts; every record carries the
identity's short digest as ``run_id``. Anything that writes runs (``eval``, ``collect``, the ROS evaluator)
claims its folder with ``RunLock`` and ``claim_run_folder``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from robofollow_ros.errors import RunFolderError
from robofollow_ros.textfiles import read_utf8, write_atomically

IDENTITY_NAME = 'identity.json'
OPTIONAL_FIELDS = ('runtime', 'robot', 'isolation', 'robot_profile', 'pose_source', 'policy_network')
"""Fields older identity files may lack (their defaults apply)."""
CELL_FIELDS = ('robot_profile', 'pose_source')
"""Fields only a run on a real (or fake-hardware) cell has: absent, not null, elsewhere, so that the identities of
simulated runs are what they were before real cells existed."""
ABSENT_WHEN_NONE = (*CELL_FIELDS, 'policy_network')
"""Fields left out of ``as_dict`` when None, so that identities written before they existed keep their digest."""
DIGEST_LENGTH = 12


@dataclass(frozen=True)
class RunIdentity:
    """The identity of a run; two runs may share a folder only when their identities are equal.

    Attributes:
        policy: policy name (built-in or ``module:function``).
        policy_kwargs: keyword arguments the policy was built with.
        privileged: whether the policy received the task and ground-truth poses.
        isolation: where the policy ran (``policy.factory.Isolation``: ``sandbox``, ``process``, ``trusted``,
            ``built-in``);
            identities written before isolation existed ran every policy in-process (``built-in`` or
            ``trusted``).
        variant: ground-truth / scoring variant, as the user chose it.
        max_queries: policy queries per episode.
        actions_per_query: rows executed per query.
        query_timeout: seconds one call into the policy may take.
        package_version: ``robofollow_ros.__version__``.
        metric_version: the referee's metric version.
        runtime: where episodes ran (``in-process``, ``ros-graph``...).
        robot: the simulated cell's robot (``robot.specs``); runs recorded before robots were selectable used
            the primitive one.
        robot_profile: the real cell's robot profile (``robot.profiles``; runtime ``real``), else None.
        pose_source: where the real cell's object poses came from (``sim``, ``tracker``, ``mocap``), else None.
        policy_network: the one ``host:port`` a sandboxed policy was allowed to reach (``--policy-network``), else
            None.
    """

    policy: str
    privileged: bool
    variant: str
    max_queries: int
    actions_per_query: int
    query_timeout: float
    package_version: str
    metric_version: str
    policy_kwargs: Mapping[str, Any] = field(default_factory=dict)
    runtime: str = 'in-process'
    robot: str = 'primitive'
    isolation: str = 'built-in'
    robot_profile: str | None = None
    pose_source: str | None = None
    policy_network: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The identity as plain JSON values (without the ``ABSENT_WHEN_NONE`` fields that are None)."""
        values = {key: value for key, value in asdict(self).items() if key not in ABSENT_WHEN_NONE or value is not None}
        return json.loads(json.dumps(values, sort_keys=True, default=str))

    @property
    def digest(self) -> str:
        """A short stable hash of the identity (stored in every record as ``run_id``)."""
        text = json.dumps(self.as_dict(), sort_keys=True, separators=(',', ':'))
        return hashlib.sha256(text.encode('utf-8')).hexdigest()[:DIGEST_LENGTH]

    @classmethod
    def from_dict(cls, data: Any, *, source: str) -> RunIdentity:
        """Read an identity written by ``as_dict``.

        Raises:
            RunFolderError: ``data`` lacks a field or is not a mapping.
        """
        names = [item.name for item in fields(cls)]
        if not isinstance(data, Mapping) or any(name not in data for name in names if name not in OPTIONAL_FIELDS):
            raise RunFolderError(f'{source}: not a run identity (fields: {", ".join(names)})')
        values = {name: data[name] for name in names if name in data}
        if 'isolation' not in values:
            from robofollow_ros.policy.factory import policy_isolation

            values['isolation'] = policy_isolation(str(data['policy']), trusted=True)
        return cls(**values)

    def differences(self, other: RunIdentity) -> list[str]:
        """``field: stored vs new`` for every field where ``other`` (the new run) differs from this one."""
        mine, theirs = self.as_dict(), other.as_dict()
        return [
            f'{name} {json.dumps(mine.get(name))} there vs {json.dumps(theirs.get(name))} here'
            for name in {**mine, **theirs}
            if mine.get(name) != theirs.get(name)
        ]


def read_identity(folder: Path) -> RunIdentity | None:
    """The identity stored in ``folder``, or ``None`` when it has none."""
    path = Path(folder) / IDENTITY_NAME
    if not path.exists():
        return None
    try:
        data = json.loads(read_utf8(path, what='run identity', error=RunFolderError))
    except json.JSONDecodeError as error:
        raise RunFolderError(f'{path}: not valid JSON ({error.msg}); use a new --out or --force-new') from error
    return RunIdentity.from_dict(data, source=str(path))


def aside_folder(folder: Path, *, prefix: str) -> Path:
    """A new, empty ``folder/<prefix>-<UTC time>/``."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime('%Y%m%dT%H%M%S%fZ')
    target = Path(folder) / f'{prefix}-{stamp}'
    target.mkdir()
    return target


def move_into(folder: Path, names: Iterable[str], target: Path) -> None:
    """Move the entries of ``folder`` named by paths relative to it to the same relative paths under ``target``."""
    for name in names:
        if (Path(folder) / name).exists():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(Path(folder) / name), str(target / name))


def set_aside(folder: Path, names: Iterable[str]) -> Path | None:
    """Move the named entries of ``folder`` into ``folder/superseded-<UTC time>/``; nothing is deleted."""
    present = [name for name in names if (Path(folder) / name).exists()]
    if not present:
        return None
    target = aside_folder(folder, prefix='superseded')
    move_into(folder, present, target)
    return target


def claim_run_folder(
    folder: Path,
    identity: RunIdentity,
    *,
    record_ids: Iterable[str | None],
    run_files: Iterable[str],
    force_new: bool = False,
) -> Path | None:
    """Make ``folder`` hold ``identity``'s run, or refuse in one line; call it while holding ``RunLock``.

    A folder with no identity and no records is claimed. One with the same identity is resumed. Anything
    else (another identity, or records written without one) is refused, unless ``force_new``: then the
    previous run's files are set aside (``set_aside``) and a new run starts.

    Args:
        folder: the run folder.
        identity: the identity of the run about to start.
        record_ids: ``run_id`` of every record already in the folder (``None`` for records without one).
        run_files: names of the files and folders that belong to a run (set aside with ``force_new``).
        force_new: start a new run even if the folder holds another one.

    Returns:
        Where the previous run was set aside, if it was.

    Raises:
        RunFolderError: the folder holds a different run and ``force_new`` is false.
    """
    folder = Path(folder)
    stored = read_identity(folder)
    ids = set(record_ids)
    if stored is not None:
        differences = stored.differences(identity)
        if stored.digest != identity.digest and not differences:
            differences = ['identity fields']
    elif ids and ids != {identity.digest}:
        differences = ['records written without this run identity']
    else:
        differences = []
    if stored is not None and not differences and ids - {identity.digest}:
        differences = [f'{len(ids - {identity.digest})} record(s) of other runs in the results']
    moved = None
    if differences:
        if not force_new:
            raise RunFolderError(
                f'{folder} holds a different run ({"; ".join(differences)}): '
                'choose a new --out, or pass --force-new to set the old results aside and start again'
            )
        moved = set_aside(folder, [*run_files, IDENTITY_NAME])
    if moved is not None or stored is None:
        write_atomically(folder / IDENTITY_NAME, json.dumps(identity.as_dict(), indent=2, sort_keys=True) + '\n')
    return moved
