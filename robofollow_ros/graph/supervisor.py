"""``Supervisor``: starts a declared graph as processes and stops all of them together (``robofollow launch``).

What it guarantees (the real ``ros2 launch`` misses the SIGTERM part, README: node graph): nodes start in declared
order in the graph environment; SIGINT and SIGTERM both stop the graph (the signal received to every node, then
SIGTERM, then SIGKILL for nodes that do not exit in time: a node that is exiting, which ignores both signals from
the first one on, gets longer than one that still takes them, so a clean exit slowed down by a busy machine is not
killed); a node stopped while it starts exits silently (``interrupts.py``; both signals are held from the fork
until the node can take them); when the main node exits the graph stops with its exit code; when any other
required node exits the graph stops with a non-zero code and says which node died (and writes that reason where
the evaluator finds it, so ``run.json`` says ``failed`` with it); every node asks the kernel to kill it if the
supervisor itself dies, so no node is ever orphaned; the Fast DDS shared-memory segments of nodes that were
killed or crashed are removed when the graph ends (``shared_memory.py``); the terminal's settings are put back as
they were when the graph started (``terminal.py``: a real cell's evaluator reads it key by key, and a node killed
cannot restore it itself). Its temporary folder (the nodes' parameter files) is named after its PID: folders of
supervisors that died without cleaning up are removed at the next start.

With ``workers:=N`` (N graphs, each in its own ROS domain, one evaluator driving all of them) a required node that
exits takes only its own graph down: the supervisor stops that graph's other nodes and says so, the evaluator sees
the graph leave and hands its trial in flight to another graph, and the run goes on. When no graph is left, every
node is stopped and the exit code is non-zero, as with one graph.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from robofollow_ros.evaluation.leftovers import process_gone
from robofollow_ros.graph.declaration import (
    GraphDeclaration,
    NodeDeclaration,
    NodeInstance,
    graph_instances,
    node_environment,
)
from robofollow_ros.graph.domains import base_domain
from robofollow_ros.graph.shared_memory import held_segment_locks, remove_abandoned
from robofollow_ros.graph.terminal import terminal_kept
from robofollow_ros.interrupts import hold_stop_signals, set_death_signal

POLL_SECONDS = 0.05
SHM_SCAN_SECONDS = 1.0
"""How often the supervisor notes which Fast DDS shared-memory segments its nodes hold (to remove those a killed
node leaves behind)."""
STOP_GRACE_SECONDS = 5.0
"""How long a node that still takes SIGINT and SIGTERM has to exit once asked to (it is killed then)."""
EXIT_GRACE_SECONDS = 30.0
"""How long a node that is exiting (it ignores SIGINT and SIGTERM, as nodes do from the first one on) has in all: the
nodes of a graph took 0.4 s to exit on an idle machine and up to 4.5 s at a load of about 12 on 2 cores."""
FOLDER_PREFIX = 'robofollow_launch_'
CLEAN_EXIT_CODES = (0, 130, 143)
"""How a node that was asked to stop may exit (a node that had to be killed, or crashed, did not stop cleanly)."""
STOP_REASON_VARIABLE = 'ROBOFOLLOW_STOP_REASON_FILE'
"""The evaluator's name for the file that says why the graph was stopped (``nodes/evaluator.py``)."""


def _prepare_node_process() -> None:
    """In the node's process, before ``exec``: killed with the supervisor, and SIGINT and SIGTERM held until the node
    can take them without a traceback (``robofollow_ros/nodes/__init__.py``)."""
    set_death_signal(signal.SIGKILL)
    hold_stop_signals()


def node_command(node: NodeDeclaration, params_file: Path, *, python: str = sys.executable) -> list[str]:
    """The command line that starts ``node`` (the same as ``ros2 run robofollow <executable>`` with its remaps)."""
    command = [python, '-m', node.module, '--ros-args', '-r', f'__node:={node.name}', '--params-file', str(params_file)]
    for source, target in node.remappings:
        command += ['-r', f'{source}:={target}']
    return command


class Supervisor:
    """Runs the nodes of a resolved graph.

    Args:
        graph: the resolved declaration.
        environment: variables for every node on top of the launcher's own (``node_environment`` completes them).
        log: where the supervisor's own one-line messages go.
    """

    def __init__(
        self,
        graph: GraphDeclaration,
        *,
        environment: Mapping[str, str] | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.graph = graph
        self.environment = {**os.environ, **(environment or {})}
        self.instances = graph_instances(graph, base=base_domain(self.environment))
        self.log = log or (lambda text: print(f'[robofollow launch] {text}', file=sys.stderr, flush=True))
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.stop_signal: int | None = None
        self.shared_memory: set[str] = set()
        """The locks of the Fast DDS shared-memory segments the nodes were seen holding (``shared_memory.py``)."""

    def _request_stop(self, signum: int, _frame: Any) -> None:
        self.stop_signal = signum

    def run(self) -> int:
        """Start the graph, wait until it ends, stop every node; returns the exit code (``128 + signal`` when
        stopped by ``stop_signal``)."""
        previous = {sig: signal.signal(sig, self._request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        remove_stale_folders()
        folder = Path(tempfile.mkdtemp(prefix=f'{FOLDER_PREFIX}{os.getpid()}_'))
        # The evaluator of a real cell reads the terminal key by key: its settings come back even if it was killed.
        with terminal_kept():
            try:
                return self._run(folder)
            finally:
                self.stop(first=self.stop_signal or signal.SIGINT)
                remove_abandoned(self.shared_memory)
                shutil.rmtree(folder, ignore_errors=True)
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    def _stop_because(self, folder: Path, reason: str) -> None:
        """Tell the evaluator why the graph is stopped (read when its suite is interrupted)."""
        with contextlib.suppress(OSError):
            (folder / 'stop_reason').write_text(reason + '\n', encoding='utf-8')

    def _start(self, instance: NodeInstance, folder: Path) -> None:
        node = instance.node
        params = folder / f'{instance.label}.yaml'
        # ``/**/`` so the parameters reach the node in any namespace (a ``-r __ns:=/cell1`` remap).
        params.write_text(yaml.safe_dump({f'/**/{node.name}': {'ros__parameters': node.parameters}}), encoding='utf-8')
        environment = node_environment(instance, self.environment)
        environment[STOP_REASON_VARIABLE] = str(folder / 'stop_reason')
        self.processes[instance.label] = subprocess.Popen(
            node_command(node, params), env=environment, preexec_fn=_prepare_node_process
        )

    def _run(self, folder: Path) -> int:
        for instance in self.instances:
            if self.stop_signal is not None:
                return 128 + self.stop_signal
            self._start(instance, folder)
        self.log(f'started {", ".join(f"{name} ({p.pid})" for name, p in self.processes.items())}')
        graphs = {instance.graph for instance in self.instances if instance.graph is not None}
        watched = list(self.instances)
        next_scan = time.monotonic()
        while True:
            if time.monotonic() >= next_scan:
                self._note_shared_memory()
                next_scan = time.monotonic() + SHM_SCAN_SECONDS
            if self.stop_signal is not None:
                self.log(f'{signal.Signals(self.stop_signal).name}: stopping the graph')
                return 128 + self.stop_signal
            for instance in watched:
                raw = self.processes[instance.label].poll()
                if raw is None:
                    continue
                code = self._exited(instance, raw, folder, graphs)
                if code is not None:
                    return code
                if instance.node.required:  # its graph was stopped; the others go on
                    watched = [other for other in watched if other.graph != instance.graph]
                    break
            time.sleep(POLL_SECONDS)

    def _exited(self, instance: NodeInstance, raw: int, folder: Path, graphs: set[int]) -> int | None:
        """``instance`` exited with ``raw`` (``Popen.returncode``): the launch's exit code when that ends it (the
        main node, or a required node of the last graph), None when the run goes on (a node not required, or a
        required one whose graph, one of several, is stopped)."""
        code = 128 - raw if raw < 0 else raw
        if instance.node.main:
            if code != 0:
                self.log(f'{instance.label} exited with code {code}; stopping the graph')
            return code
        if not instance.node.required:
            return None
        graphs.discard(instance.graph)
        if instance.graph is None or not graphs:
            self.log(f'error: required node {instance.label} exited with code {code}; stopping the graph')
            self._stop_because(folder, exit_reason(instance.node.name, raw))
            return code if code > 0 else 1
        self.log(
            f'error: required node {instance.label} exited with code {code}; stopping its graph '
            f'(ROS domain {instance.domain}), {len(graphs)} graph(s) go on'
        )
        self.stop([self.processes[other.label] for other in self.instances if other.graph == instance.graph])
        return None

    def _note_shared_memory(self, processes: list[subprocess.Popen[bytes]] | None = None) -> None:
        for process in self.processes.values() if processes is None else processes:
            if process.poll() is None:  # (the PID of one that exited may be another process's by now)
                self.shared_memory |= held_segment_locks(process.pid)

    def stop(self, processes: list[subprocess.Popen[bytes]] | None = None, *, first: int = signal.SIGINT) -> None:
        """Send ``first`` (the signal that stopped the graph, default SIGINT) to every running node (last started
        first), then SIGTERM, then SIGKILL: ``STOP_GRACE_SECONDS`` after ``first`` to a node that still takes the
        signals (a node busy on a loaded machine may take seconds to run its handler), after
        ``EXIT_GRACE_SECONDS`` to one that is exiting; says which node did not stop cleanly (an exit code other
        than 0, 130 or 143, or a signal) and why it was killed."""
        chosen = list(self.processes.values()) if processes is None else processes
        running = [p for p in reversed(chosen) if p.poll() is None]
        self._note_shared_memory(running)
        signals = dict.fromkeys((first, signal.SIGTERM))
        for sig in signals:
            for process in running:
                if process.poll() is None:
                    process.send_signal(sig)
            _wait_for(running, STOP_GRACE_SECONDS / len(signals))
        why: dict[int, str] = {}
        asked = signal.Signals(first).name
        for process in running:
            if process.poll() is None and not exiting(process.pid):
                process.kill()
                why[id(process)] = f'killed: it had not begun to exit {STOP_GRACE_SECONDS:g} s after {asked}'
        _wait_for(running, EXIT_GRACE_SECONDS - STOP_GRACE_SECONDS)
        for process in running:
            if process.poll() is None:
                process.kill()
                why[id(process)] = f'killed: still exiting {EXIT_GRACE_SECONDS:g} s after {asked}'
            process.wait()
        labels = {id(process): label for label, process in self.processes.items()}
        for process in running:
            if process.returncode not in CLEAN_EXIT_CODES:
                reason = exit_reason(labels[id(process)], process.returncode)
                self.log(f'{reason} while stopping' + (f' ({why[id(process)]})' if id(process) in why else ''))


def _wait_for(processes: list[subprocess.Popen[bytes]], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(p.poll() is None for p in processes):
        time.sleep(POLL_SECONDS)


def exiting(pid: int) -> bool:
    """Whether process ``pid`` ignores both SIGINT and SIGTERM, as a node does once it is stopping
    (``ros/shutdown.py``); False where ``/proc`` cannot tell."""
    try:
        status = Path(f'/proc/{pid}/status').read_text(encoding='ascii')
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith('SigIgn:'):
            ignored = int(line.split()[1], 16)
            return all(ignored >> (number - 1) & 1 for number in (signal.SIGINT, signal.SIGTERM))
    return False


def exit_reason(node: str, returncode: int) -> str:
    """``node sim exited with code -9 (SIGKILL)``: a process's end as ``Popen.returncode`` reports it."""
    reason = f'node {node} exited with code {returncode}'
    if returncode < 0:
        with contextlib.suppress(ValueError):
            reason += f' ({signal.Signals(-returncode).name})'
    return reason


def remove_stale_folders(root: Path | None = None) -> list[Path]:
    """Remove the temporary folders of supervisors that are no longer running (killed with SIGKILL, their
    ``finally`` never ran); returns them. A folder whose owner PID is alive, or whose name holds no PID, stays."""
    removed = []
    for folder in Path(root or tempfile.gettempdir()).glob(f'{FOLDER_PREFIX}*'):
        owner = folder.name[len(FOLDER_PREFIX) :].split('_', 1)[0]
        if not owner.isdigit() or not folder.is_dir() or not process_gone(int(owner)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed
