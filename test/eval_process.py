"""Start ``robofollow eval`` as a separate process (for signals, kills and concurrent runs) and watch its folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parent
REPO = TEST_DIR.parent


def environment(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(TEST_DIR), str(REPO), env.get('PYTHONPATH', '')]))
    env.setdefault('MUJOCO_GL', 'egl')
    env.update(extra)
    return env


def start(args: list[str], **extra: str) -> subprocess.Popen[str]:
    """``robofollow <args>`` in a new process with test/ on PYTHONPATH; stdout and stderr captured."""
    return subprocess.Popen(
        [sys.executable, '-m', 'robofollow_ros', *args],
        cwd=REPO,
        env=environment(**extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run(args: list[str], *, timeout: float = 300.0, **extra: str) -> subprocess.CompletedProcess[str]:
    """``robofollow <args>`` to completion."""
    process = start(args, **extra)
    out, err = process.communicate(timeout=timeout)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def result_lines(out: Path) -> list[dict]:
    path = out / 'results.jsonl'
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding='utf-8').splitlines() if line.endswith('}')]


def wait_for_file(path: Path, process: subprocess.Popen[str], *, timeout: float = 120.0) -> None:
    """Wait until ``path`` exists (or fail if the process ends first)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f'the run ended early: {process.communicate()}')
        if time.monotonic() > deadline:
            raise AssertionError(f'no {path} after {timeout} s')
        time.sleep(0.05)


def wait_for_records(out: Path, count: int, process: subprocess.Popen[str], *, timeout: float = 120.0) -> None:
    """Wait until ``out/results.jsonl`` holds ``count`` complete records (or fail if the process ends first)."""
    deadline = time.monotonic() + timeout
    path = out / 'results.jsonl'
    while time.monotonic() < deadline:
        ended = process.poll() is not None
        if path.exists() and path.read_text(encoding='utf-8').count('\n') >= count:
            return
        if ended:  # looked at before reading the file, so records written just before the exit still count
            raise AssertionError(f'the run ended early: {process.communicate()}')
        time.sleep(0.05)
    raise AssertionError(f'no {count} records in {out} after {timeout} s')


def dead_pid() -> int:
    """The id of a process that has exited and was reaped (what a killed run's temporaries are named after)."""
    process = subprocess.Popen(['true'])
    process.wait()
    return process.pid
