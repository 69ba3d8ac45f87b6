"""Reading and writing the package's text files: UTF-8 with one clear error, atomic replacement.

Every file a user hands in (trajectory JSON, results, YAML config) is read through ``read_utf8`` so that a
file with bytes that are not UTF-8 ends in one line naming it, not a ``UnicodeDecodeError`` traceback.
Files the evaluator publishes are written through ``write_atomically`` so that a kill leaves either the old
file or the new one, never half of one.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

import yaml

from robofollow_ros.errors import RoboFollowError

PARTIAL_MARK = '.partial-'
_PARTIAL_NAME = re.compile(r'\.(?P<name>.+)\.partial-(?P<pid>[0-9]+)')


def read_utf8(path: str | Path, *, what: str, error: type[RoboFollowError] = RoboFollowError) -> str:
    """The text of ``path``.

    Args:
        path: the file.
        what: what the file is, for the message (``trajectory``, ``results``, ``referee config``).
        error: the ``RoboFollowError`` subclass to raise.

    Raises:
        RoboFollowError: (``error``) the file cannot be read, is not a regular file (a FIFO would block
        the reader forever, so it is never opened) or is not UTF-8 text.
    """
    path = Path(path)
    try:
        if not stat.S_ISREG(path.stat().st_mode) and not path.is_dir():
            raise error(f'cannot read {what} {path}: not a regular file (a FIFO, socket or device); not opened')
        data = path.read_bytes()
    except OSError as failure:
        raise error(f'cannot read {what} {path}: {failure.strerror or failure}') from failure
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as failure:
        raise error(f'{what} {path} is not UTF-8 text (byte {failure.start} is 0x{data[failure.start]:02x})') from None


def yaml_problem(error: yaml.YAMLError) -> str:
    """One line for a YAML error (PyYAML's own text spans several lines): the problem and where it is."""
    problem = getattr(error, 'problem', None) or getattr(error, 'context', None) or str(error).splitlines()[0]
    mark = getattr(error, 'problem_mark', None)
    where = f' at line {mark.line + 1}, column {mark.column + 1}' if mark is not None else ''
    return f'{problem}{where}'


def read_yaml(path: str | Path, *, what: str, error: type[RoboFollowError] = RoboFollowError) -> object:
    """The parsed YAML document of ``path`` (``read_utf8``'s checks first).

    Raises:
        RoboFollowError: (``error``) as ``read_utf8``, or the text is not valid YAML (one line saying where).
    """
    text = read_utf8(path, what=what, error=error)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as failure:
        raise error(f'{what} {path}: not valid YAML ({yaml_problem(failure)})') from None


def partial_path(path: str | Path) -> Path:
    """The hidden temporary name under which ``path`` is written before it is published."""
    path = Path(path)
    return path.with_name(f'.{path.name}{PARTIAL_MARK}{os.getpid()}')


def is_partial(path: str | Path) -> bool:
    """Whether ``path`` is a temporary left by an unfinished ``publish`` (for example, of a killed run)."""
    name = Path(path).name
    return name.startswith('.') and PARTIAL_MARK in name


def partial_owner(path: str | Path) -> tuple[str, int] | None:
    """For a ``partial_path`` name, the name it publishes and the id of the process that wrote it; else ``None``."""
    match = _PARTIAL_NAME.fullmatch(Path(path).name)
    return None if match is None else (match['name'], int(match['pid']))


def publish(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Create ``path`` atomically: ``write`` fills a hidden temporary, which then replaces ``path`` at once.

    ``write`` receives the temporary path and creates a file or a directory there. After a kill at any
    point, ``path`` is either absent (or its previous version) or complete; the temporary is left over and
    ``is_partial`` recognises it.
    """
    path = Path(path)
    temporary = partial_path(path)
    write(temporary)
    os.replace(temporary, path)
    return path


def write_atomically(path: str | Path, text: str) -> Path:
    """Replace ``path`` with ``text`` (UTF-8) in one step, flushed to disk first."""

    def write(temporary: Path) -> None:
        with temporary.open('w', encoding='utf-8') as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())

    return publish(path, write)
