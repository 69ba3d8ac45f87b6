"""Shared pieces of the scale tests: the 32 trials they run and the comparison of records across runs."""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from pathlib import Path

from robofollow_ros.evaluation.runner import WALL_CLOCK_FIELDS
from robofollow_ros.evaluation.suite import SuiteOptions

SCENE = 1
LEVEL = 0
ROUNDS = 2
TRIALS = 32
"""Scene 1 at L0 has 16 tasks; two rounds of each."""


def suite_options(out: Path, **changes) -> SuiteOptions:
    """The 32 expert trials of the scale tests, written to ``out``."""
    return SuiteOptions(out=out, policy='expert', scenes=[SCENE], levels=[LEVEL], rounds=ROUNDS, **changes)


def cli_args(out: Path, *extra: str) -> list[str]:
    """The same 32 trials as ``robofollow eval`` arguments."""
    scope = ['--scene', str(SCENE), '--level', f'L{LEVEL}', '--rounds', str(ROUNDS)]
    return ['eval', '--in-process', *scope, '--out', str(out), '--quiet', *extra]


def comparable(records, *, ignore: tuple[str, ...] = ()) -> dict:
    """Records by trial without their wall-clock fields (and ``ignore``); a trial recorded twice fails."""
    by_key = {}
    for record in records:
        key = (record['task_id'], record['round'])
        assert key not in by_key, f'{key} recorded twice'
        by_key[key] = {name: value for name, value in record.items() if name not in WALL_CLOCK_FIELDS | set(ignore)}
    return by_key


def child_pids(pid: int) -> list[int]:
    """Process ids of the direct children of ``pid`` (Linux /proc)."""
    children = Path(f'/proc/{pid}/task/{pid}/children')
    return [int(value) for value in children.read_text().split()] if children.exists() else []


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (Linux /proc)."""
    found = [pid]
    for child in child_pids(pid):
        found += descendants(child)
    return found


def _listening_inodes() -> dict[str, tuple[str, int]]:
    """Socket inode -> (address, port) of every listening TCP socket of this network namespace."""
    found = {}
    for table, family in (('/proc/net/tcp', socket.AF_INET), ('/proc/net/tcp6', socket.AF_INET6)):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != '0A':  # TCP_LISTEN
                continue
            address, port = fields[1].split(':')
            words = [int(address[i : i + 8], 16) for i in range(0, len(address), 8)]
            packed = struct.pack(f'<{len(words)}I', *words)
            found[fields[9]] = (socket.inet_ntop(family, packed), int(port, 16))
    return found


def listening_sockets(pids: list[int]) -> set[tuple[str, str, int]]:
    """(process name, address, port) of the listening TCP sockets held by ``pids`` (Linux /proc)."""
    inodes = _listening_inodes()
    found = set()
    for pid in pids:
        try:
            name = Path(f'/proc/{pid}/comm').read_text().strip()
            links = [os.readlink(entry) for entry in Path(f'/proc/{pid}/fd').iterdir()]
        except OSError:
            continue
        for link in links:
            if link.startswith('socket:[') and link[8:-1] in inodes:
                found.add((name, *inodes[link[8:-1]]))
    return found


def is_loopback(address: str) -> bool:
    """Whether ``address`` (IPv4, IPv6 or IPv4-mapped IPv6) reaches only this machine."""
    parsed = ipaddress.ip_address(address)
    mapped = getattr(parsed, 'ipv4_mapped', None)
    return (mapped or parsed).is_loopback


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists and is not a zombie."""
    try:
        state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != 'Z'


def pids_mentioning(text: str) -> list[int]:
    """Process ids whose command line contains ``text``."""
    found = []
    for cmdline in Path('/proc').glob('[0-9]*/cmdline'):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def is_worker(pid: int) -> bool:
    """Whether ``pid`` is a multiprocessing spawn child (a simulator worker)."""
    try:
        return b'spawn_main' in Path(f'/proc/{pid}/cmdline').read_bytes()
    except FileNotFoundError:
        return False


os.environ.setdefault('MUJOCO_GL', 'egl')
