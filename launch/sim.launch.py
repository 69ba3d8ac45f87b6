"""Launch the simulated RoboFollow graph: ``ros2 launch robofollow sim.launch.py policy:=expert scenes:=1``.

The nodes come from ``config/graph_sim.yaml`` (``robofollow_ros.graph.declaration.load_graph``), the same
declaration ``robofollow launch sim`` starts; ``robofollow_ros.ros.launch_file`` builds the launch_ros actions the
same way for every graph. ``workers:=N`` starts N graphs, graph i in ROS domain ROS_DOMAIN_ID + i, and one
evaluator for all.
"""

from __future__ import annotations

from robofollow_ros.graph.declaration import GraphDeclaration, load_graph
from robofollow_ros.ros.launch_file import graph_launch_description

GRAPH = 'sim'


def declared_graph(arguments: dict[str, str]) -> GraphDeclaration:
    """The resolved graph for these launch argument values (what this file starts)."""
    return load_graph(GRAPH, arguments)


def generate_launch_description():
    """Declare the graph's arguments; build one launch_ros Node per declared node once they are known."""
    return graph_launch_description(GRAPH)
