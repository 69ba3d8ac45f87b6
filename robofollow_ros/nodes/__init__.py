"""Thin rclpy nodes translating topics to calls into the core packages.

Each node module is a process entry point (``ros2 run robofollow <node>``, ``python -m robofollow_ros.nodes.<node>``),
so this package picks MuJoCo's headless rendering backend before any node imports MuJoCo (``sim.gl``; the launch sets
``MUJOCO_GL`` too), and, in such a process, has SIGINT and SIGTERM end it silently until the node's ``main`` takes
them over (``interrupts.exit_quietly_while_starting``): a graph stopped while its nodes still import rclpy or MuJoCo
prints no traceback.
"""

import os
import pkgutil
import sys

from robofollow_ros.interrupts import exit_quietly_while_starting, take_stop_signals
from robofollow_ros.sim.gl import choose_gl_backend


def _started_as_a_node() -> bool:
    """Whether this process runs a node: ``python -m robofollow_ros.nodes.<node>`` (``sys.argv[0]`` is ``-m`` while
    the module is being found) or the ``<node>`` console script (``ros2 run``, ``ros2 launch``)."""
    program = getattr(sys, 'argv', [''])[:1] or ['']
    return program == ['-m'] or os.path.basename(program[0]) in {node.name for node in pkgutil.iter_modules(__path__)}


if _started_as_a_node():
    exit_quietly_while_starting()
else:
    take_stop_signals()  # never leave them held (only a node's launcher holds them: a no-op otherwise)
choose_gl_backend()
