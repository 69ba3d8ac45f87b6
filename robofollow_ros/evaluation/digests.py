"""``OUT/files.sha256``: the SHA-256 of every file a run wrote, so that a file changed afterwards is told apart.

The run's single writer updates the list after each trial (its record, its episode, its video) and after each
``run.json``; ``sha256sum -c files.sha256`` in the run folder checks it without robofollow. ``results.jsonl`` grows
by a record per trial: its entry covers the file as it was after the last record, and records appended past that
(a run killed between writing a record and its digest) are reported as unverified, not as changed. A resume
refuses a folder whose files changed, and ``report`` and ``score`` refuse records and episodes that did.

This is tamper evidence against everything that does not rewrite this list too (a policy cannot: the sandbox
never shows it the run folder), not a signature: anyone who may write the folder may rewrite the list.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from robofollow_ros.errors import RunFolderError
from robofollow_ros.textfiles import write_atomically

DIGESTS_NAME = 'files.sha256'
GROWING = 'results.jsonl'
"""The one file that grows after its digest is taken; its entry carries the size the digest covers."""
UNVERIFIED = 'not verified: a run stopped between a record and its digest, or an edit'
CHUNK_BYTES = 1 << 20
MAX_LIST_BYTES = 64 * 1024 * 1024


def file_digest(path: Path, *, size: int | None = None) -> str:
    """SHA-256 (hex) of ``path``'s first ``size`` bytes (all of it when ``None``)."""
    digest = hashlib.sha256()
    left = size
    with open(path, 'rb') as stream:
        while left is None or left > 0:
            block = stream.read(CHUNK_BYTES if left is None else min(CHUNK_BYTES, left))
            if not block:
                break
            digest.update(block)
            if left is not None:
                left -= len(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class Entry:
    """One file of the list: its digest, and for the growing results file the bytes the digest covers."""

    digest: str
    size: int | None = None


def _files_of(out: Path, paths: Iterable[str | Path]) -> list[str]:
    names = []
    for path in paths:
        full = Path(out) / path
        members = sorted(p for p in full.rglob('*') if p.is_file()) if full.is_dir() else [full]
        names += [member.relative_to(out).as_posix() for member in members if member.is_file()]
    return names


class RunDigests:
    """The digest list of the run folder ``out`` (read when it exists).

    Raises:
        RunFolderError: the list exists but cannot be read.
    """

    def __init__(self, out: Path) -> None:
        self.out = Path(out)
        self.path = self.out / DIGESTS_NAME
        self.entries: dict[str, Entry] = read_digests(self.path) if self.path.exists() else {}

    def update(self, paths: Iterable[str | Path]) -> None:
        """Digest ``paths`` (files, or folders such as bags: every file inside) relative to ``out``, and rewrite the
        list."""
        for name in _files_of(self.out, paths):
            full = self.out / name
            if name == GROWING:
                size = full.stat().st_size
                self.entries[name] = Entry(file_digest(full, size=size), size)
            else:
                self.entries[name] = Entry(file_digest(full))
        lines = [f'{entry.digest}  {name}\n' for name, entry in sorted(self.entries.items())]
        sizes = [f'# size {entry.size} {name}\n' for name, entry in sorted(self.entries.items()) if entry.size]
        write_atomically(self.path, ''.join(lines + sizes))

    def forget(self, names: Iterable[str]) -> None:
        """Drop entries (files the run itself moved aside or deleted)."""
        for name in names:
            self.entries.pop(str(name), None)

    def problems(self, names: Iterable[str] | None = None) -> list[str]:
        """What changed: ``<file> changed``, ``<file> is missing``, ``<file>: N bytes written after its digest``, for
        ``names`` (relative to ``out``; all listed files when ``None``)."""
        wanted = self.entries if names is None else {n: self.entries[n] for n in names if n in self.entries}
        found = []
        for name, entry in sorted(wanted.items()):
            full = self.out / name
            try:
                if entry.size is not None:
                    actual = full.stat().st_size
                    if actual < entry.size or file_digest(full, size=entry.size) != entry.digest:
                        found.append(f'{name} changed')
                    elif actual > entry.size:
                        found.append(f'{name}: {actual - entry.size} bytes written after its digest ({UNVERIFIED})')
                elif file_digest(full) != entry.digest:
                    found.append(f'{name} changed')
            except FileNotFoundError:
                found.append(f'{name} is missing')
            except OSError as error:
                found.append(f'{name} cannot be read ({error.strerror})')
        return found

    def changed(self, names: Iterable[str] | None = None) -> list[str]:
        """``problems`` without the unverified tail of the results file."""
        return [problem for problem in self.problems(names) if 'after its digest' not in problem]


def read_digests(path: Path) -> dict[str, Entry]:
    """The entries of a digest list.

    Raises:
        RunFolderError: unreadable, too large, or a line that is not ``<64 hex>  <name>`` or a size comment.
    """
    try:
        if os.path.getsize(path) > MAX_LIST_BYTES:
            raise RunFolderError(f'{path}: larger than {MAX_LIST_BYTES // (1024 * 1024)} MiB; not a digest list')
        text = Path(path).read_text(encoding='utf-8')
    except (OSError, UnicodeDecodeError) as error:
        raise RunFolderError(f'{path}: cannot be read ({error})') from error
    digests: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith('# size '):
            size, _, name = line[len('# size ') :].partition(' ')
            if not size.isdigit() or len(size) > 18:
                raise RunFolderError(f'{path}:{number}: not a size line')
            sizes[name] = int(size)
            continue
        digest, separator, name = line.partition('  ')
        if not separator or len(digest) != 64 or any(c not in '0123456789abcdef' for c in digest) or not name:
            raise RunFolderError(f'{path}:{number}: not a "<sha256>  <file>" line')
        digests[name] = digest
    return {name: Entry(digest, sizes.get(name)) for name, digest in digests.items()}


def check_unchanged(out: Path, *, names: Iterable[str] | None = None, what: str, advice: str = '') -> list[str]:
    """Refuse files of the run ``out`` changed since the run wrote them; returns the unverified-tail notes.

    Raises:
        RunFolderError: one line naming the changed or missing files (``what`` says what is refused, ``advice`` what
            to do).
    """
    if not (Path(out) / DIGESTS_NAME).exists():
        return []
    digests = RunDigests(out)
    changed = digests.changed(names)
    if changed:
        shown = ', '.join(changed[:3]) + (f' and {len(changed) - 3} more' if len(changed) > 3 else '')
        raise RunFolderError(
            f'{what}: {shown} since the run wrote {"it" if len(changed) == 1 else "them"} '
            f'(digests in {Path(out) / DIGESTS_NAME}){"; " + advice if advice else ""}'
        )
    return [problem for problem in digests.problems(names) if 'after its digest' in problem]


def check_file_unchanged(path: Path, *, what: str) -> list[str]:
    """Refuse ``path`` (a results file, an episode file or bag, or a file of a bag) if the run folder it lies in lists
    it and it changed since; returns the unverified-tail notes. A path no run folder lists is not checked.

    Raises:
        RunFolderError: as ``check_unchanged``.
    """
    resolved = Path(path).resolve()
    for folder in list(resolved.parents)[:3]:
        if not (folder / DIGESTS_NAME).exists():
            continue
        relative = resolved.relative_to(folder).as_posix()
        listed = [name for name in RunDigests(folder).entries if name == relative or name.startswith(relative + '/')]
        if listed:
            return check_unchanged(folder, names=listed, what=what)
    return []
