"""Launch the real-time RoboFollow graph (docs/real-cell.md):
``ros2 launch robofollow real.launch.py robot_profile:=aloha_ros2_control fake_hardware:=true scenes:=1``.

The nodes come from ``config/graph_real.yaml`` (``robofollow_ros.graph.declaration.load_graph``), the same
declaration ``robofollow launch real`` starts; ``robofollow_ros.ros.launch_file`` builds the launch_ros actions
the same way for every graph. A wrong robot profile or pose source is refused before any node starts.
"""

from __future__ import annotations

from robofollow_ros.graph.declaration import GraphDeclaration, load_graph
from robofollow_ros.ros.launch_file import graph_launch_description

GRAPH = 'real'


def declared_graph(arguments: dict[str, str]) -> GraphDeclaration:
    """The resolved graph for these launch argument values (what this file starts)."""
    return load_graph(GRAPH, arguments)


def generate_launch_description():
    """Declare the graph's arguments; build one launch_ros Node per declared node once they are known."""
    return graph_launch_description(GRAPH)
