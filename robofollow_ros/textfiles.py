"""Reading and writing the package's text files: UTF-8 with one clear error, atomic replacement.

Every file a user hands in (trajectory JSON, results, YAML config) is read through ``read_utf8`` so that a
file with bytes that are not UTF-8 ends in one line naming it, not a ``UnicodeDecodeError`` traceback; its
JSON is decoded by ``parse_json`` and its YAML by ``parse_yaml``, which bound what a hostile file can cost.
Files the evaluator publishes are written through ``write_atomically`` so that a kill leaves either the old
file or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import re
import reprlib
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from robofollow_ros.errors import RoboFollowError

PARTIAL_MARK = '.partial-'
_PARTIAL_NAME = re.compile(r'\.(?P<name>.+)\.partial-(?P<pid>[0-9]+)')
YAML_MAX_BYTES = 1 << 20
"""The largest YAML file read (configurations, CameraInfo, bag metadata are a few KiB; PyYAML parses ~0.5 MiB/s)."""
YAML_MAX_NODES = 1_000_000
"""The most values a YAML document may hold once its aliases are expanded (a "billion laughs" holds 10⁹)."""


def too_large(path: str | Path, *, what: str, max_bytes: int) -> str | None:
    """Why ``path`` is too large to be read as a ``what`` (``None`` if it is not, or cannot be examined)."""
    try:
        size = Path(path).stat().st_size
    except OSError:
        return None
    if size <= max_bytes:
        return None
    return f'{what} {path} is {size / 2**20:.1f} MiB, over the limit of {max_bytes / 2**20:g} MiB; not read'


def read_utf8(
    path: str | Path, *, what: str, error: type[RoboFollowError] = RoboFollowError, max_bytes: int | None = None
) -> str:
    """The text of ``path``.

    Args:
        path: the file.
        what: what the file is, for the message (``trajectory``, ``results``, ``referee config``).
        error: the ``RoboFollowError`` subclass to raise.
        max_bytes: refuse a larger file without reading it (``too_large``).

    Raises:
        RoboFollowError: (``error``) the file cannot be read, is not a regular file (a FIFO would block
        the reader forever, so it is never opened), is larger than ``max_bytes`` or is not UTF-8 text.
    """
    path = Path(path)
    try:
        if not stat.S_ISREG(path.stat().st_mode) and not path.is_dir():
            raise error(f'cannot read {what} {path}: not a regular file (a FIFO, socket or device); not opened')
        problem = None if max_bytes is None else too_large(path, what=what, max_bytes=max_bytes)
        if problem is not None:
            raise error(problem)
        data = path.read_bytes()
    except OSError as failure:
        raise error(f'cannot read {what} {path}: {failure.strerror or failure}') from failure
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as failure:
        raise error(f'{what} {path} is not UTF-8 text (byte {failure.start} is 0x{data[failure.start]:02x})') from None


def parse_json(text: str, *, where: str, what: str, error: type[RoboFollowError] = RoboFollowError) -> Any:
    """The JSON value of ``text`` (``NaN`` and ``Infinity`` are read as floats: the caller checks its values).

    Args:
        text: the JSON text.
        where: what names the text in messages (a path, or ``path:line``).
        what: what the text should hold, for the message (``a trajectory``, ``a result record``).
        error: the ``RoboFollowError`` subclass to raise.

    Raises:
        RoboFollowError: (``error``) not JSON, nested too deeply to read, or an integer with more digits than
        Python converts (``sys.get_int_max_str_digits``).
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as failure:
        place = f'line {failure.lineno}' if '\n' in text.strip() else f'column {failure.colno}'
        raise error(f'{where}: not valid JSON ({failure.msg} at {place})') from None
    except RecursionError:
        raise error(f'{where}: not {what} (JSON nested too deeply to read)') from None
    except ValueError:
        limit = sys.get_int_max_str_digits()
        raise error(f'{where}: not {what} (it holds an integer of more than {limit} digits)') from None


def shown(value: Any) -> str:
    """A value read from JSON as a message shows it: ``null``, ``true``, ``NaN`` as the file has them, long text and
    lists cut short."""
    if value is None or isinstance(value, bool | float):
        return json.dumps(value)
    return reprlib.repr(value)


class _BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a document whose aliases expand it past ``YAML_MAX_NODES`` values."""

    def compose_document(self) -> yaml.Node:
        node = super().compose_document()
        _check_expansion(node)
        return node


def _check_expansion(root: yaml.Node) -> None:
    """Count the values of ``root`` as if every alias were written out (shared nodes once each, so it is quick).

    Raises:
        yaml.YAMLError: more than ``YAML_MAX_NODES``, or an alias inside its own anchor.
    """
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = [
            child
            for item in (node.value if isinstance(node, yaml.CollectionNode) else ())
            for child in (item if isinstance(item, tuple) else (item,))
        ]
        if children_done:
            open_nodes.discard(id(node))
            sizes[id(node)] = size = 1 + sum(sizes[id(child)] for child in children)
            if size > YAML_MAX_NODES:
                raise yaml.composer.ComposerError(
                    None, None, f'aliases expand it past {YAML_MAX_NODES} values', node.start_mark
                )
            continue
        if id(node) in open_nodes:
            raise yaml.composer.ComposerError(None, None, 'an alias refers to its own anchor', node.start_mark)
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)


def parse_yaml(text: str) -> object:
    """``yaml.safe_load`` of ``text``, except for a document whose aliases expand it past ``YAML_MAX_NODES`` values
    (a "billion laughs") or that refers to itself, which is refused before anything is built.

    Raises:
        yaml.YAMLError: not valid YAML, or refused.
    """
    try:
        return yaml.load(text, Loader=_BoundedLoader)
    except RecursionError:
        raise yaml.YAMLError('nested too deeply to read') from None


def yaml_problem(error: yaml.YAMLError) -> str:
    """One line for a YAML error (PyYAML's own text spans several lines): the problem and where it is."""
    problem = getattr(error, 'problem', None) or getattr(error, 'context', None) or str(error).splitlines()[0]
    mark = getattr(error, 'problem_mark', None)
    where = f' at line {mark.line + 1}, column {mark.column + 1}' if mark is not None else ''
    return f'{problem}{where}'


def read_yaml(path: str | Path, *, what: str, error: type[RoboFollowError] = RoboFollowError) -> object:
    """The parsed YAML document of ``path`` (``read_utf8``'s checks first).

    Raises:
        RoboFollowError: (``error``) as ``read_utf8`` (at most ``YAML_MAX_BYTES``), or the text is not valid YAML
        or is refused by ``parse_yaml`` (one line saying where).
    """
    text = read_utf8(path, what=what, error=error, max_bytes=YAML_MAX_BYTES)
    try:
        return parse_yaml(text)
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
