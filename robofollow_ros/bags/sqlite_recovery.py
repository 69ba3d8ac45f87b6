"""Recovery of the rows of a damaged or cut-short rosbag2 SQLite3 file by reading its pages directly.

SQLite (and so rosbags 0.11.9) refuses a database whose file is shorter than its header says
("database disk image is malformed") and, opened immutable, ignores a write-ahead log left behind by a
recorder that never closed the file. This module reads the file page by page instead: every intact
table-leaf page is decoded, rows shaped like rosbag2 ``topics`` and ``messages`` rows are kept, and the
pages of a ``-wal`` file (frames of the current log generation) replace the pages they update. Rows on
missing pages, or whose overflow chain runs into a missing page, are lost; all others are kept.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from robofollow_ros.bags.raw import RawTopic, TopicFilter, topic_entry
from robofollow_ros.errors import BagError

SQLITE_MAGIC = b'SQLite format 3\x00'
TABLE_LEAF = 0x0D
FIRST_PAGE_HEADER = 100
LEAF_HEADER = 8
WAL_MAGICS = (0x377F0682, 0x377F0683)
WAL_HEADER = struct.Struct('>IIIIII')
WAL_FRAME_HEADER = struct.Struct('>IIII')
WAL_FRAME_HEADER_SIZE = 24
INT_SIZES = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8}
U16 = struct.Struct('>H')
U32 = struct.Struct('>I')
F64 = struct.Struct('>d')

Value = int | float | str | bytes | None
TopicRow = tuple[str, str, str]
MessageRow = tuple[int, int, bytes]


@dataclass
class SqliteScan:
    """What a page scan found.

    Attributes:
        topics: wanted topics and their messages in insertion (rowid) order.
        messages: number of messages kept.
        damage: what was wrong with the file.
    """

    topics: dict[str, RawTopic] = field(default_factory=dict)
    messages: int = 0
    damage: list[str] = field(default_factory=list)


def wal_path(path: Path) -> Path:
    """The write-ahead log SQLite keeps next to ``path`` while a writer has it open."""
    return path.with_name(path.name + '-wal')


def has_wal(path: Path) -> bool:
    """Whether ``path`` has a non-empty write-ahead log (its writer never closed it)."""
    log = wal_path(path)
    return log.exists() and log.stat().st_size > WAL_HEADER.size + 8


def _varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    value = 0
    for i in range(8):
        byte = buf[pos + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, pos + i + 1
    return (value << 8) | buf[pos + 8], pos + 9


def _record(payload: bytes) -> list[Value]:
    header_size, pos = _varint(payload, 0)
    serial_types = []
    while pos < header_size:
        serial_type, pos = _varint(payload, pos)
        serial_types.append(serial_type)
    values: list[Value] = []
    pos = header_size
    for serial_type in serial_types:
        if serial_type in INT_SIZES:
            size = INT_SIZES[serial_type]
            values.append(int.from_bytes(payload[pos : pos + size], 'big', signed=True))
        elif serial_type == 7:
            size = F64.size
            values.append(F64.unpack_from(payload, pos)[0])
        elif serial_type in (0, 8, 9):
            size = 0
            values.append(None if serial_type == 0 else serial_type - 8)
        elif serial_type >= 12:
            size = (serial_type - 12) // 2
            chunk = payload[pos : pos + size]
            values.append(bytes(chunk) if serial_type % 2 == 0 else bytes(chunk).decode())
        else:
            raise ValueError(f'reserved serial type {serial_type}')
        pos += size
        if pos > len(payload):
            raise ValueError('record runs past its payload')
    return values


class _Pages:
    def __init__(self, content: bytes, page_size: int, usable: int) -> None:
        self.page_size = page_size
        self.usable = usable
        count = len(content) // page_size
        self.pages: dict[int, memoryview] = {
            number: memoryview(content)[(number - 1) * page_size : number * page_size] for number in range(1, count + 1)
        }

    def overlay_wal(self, log: bytes) -> int:
        if len(log) < WAL_HEADER.size + 8:
            return 0
        magic, _, page_size, _, salt1, salt2 = WAL_HEADER.unpack_from(log, 0)
        if magic not in WAL_MAGICS or page_size != self.page_size:
            return 0
        frames = 0
        pos = WAL_HEADER.size + 8
        while pos + WAL_FRAME_HEADER_SIZE + page_size <= len(log):
            number, _, frame_salt1, frame_salt2 = WAL_FRAME_HEADER.unpack_from(log, pos)
            if (frame_salt1, frame_salt2) != (salt1, salt2):
                break
            start = pos + WAL_FRAME_HEADER_SIZE
            self.pages[number] = memoryview(log)[start : start + page_size]
            frames += 1
            pos = start + page_size
        return frames

    def payload(self, page: memoryview, pos: int, size: int) -> bytes:
        max_local = self.usable - 35
        if size <= max_local:
            return bytes(page[pos : pos + size])
        min_local = (self.usable - 12) * 32 // 255 - 23
        local = min_local + (size - min_local) % (self.usable - 4)
        if local > max_local:
            local = min_local
        parts = [bytes(page[pos : pos + local])]
        (next_page,) = U32.unpack_from(page, pos + local)
        remaining = size - local
        while remaining > 0:
            overflow = self.pages.get(next_page)
            if overflow is None:
                raise ValueError(f'overflow page {next_page} is missing')
            take = min(remaining, self.usable - 4)
            parts.append(bytes(overflow[4 : 4 + take]))
            (next_page,) = U32.unpack_from(overflow, 0)
            remaining -= take
        return b''.join(parts)

    def rows(self) -> tuple[dict[int, TopicRow], dict[int, MessageRow], int]:
        topics: dict[int, TopicRow] = {}
        messages: dict[int, MessageRow] = {}
        damaged = 0
        for number, page in sorted(self.pages.items()):
            header = FIRST_PAGE_HEADER if number == 1 else 0
            if page[header] != TABLE_LEAF:
                continue
            (cells,) = U16.unpack_from(page, header + 3)
            for cell in range(cells):
                try:
                    (pointer,) = U16.unpack_from(page, header + LEAF_HEADER + 2 * cell)
                    size, pos = _varint(page, pointer)
                    rowid, pos = _varint(page, pos)
                    values = _record(self.payload(page, pos, size))
                except (IndexError, ValueError, struct.error, UnicodeDecodeError):
                    damaged += 1
                    continue
                match values:
                    case [None, int(topic_id), int(timestamp), bytes(data)]:
                        messages[rowid] = (topic_id, timestamp, data)
                    case [None, str(name), str(msgtype), str(encoding), *rest] if (
                        name.startswith('/') and len(rest) <= 2
                    ):
                        topics[rowid] = (name, msgtype, encoding)
        return topics, messages, damaged


def scan_sqlite(path: Path, *, wanted: TopicFilter) -> SqliteScan:
    """Read the ``topics`` and ``messages`` rows of a rosbag2 SQLite3 file without SQLite.

    Args:
        path: the ``.db3`` file; a ``<name>-wal`` file next to it is merged in.
        wanted: keeps the topics for which it returns true.

    Returns:
        The messages found and a list of the damage met.

    Raises:
        BagError: the file is not an SQLite database.
    """
    content = path.read_bytes()
    if len(content) < FIRST_PAGE_HEADER and SQLITE_MAGIC.startswith(content[: len(SQLITE_MAGIC)]):
        raise BagError(f'{path}: empty, or cut inside the SQLite header ({len(content)} bytes)')
    if not content.startswith(SQLITE_MAGIC):
        raise BagError(f'{path}: not an SQLite database')
    (page_size,) = U16.unpack_from(content, 16)
    page_size = 65536 if page_size == 1 else page_size
    pages = _Pages(content, page_size, page_size - content[20])
    scan = SqliteScan()
    (declared,) = U32.unpack_from(content, 28)
    present = len(content) // page_size
    if declared > present or len(content) % page_size:
        scan.damage.append(f'file cut short: {present} complete pages of {declared} present')
    if has_wal(path):
        frames = pages.overlay_wal(wal_path(path).read_bytes())
        scan.damage.append(f'write-ahead log left open by the recorder; {frames} logged pages merged')
    topics, messages, damaged = pages.rows()
    if damaged:
        scan.damage.append(f'{damaged} damaged rows skipped')
    orphans = 0
    for rowid in sorted(messages):
        topic_id, timestamp, data = messages[rowid]
        topic = topics.get(topic_id)
        if topic is None:
            orphans += 1
        elif topic[2] == 'cdr' and wanted(topic[0]):
            topic_entry(scan.topics, topic[0], topic[1]).add(timestamp, data)
            scan.messages += 1
    if orphans:
        scan.damage.append(f'{orphans} messages of topics whose rows are lost skipped')
    return scan
