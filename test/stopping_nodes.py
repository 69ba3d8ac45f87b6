"""Node processes for the supervisor's stop tests, one per node name (``__node:=<name>``), and their graphs.

- ``done``: the main node; exits 0 once the others are ready (a clean completion).
- ``slow_exit``: an rclpy node run by ``run_node`` whose ``close`` takes ``SLOW_EXIT_SECONDS``, longer than the
  supervisor's stop grace (a clean exit slowed down by a busy machine).
- ``stuck``: takes SIGINT and SIGTERM and goes on (a node that does not stop).
- ``hung``: ignores both and never exits (a node hung on its way out).

Each writes ``<name>`` into the folder named by ``ROBOFOLLOW_TEST_READY`` once it is ready to be stopped. ``stuck``
and ``hung`` are rclpy participants, killed in the end, so they leave their Fast DDS shared-memory segments behind;
they write the names of the segment locks they hold into it, one a line.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from robofollow_ros.graph.declaration import GraphDeclaration, NodeDeclaration
from robofollow_ros.interrupts import take_stop_signals

SLOW_EXIT_SECONDS = 7.0
OTHERS = ('slow_exit', 'stuck', 'hung')


@dataclass(frozen=True)
class ModuleNode(NodeDeclaration):
    """A node whose process runs ``python -m stopping_nodes`` (the test folder is on ``PYTHONPATH``)."""

    @property
    def module(self) -> str:
        """This module."""
        return 'stopping_nodes'


def graph(name: str) -> GraphDeclaration:
    """``completion``: the four nodes above; ``starting``: the real referee node alone."""
    if name == 'starting':
        nodes: tuple[NodeDeclaration, ...] = (NodeDeclaration('referee', 'referee', required=True),)
    else:
        nodes = (*(ModuleNode(other, other) for other in OTHERS), ModuleNode('done', 'done', main=True))
    return GraphDeclaration(name=name, nodes=nodes, arguments={}, descriptions={})


def _ready(name: str, text: str = '') -> None:
    (Path(os.environ['ROBOFOLLOW_TEST_READY']) / name).write_text(text, encoding='utf-8')


def _slow_exit() -> int:
    from rclpy.node import Node

    from robofollow_ros.ros.runtime import run_node

    class SlowExit(Node):
        def __init__(self) -> None:
            super().__init__('slow_exit')
            _ready('slow_exit')

        def close(self) -> None:
            time.sleep(SLOW_EXIT_SECONDS)

    return run_node(SlowExit, sys.argv)


def main() -> int:
    """Run the node named on the command line."""
    name = next(arg.split(':=', 1)[1] for arg in sys.argv if arg.startswith('__node:='))
    if name == 'slow_exit':
        return _slow_exit()
    if name == 'done':
        take_stop_signals()
        folder = Path(os.environ['ROBOFOLLOW_TEST_READY'])
        while not all((folder / other).exists() for other in OTHERS):
            time.sleep(0.05)
        return 0
    handler = signal.SIG_IGN if name == 'hung' else (lambda number, frame: None)
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, handler)
    take_stop_signals()
    held: set[str] = set()
    alive = []
    if name in ('stuck', 'hung'):
        import rclpy

        from robofollow_ros.graph.shared_memory import held_segment_locks

        rclpy.init(args=sys.argv, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
        alive.append(rclpy.create_node(name))  # (the participant lives as long as its last node)
        held = held_segment_locks(os.getpid())
    _ready(name, ''.join(f'{lock}\n' for lock in sorted(held)))
    while True:
        time.sleep(1)


if __name__ == '__main__':
    raise SystemExit(main())
