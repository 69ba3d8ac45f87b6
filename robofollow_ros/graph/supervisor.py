"""``Supervisor``: starts a declared graph as processes and stops all of them together (``robofollow launch``).

What it guarantees (the real ``ros2 launch`` misses the SIGTERM part, platform notes §8): nodes start in declared
order in the graph environment; SIGINT and SIGTERM both stop the graph (SIGINT to every node, then SIGTERM, then
SIGKILL for nodes that do not exit in time); when the main node exits the graph stops with its exit code; when any
other required node exits the graph stops with a non-zero code and says which node died; every node asks the
kernel to kill it if the supervisor itself dies, so no node is ever orphaned.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from robofollow_ros.graph.declaration import GraphDeclaration, NodeDeclaration, graph_environment

PR_SET_PDEATHSIG = 1
POLL_SECONDS = 0.05
STOP_GRACE_SECONDS = 5.0


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


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
        environment: extra environment variables for every node (on top of ``graph_environment()``).
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
        self.environment = {**graph_environment(), **(environment or {})}
        self.log = log or (lambda text: print(f'[robofollow launch] {text}', file=sys.stderr, flush=True))
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.stop_signal: int | None = None

    def _request_stop(self, signum: int, _frame: Any) -> None:
        self.stop_signal = signum

    def run(self) -> int:
        """Start the graph, wait until it ends, stop every node; returns the exit code."""
        previous = {sig: signal.signal(sig, self._request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            with tempfile.TemporaryDirectory(prefix='robofollow_launch_') as folder:
                return self._run(Path(folder))
        finally:
            self.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _start(self, node: NodeDeclaration, folder: Path) -> None:
        params = folder / f'{node.name}.yaml'
        params.write_text(yaml.safe_dump({node.name: {'ros__parameters': node.parameters}}), encoding='utf-8')
        self.processes[node.name] = subprocess.Popen(
            node_command(node, params), env=self.environment, preexec_fn=_die_with_parent
        )

    def _run(self, folder: Path) -> int:
        for node in self.graph.nodes:
            if self.stop_signal is not None:
                return 128 + self.stop_signal
            self._start(node, folder)
        self.log(f'started {", ".join(f"{name} ({p.pid})" for name, p in self.processes.items())}')
        declared = {node.name: node for node in self.graph.nodes}
        while True:
            if self.stop_signal is not None:
                self.log(f'{signal.Signals(self.stop_signal).name}: stopping the graph')
                return 128 + self.stop_signal
            for name, process in self.processes.items():
                code = process.poll()
                if code is None:
                    continue
                node = declared[name]
                code = 128 - code if code < 0 else code
                if node.main:
                    if code != 0:
                        self.log(f'{name} exited with code {code}; stopping the graph')
                    return code
                if node.required:
                    self.log(f'error: required node {name} exited with code {code}; stopping the graph')
                    return code if code > 0 else 1
            time.sleep(POLL_SECONDS)

    def stop(self) -> None:
        """SIGINT every running node (last started first), then SIGTERM, then SIGKILL after a grace period."""
        running = [p for p in reversed(list(self.processes.values())) if p.poll() is None]
        for sig in (signal.SIGINT, signal.SIGTERM):
            for process in running:
                if process.poll() is None:
                    process.send_signal(sig)
            deadline = time.monotonic() + STOP_GRACE_SECONDS / 2
            while time.monotonic() < deadline and any(p.poll() is None for p in running):
                time.sleep(POLL_SECONDS)
        for process in running:
            if process.poll() is None:
                process.kill()
            process.wait()
