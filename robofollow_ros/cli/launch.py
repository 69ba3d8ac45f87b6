"""``robofollow launch``: start a declared node graph without the ros2 CLI (the same graph as sim.launch.py)."""

from __future__ import annotations

import argparse
import signal

from robofollow_ros.errors import RoboFollowError

HELP = 'start a ROS node graph (sim: the simulated cell; real: a real or fake-hardware cell) without the ros2 CLI'
DESCRIPTION = """\
Start the nodes of a graph declared in config/graph_<GRAPH>.yaml (sim or real), the same graph that
`ros2 launch robofollow <GRAPH>.launch.py` starts, as processes supervised by this command: ordered start,
the shipped Fast DDS shared-memory profile, SIGINT and SIGTERM both stop every node, and the command
exits non-zero when a required node dies. Arguments are NAME:=VALUE pairs, as for ros2 launch.

workers:=N runs N graphs side by side, graph i in ROS domain ROS_DOMAIN_ID + i (the range must stay
within 0-101 or 215-232), driven by one evaluator that writes every file. A required node that dies
stops only its graph; its trial runs on another, and the command exits non-zero only when no graph is left.

example:
  robofollow launch sim policy:=expert scenes:=1 levels:=L0 out:=runs/graph record:=bag
  ROS_DOMAIN_ID=20 robofollow launch sim workers:=2 policy:=expert scenes:=1 out:=runs/graph2   # domains 20, 21
  robofollow launch real robot_profile:=aloha_ros2_control fake_hardware:=true scenes:=1 out:=runs/real
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``robofollow launch``."""
    parser.add_argument('graph', nargs='?', default='sim', help='graph name: sim (default) or real')
    parser.add_argument('arguments', nargs='*', metavar='NAME:=VALUE', help='launch arguments')
    parser.add_argument('--show-args', action='store_true', help='list the launch arguments and exit')


def parse_launch_arguments(items: list[str]) -> dict[str, str]:
    """``['a:=1', 'b:=x']`` -> ``{'a': '1', 'b': 'x'}``.

    Raises:
        RoboFollowError: an item is not NAME:=VALUE.
    """
    arguments = {}
    for item in items:
        name, separator, value = item.partition(':=')
        if not separator or not name:
            raise RoboFollowError(f'launch argument {item!r} must look like NAME:=VALUE')
        arguments[name] = value
    return arguments


def run(args: argparse.Namespace) -> int:
    """Run the graph until it ends; its exit code."""
    from robofollow_ros.graph.declaration import load_graph
    from robofollow_ros.graph.supervisor import Supervisor

    name, items = args.graph, list(args.arguments)
    if ':=' in name:  # no graph named: the first item is an argument of the default graph
        name, items = 'sim', [name, *items]
    graph = load_graph(name, parse_launch_arguments(items))
    if args.show_args:
        for name, value in graph.arguments.items():
            print(f"    '{name}': {graph.descriptions[name]} (default: '{value}')")
        return 0
    supervisor = Supervisor(graph)
    code = supervisor.run()
    if supervisor.stop_signal is not None:
        from robofollow_ros.evaluation.suite import RunInterrupted

        raise RunInterrupted(signal.Signals(supervisor.stop_signal).name)  # one line, as `eval` prints it
    return code
