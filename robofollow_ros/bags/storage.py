"""Pulling the serialized messages of the wanted topics out of a bag, repairing what can be repaired.

Intact bags are read through rosbags. When rosbags cannot read a bag (no ``metadata.yaml``, an MCAP
file without summary or footer, an SQLite file cut short or left with a write-ahead log), each storage
file is read again by ``mcap_recovery`` or ``sqlite_recovery``, which keep every intact message, and
``RawBag.recovered`` says what happened.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path, PurePath

import yaml
from rosbags.rosbag2 import Reader

from robofollow_ros.bags.conventions import STORAGE_SUFFIXES, STORAGES
from robofollow_ros.bags.mcap_recovery import scan_mcap
from robofollow_ros.bags.raw import RawBag, RawTopic, TopicFilter, topic_entry
from robofollow_ros.bags.sqlite_recovery import has_wal, scan_sqlite
from robofollow_ros.errors import BagError
from robofollow_ros.textfiles import YAML_MAX_BYTES, parse_yaml, too_large, yaml_problem

try:
    from compression import zstd
except ImportError:
    from backports import zstd

METADATA_FILE = 'metadata.yaml'


@dataclass(frozen=True)
class _Metadata:
    storage: str
    files: tuple[Path, ...]
    compression_mode: str


def read_raw(path: str | Path, *, wanted: TopicFilter) -> RawBag:
    """Read the messages of the wanted topics of a rosbag2 directory or a single ``.mcap``/``.db3`` file.

    Args:
        path: bag directory, or one storage file.
        wanted: keeps the topics for which it returns true.

    Returns:
        The messages, grouped by topic, with an account of any recovery.

    Raises:
        BagError: not a bag, unknown storage, or storage files that are not MCAP/SQLite at all.
    """
    bag = Path(path)
    if bag.name == METADATA_FILE:
        bag = bag.parent
    if not bag.exists():
        raise BagError(f'{bag}: no such bag (file or directory)')
    if bag.is_file():
        storage = _storage_of_file(bag)
        topics, notes = _read_files((bag,), storage, wanted, compression_mode='')
        return _result(storage, topics, notes)
    metadata, problem = _metadata(bag)
    if metadata is None:
        files, storage = _storage_files(bag, problem)
        topics, notes = _read_files(files, storage, wanted, compression_mode='')
        return _result(storage, topics, [f'{problem}; read the storage files directly', *notes])
    _refuse_special(bag, metadata.files)
    present = tuple(file for file in metadata.files if file.exists())
    if not present:
        names = ', '.join(file.name for file in metadata.files) or 'none listed'
        raise BagError(f'{bag}: not a usable bag, its storage files are missing ({names})')
    missing = [file.name for file in metadata.files if not file.exists()]
    notes = [f'storage files missing: {", ".join(missing)}'] if missing else []
    if not notes and not any(metadata.storage == 'sqlite3' and has_wal(file) for file in present):
        try:
            return RawBag(metadata.storage, _read_with_rosbags(bag, wanted))
        except BagError:
            raise
        except Exception as err:  # rosbags raises many kinds (ReaderError, apsw, struct, zstd): all mean damage
            notes.append(f'rosbags cannot read it ({err})')
    if metadata.compression_mode == 'file':
        raise BagError(f'{bag}: damaged and compressed file by file; it cannot be recovered ({"; ".join(notes)})')
    topics, file_notes = _read_files(
        present, metadata.storage, wanted, compression_mode=metadata.compression_mode, try_rosbags=not notes
    )
    return _result(metadata.storage, topics, [*notes, *file_notes])


def _result(storage: str, topics: dict[str, RawTopic], notes: list[str]) -> RawBag:
    return RawBag(storage, topics, '; '.join(notes) or None)


def _storage_of_file(path: Path) -> str:
    storage = STORAGE_SUFFIXES.get(path.suffix)
    if storage is not None:
        return storage
    if path.suffix == '.bag':
        raise BagError(f'{path}: ROS 1 bags are not supported (convert it with rosbags-convert)')
    raise BagError(f'{path}: not a rosbag2 bag (expected a bag directory, a .mcap or a .db3 file)')


def _refuse_special(bag: Path, files: tuple[Path, ...]) -> None:
    """Refuse storage files that exist but are not regular files: opening a FIFO would block forever."""
    for file in files:
        try:
            mode = file.stat().st_mode
        except OSError:
            continue
        if not stat.S_ISREG(mode):
            raise BagError(f'{bag}: {file.name} is not a regular file (a FIFO, socket, device or folder); not opened')


def _metadata(bag: Path) -> tuple[_Metadata | None, str]:
    source = bag / METADATA_FILE
    if not source.exists():
        return None, f'{METADATA_FILE} missing (recording not closed)'
    _refuse_special(bag, (source,))
    problem = too_large(source, what='bag metadata', max_bytes=YAML_MAX_BYTES)
    if problem is not None:
        raise BagError(f'{problem} (rosbag2 writes a few KiB)')
    try:
        document = parse_yaml(source.read_text(encoding='utf-8'))
    except OSError as err:
        return None, f'{METADATA_FILE} unreadable ({err.strerror or err})'
    except UnicodeDecodeError as err:
        return None, f'{METADATA_FILE} is not UTF-8 text (byte {err.start})'
    except yaml.YAMLError as err:
        return None, f'{METADATA_FILE} is not valid YAML ({yaml_problem(err)})'
    info = document.get('rosbag2_bagfile_information') if isinstance(document, dict) else None
    if not isinstance(info, dict):
        return None, f'{METADATA_FILE} is not rosbag2 metadata (no rosbag2_bagfile_information mapping)'
    names = info.get('relative_file_paths')
    if 'storage_identifier' not in info or not isinstance(names, list):
        lacking = 'storage_identifier' if 'storage_identifier' not in info else 'a list of relative_file_paths'
        return None, f'{METADATA_FILE} is not rosbag2 metadata (rosbag2_bagfile_information lacks {lacking})'
    storage = str(info['storage_identifier'])
    files = tuple(bag / PurePath(str(name)).name for name in names)
    compression_mode = str(info.get('compression_mode') or '').lower()
    if storage not in STORAGES:
        raise BagError(f'{bag}: unknown storage {storage!r} (supported: {", ".join(STORAGES)})')
    return _Metadata(storage, files, '' if compression_mode == 'none' else compression_mode), ''


def _storage_files(bag: Path, problem: str) -> tuple[tuple[Path, ...], str]:
    """The storage files of a bag whose metadata cannot be used; ``problem`` says why it cannot."""
    found = {storage: tuple(sorted(bag.glob(f'*{suffix}'))) for suffix, storage in STORAGE_SUFFIXES.items()}
    kinds = [storage for storage, files in found.items() if files]
    absent = not (bag / METADATA_FILE).exists()
    if not kinds:
        reason = f'no {METADATA_FILE}, no .mcap or .db3 file' if absent else f'{problem}, and no .mcap or .db3 file'
        raise BagError(f'{bag}: not a rosbag2 bag ({reason})')
    if len(kinds) > 1:
        reason = f'no {METADATA_FILE}' if absent else problem
        raise BagError(f'{bag}: holds both .mcap and .db3 files and {reason}; cannot tell which is the bag')
    _refuse_special(bag, found[kinds[0]])
    return found[kinds[0]], kinds[0]


def _read_with_rosbags(path: Path, wanted: TopicFilter) -> dict[str, RawTopic]:
    topics: dict[str, RawTopic] = {}
    with Reader(path) as reader:
        connections = [connection for connection in reader.connections if wanted(connection.topic)]
        entries = {
            connection.id: topic_entry(topics, connection.topic, connection.msgtype) for connection in connections
        }
        if connections:
            for connection, log_ns, data in reader.messages(connections=connections):
                entries[connection.id].add(log_ns, data)
    return topics


def _read_files(
    files: tuple[Path, ...], storage: str, wanted: TopicFilter, *, compression_mode: str, try_rosbags: bool = True
) -> tuple[dict[str, RawTopic], list[str]]:
    topics: dict[str, RawTopic] = {}
    notes: list[str] = []
    for file in files:
        file_topics, note = _read_file(
            file, storage, wanted, compression_mode=compression_mode, try_rosbags=try_rosbags
        )
        if note:
            notes.append(note)
        for name, entry in file_topics.items():
            merged = topic_entry(topics, name, entry.msgtype)
            merged.log_ns.extend(entry.log_ns)
            merged.data.extend(entry.data)
    return topics, notes


def _read_file(
    path: Path, storage: str, wanted: TopicFilter, *, compression_mode: str, try_rosbags: bool
) -> tuple[dict[str, RawTopic], str]:
    try:
        path.open('rb').close()
    except OSError as err:  # not damage: recovery would fail the same way
        raise BagError(f'cannot read bag file {path}: {err.strerror or err}') from None
    reasons = []
    if storage == 'sqlite3' and has_wal(path):
        reasons.append('left with a write-ahead log')
    elif try_rosbags and compression_mode != 'message':
        try:
            return _read_with_rosbags(path, wanted), ''
        except BagError:
            raise
        except Exception as err:  # rosbags raises many kinds (ReaderError, apsw, struct, zstd): all mean damage
            reasons.append(f'rosbags cannot read it ({err})')
    scan = scan_mcap(path, wanted=wanted) if storage == 'mcap' else scan_sqlite(path, wanted=wanted)
    if compression_mode == 'message':
        for entry in scan.topics.values():
            entry.data = [zstd.decompress(data) for data in entry.data]
    method = 'sequential scan' if storage == 'mcap' else 'page scan'
    details = [*reasons, *scan.damage, f'{scan.messages} messages recovered by {method}']
    return scan.topics, f'{path.name}: {"; ".join(details)}'
