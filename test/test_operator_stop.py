"""The operator's stop, fast (issue 29): ``robofollow operator stop`` and the stop key of the evaluator's terminal.

* ``robofollow operator stop`` imports nothing heavy (its process and the child that calls the service) and keeps
  to ``--timeout`` counted from its start: with no graph it says so in one line after the timeout, within a second
  more (it took 32.6 s with ``--timeout 5`` at a load of 26-28);
* the evaluator's terminal, a pty here, read key by key: ``s`` calls ``/robofollow/stop`` at once (a stand-in
  service, real DDS in a private domain), the terminal is out of line mode while the cell runs and as it was after;
* what the keys mean (``KeyEditor``): stop keys, lines, an override's reason, edits and escape sequences;
* the launcher puts the terminal's settings back even when the node that changed them was killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest
from graph_helpers import ROOT, graph_env, private_node, wait_until
from std_srvs.srv import Trigger

from robofollow_ros import topics
from robofollow_ros.realcell.operator_keys import KeyEditor

CLI_DOMAIN = 24
KEY_DOMAIN = 25
KEY_BOUND = 1.0
"""Seconds from the key to the stop service's call (measured: a few milliseconds on an idle machine)."""
HEAVY = ('numpy', 'mujoco', 'cv2', 'robofollow_ros.benchmark', 'robofollow_ros.evaluation', 'robofollow_ros.sim.')
"""Modules ``robofollow operator`` must not import, with their submodules (a name ending in a dot: its submodules
only). Its child needs numpy: rclpy's service types import it."""
LIGHT = ('robofollow_ros.sim.gl',)
"""Allowed all the same: the command line's GL backend chooser (ctypes only; not called for ``operator``)."""


MODULES = (
    'import atexit, runpy, sys\n'
    'module = sys.argv.pop(1)\n'
    "atexit.register(lambda: print('MODULES', *sorted(sys.modules), file=sys.stderr))\n"
    "runpy.run_module(module, run_name='__main__', alter_sys=True)\n"
)
"""``python -c MODULES module args...`` runs ``python -m module args...`` and lists every module imported at its exit
(``-X importtime`` misses those imported through ``importlib``, as the command's subcommands are)."""


def modules_of(module: str, *arguments: str, env: dict[str, str]) -> tuple[int, str, set[str]]:
    """Run ``python -m module arguments``: its exit code, its stderr and every module it had imported at its exit."""
    done = subprocess.run(
        [sys.executable, '-c', MODULES, module, *arguments],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = done.stderr.splitlines()
    names = next((set(line.split()[1:]) for line in lines if line.startswith('MODULES ')), set())
    return done.returncode, '\n'.join(line for line in lines if not line.startswith('MODULES ')), names


def heavy(names: set[str], allowed: tuple[str, ...] = ()) -> list[str]:
    """The ``HEAVY`` modules among ``names``, but for ``LIGHT`` and ``allowed`` ones."""

    def matches(name: str, module: str) -> bool:
        return name.startswith(module) if module.endswith('.') else name == module or name.startswith(f'{module}.')

    return sorted(
        name
        for name in names
        if any(matches(name, module) for module in HEAVY)
        and not any(matches(name, module) for module in (*LIGHT, *allowed))
    )


@pytest.mark.ros
def test_operator_stop_imports_nothing_heavy_and_keeps_to_its_timeout() -> None:
    env = graph_env(CLI_DOMAIN)
    # The command's own process: argparse and the service names, no rclpy (it runs the call in a child).
    code, stderr, names = modules_of('robofollow_ros', 'operator', 'stop', '--timeout', '0.5', env=env)
    assert code == 2 and 'robofollow_ros.cli.operator' in names, stderr
    assert heavy(names) == [] and 'rclpy' not in names, heavy(names)
    # The child that calls the service: rclpy and std_srvs, nothing of the package's heavy modules.
    code, stderr, names = modules_of(
        'robofollow_ros.ros.ask_once', 'trigger', '/robofollow/stop', '--timeout', '0.2', env=env
    )
    assert code == 2 and 'rclpy' in names and 'std_srvs.srv' in names, stderr
    assert heavy(names, allowed=('numpy',)) == [], heavy(names, allowed=('numpy',))  # (rclpy imports yaml itself)

    # --timeout counts from the command's start, and nothing else waits.
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, '-m', 'robofollow_ros', 'operator', 'stop', '--timeout', '3'],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f'no {topics.resolve(topics.STOP)} service answered within 3 s']
    print(f'operator stop --timeout 3, no graph: {elapsed:.2f} s')
    assert 3.0 <= elapsed < 4.0, elapsed


@pytest.mark.ros
def test_the_stop_key_on_the_evaluators_terminal_calls_the_stop_at_once(tmp_path: Path) -> None:
    calls: list[float] = []

    def serve(_request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        calls.append(time.monotonic())
        response.success, response.message = True, 'both arms hold (stand-in)'
        return response

    master, slave = os.openpty()
    output: list[str] = []

    def read_output() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if not data:
                return
            output.append(data.decode('utf-8', errors='replace'))

    before = termios.tcgetattr(master)
    assert before[3] & termios.ICANON and before[3] & termios.ECHO
    with private_node(KEY_DOMAIN, 'stop_stand_in', spin=True) as (node, _executor):
        node.create_service(Trigger, topics.STOP, serve)
        cell = subprocess.Popen(
            [sys.executable, '-m', 'stop_key_cell', str(tmp_path)],
            env=graph_env(KEY_DOMAIN),
            cwd=ROOT,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        reader = threading.Thread(target=read_output, daemon=True)
        reader.start()
        try:

            def said(text: str) -> bool:
                assert cell.poll() is None, ''.join(output)[-4000:]
                return text in ''.join(output)

            wait_until(lambda: said('READY'), timeout=120, what='the cell to find the stop service')
            assert 'stop key: press s or the space bar here' in ''.join(output)
            during = termios.tcgetattr(master)
            assert not during[3] & termios.ICANON and not during[3] & termios.ECHO, 'cbreak mode: one key, no Enter'

            pressed = time.monotonic()
            os.write(master, b's')
            wait_until(lambda: calls, timeout=30, what='the stop call', poll=0.001)
            delay = calls[0] - pressed
            wait_until(lambda: said('STOP: both arms hold (stand-in)'), timeout=30, what="the stop's answer shown")
            # An override's reason may hold an s: it is text there, and no stop.
            os.write(master, b'override cubes')
            wait_until(lambda: said('override cubes'), timeout=30, what='the echo of the typed text')
            time.sleep(0.3)
            assert len(calls) == 1, 'no stop while typing an override'
            os.write(master, b'\n ')  # the line (no layout check holds a trial: nothing to override), then space
            wait_until(lambda: len(calls) == 2, timeout=30, what='the second stop (space bar)', poll=0.001)
        finally:
            if cell.poll() is None:
                cell.send_signal(signal.SIGTERM)
            try:
                cell.wait(timeout=30)
            except subprocess.TimeoutExpired:
                cell.kill()
                cell.wait()
    assert 'CLOSED' in ''.join(output), ''.join(output)[-4000:]
    after = termios.tcgetattr(master)
    assert after[3] == before[3], 'the terminal is back in line mode, with echo'
    os.close(master)
    print(f'stop key -> /robofollow/stop called: {delay * 1e3:.1f} ms')
    assert delay < KEY_BOUND, delay


def keys(text: str) -> tuple[list[str], str]:
    """What ``text`` typed does: the events and the echo."""
    events: list[str] = []
    echoed: list[str] = []
    editor = KeyEditor(
        on_stop=lambda: events.append('stop'), on_line=lambda line: events.append(f'line {line!r}'), echo=echoed.append
    )
    editor.feed(text)
    return events, ''.join(echoed)


def test_what_the_keys_mean() -> None:
    assert keys('s') == (['stop'], '')
    assert keys(' ')[0] == ['stop'] and keys('S')[0] == ['stop']
    assert keys('\n')[0] == ["line ''"]  # Enter: ready
    assert keys('\r\n')[0] == ["line ''"]  # one Enter, however the terminal sends it
    assert keys('override cube is fine\n')[0] == ["line 'override cube is fine'"]
    assert keys('Override s\n')[0] == ["line 'Override s'"]
    # A stray key does not disarm the stop: the line is dropped and the arms stop.
    assert keys('xs')[0] == ['stop']
    assert keys('overrids')[0] == ['stop']  # not yet the word
    # Arrow keys (escape sequences) are dropped whole and leave the line empty.
    assert keys('\x1b[A\x1bOBs')[0] == ['stop']
    assert keys('\x1b[1;5Cs')[0] == ['stop']
    # Editing: Backspace, Ctrl-U.
    assert keys('overridx\x7fe why\n')[0] == ["line 'override why'"]
    assert keys('override why\x15s')[0] == ['stop']
    assert keys('ab\x7f') == ([], 'ab\b \b')


KILLED_NODE = (
    'import fcntl, subprocess, sys, termios\n'
    'fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n'
    'from robofollow_ros.graph.terminal import terminal_kept\n'
    'node = "import os, signal, termios; m = termios.tcgetattr(0); m[3] &= ~(termios.ICANON | termios.ECHO); '
    'termios.tcsetattr(0, termios.TCSANOW, m); os.kill(os.getpid(), signal.SIGKILL)"\n'
    'with terminal_kept():\n'
    '    subprocess.run([sys.executable, "-c", node], check=False)\n'
    '    print("INSIDE", termios.tcgetattr(0)[3] & termios.ICANON, flush=True)\n'
    'print("AFTER", termios.tcgetattr(0)[3] & termios.ICANON, flush=True)\n'
)
"""A launcher (``terminal_kept``, as ``Supervisor.run`` holds it) whose node leaves its terminal in cbreak mode and is
killed (SIGKILL: no ``finally``, no ``atexit``)."""


def test_the_launcher_gives_the_terminal_back_when_a_node_that_changed_it_was_killed() -> None:
    master, slave = os.openpty()
    launcher = subprocess.Popen(
        [sys.executable, '-c', KILLED_NODE], cwd=ROOT, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
    )
    os.close(slave)
    output = b''
    with contextlib.suppress(OSError):  # (EIO once the launcher, the last holder of the slave, has exited)
        while chunk := os.read(master, 4096):
            output += chunk
    launcher.wait(timeout=60)
    os.close(master)
    lines = output.decode().split()
    assert lines[lines.index('INSIDE') + 1] == '0', 'the killed node left the terminal in cbreak mode'
    assert lines[lines.index('AFTER') + 1] != '0', 'the launcher put line mode back'
