"""Truncation-tolerant, sequential reading of MCAP files that rosbags cannot open.

A recording killed before it closed its file has no summary and no footer, and its last chunk may be
cut in the middle. rosbags 0.11.9 refuses such a file outright ("File end magic is invalid."). This
scanner walks the data section record by record from the start, keeps every complete message, also the
complete messages at the start of a cut chunk (uncompressed, zstd or lz4), and stops at the first
record that runs past the end of the file or at the end of the data section.
"""

from __future__ import annotations

import struct
from binascii import crc32
from dataclasses import dataclass, field
from pathlib import Path

import lz4.frame

from robofollow_ros.bags.raw import RawTopic, TopicFilter, topic_entry
from robofollow_ros.errors import BagError

try:
    from compression import zstd
except ImportError:
    from backports import zstd

MAGIC = b'\x89MCAP0\r\n'
OP_FOOTER = 0x02
OP_SCHEMA = 0x03
OP_CHANNEL = 0x04
OP_MESSAGE = 0x05
OP_CHUNK = 0x06
OP_DATA_END = 0x0F
RECORD_HEADER = struct.Struct('<BQ')
MESSAGE_HEADER = struct.Struct('<HIQQ')
CHUNK_HEADER = struct.Struct('<QQQII')
U16 = struct.Struct('<H')
U32 = struct.Struct('<I')
U64 = struct.Struct('<Q')


@dataclass
class McapScan:
    """What a sequential scan found.

    Attributes:
        topics: wanted topics and their complete messages.
        messages: number of complete messages kept.
        damage: what was wrong with the file, empty if the scan reached the end of the data section.
    """

    topics: dict[str, RawTopic] = field(default_factory=dict)
    messages: int = 0
    damage: list[str] = field(default_factory=list)


class _Scanner:
    def __init__(self, wanted: TopicFilter) -> None:
        self.wanted = wanted
        self.schemas: dict[int, str] = {}
        self.channels: dict[int, tuple[str, str]] = {}
        self.skipped_channels: set[int] = set()
        self.scan = McapScan()

    def records(self, view: memoryview, *, in_chunk: bool, base: int = 0) -> tuple[int, bool]:
        """Handle the records of ``view``; return where parsing stopped and whether the data section ended."""
        pos = 0
        size = len(view)
        while pos + RECORD_HEADER.size <= size:
            op, length = RECORD_HEADER.unpack_from(view, pos)
            start = pos + RECORD_HEADER.size
            end = start + length
            if not in_chunk and op in (OP_DATA_END, OP_FOOTER):
                return pos, True
            if end > size:
                if op == OP_CHUNK and not in_chunk:
                    self.chunk(view[start:size], partial=True, offset=base + pos)
                return pos, False
            self.record(op, view[start:end], in_chunk=in_chunk, offset=base + pos)
            pos = end
        return pos, False

    def record(self, op: int, body: memoryview, *, in_chunk: bool, offset: int) -> None:
        if op == OP_MESSAGE:
            self.message(body)
        elif op == OP_SCHEMA:
            (schema_id,) = U16.unpack_from(body, 0)
            self.schemas[schema_id], _ = _string(body, 2)
        elif op == OP_CHANNEL:
            self.channel(body)
        elif op == OP_CHUNK and not in_chunk:
            self.chunk(body, partial=False, offset=offset)

    def channel(self, body: memoryview) -> None:
        channel_id, schema_id = struct.unpack_from('<HH', body, 0)
        topic, pos = _string(body, 4)
        encoding, _ = _string(body, pos)
        msgtype = self.schemas.get(schema_id)
        if encoding != 'cdr' or msgtype is None:
            self.skipped_channels.add(channel_id)
            return
        self.channels[channel_id] = (topic, msgtype)

    def message(self, body: memoryview) -> None:
        channel_id, _, log_time, _ = MESSAGE_HEADER.unpack_from(body, 0)
        channel = self.channels.get(channel_id)
        if channel is None or not self.wanted(channel[0]):
            return
        topic_entry(self.scan.topics, channel[0], channel[1]).add(log_time, bytes(body[MESSAGE_HEADER.size :]))
        self.scan.messages += 1

    def chunk(self, body: memoryview, *, partial: bool, offset: int) -> None:
        if len(body) < CHUNK_HEADER.size:
            self.scan.damage.append(f'chunk at byte {offset} cut inside its header')
            return
        _, _, uncompressed_size, crc, name_length = CHUNK_HEADER.unpack_from(body, 0)
        compression = bytes(body[CHUNK_HEADER.size : CHUNK_HEADER.size + name_length]).decode()
        data_start = CHUNK_HEADER.size + name_length + U64.size
        if data_start > len(body):
            self.scan.damage.append(f'chunk at byte {offset} cut inside its header')
            return
        (compressed_size,) = U64.unpack_from(body, data_start - U64.size)
        compressed = body[data_start : data_start + compressed_size]
        try:
            records = _decompress(compressed, compression, partial=partial)
        except (zstd.ZstdError, RuntimeError, ValueError) as err:
            self.scan.damage.append(f'chunk at byte {offset} does not decompress ({err}); skipped')
            return
        if not partial and crc and crc32(records) != crc:
            self.scan.damage.append(f'chunk at byte {offset} fails its checksum; skipped')
            return
        if partial:
            self.scan.damage.append(
                f'last chunk (byte {offset}) cut short: kept the complete messages of its first '
                f'{len(records)} of {uncompressed_size} bytes'
            )
        self.records(memoryview(records), in_chunk=True)


def _string(body: memoryview, pos: int) -> tuple[str, int]:
    (length,) = U32.unpack_from(body, pos)
    start = pos + U32.size
    return bytes(body[start : start + length]).decode(), start + length


def _decompress(data: memoryview, compression: str, *, partial: bool) -> bytes:
    if compression == '':
        return bytes(data)
    if compression == 'zstd':
        return zstd.ZstdDecompressor().decompress(bytes(data)) if partial else zstd.decompress(bytes(data))
    if compression == 'lz4':
        return lz4.frame.LZ4FrameDecompressor().decompress(bytes(data)) if partial else lz4.frame.decompress(data)
    raise ValueError(f'unknown chunk compression {compression!r}')


def scan_mcap(path: Path, *, wanted: TopicFilter) -> McapScan:
    """Read every complete message of the wanted topics from an MCAP file, however it ends.

    Args:
        path: the ``.mcap`` file.
        wanted: keeps the topics for which it returns true.

    Returns:
        The messages found and a list of the damage met.

    Raises:
        BagError: the file is not an MCAP file.
    """
    content = path.read_bytes()
    if len(content) < len(MAGIC):
        raise BagError(f'{path}: empty, or cut before the end of the MCAP magic ({len(content)} bytes)')
    if content[: len(MAGIC)] != MAGIC:
        raise BagError(f'{path}: not an MCAP file (bad magic bytes)')
    scanner = _Scanner(wanted)
    stopped, data_end = scanner.records(memoryview(content)[len(MAGIC) :], in_chunk=False, base=len(MAGIC))
    if not data_end:
        position = stopped + len(MAGIC)
        where = 'at its end' if position == len(content) else f'inside the record at byte {position}'
        scanner.scan.damage.insert(0, f'no summary/footer; the file is cut {where}')
    return scanner.scan
