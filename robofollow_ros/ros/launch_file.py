"""The ``ros2 launch`` description of a declared graph (``launch/sim.launch.py``, ``launch/real.launch.py``).

The nodes, their parameters and remappings come from ``config/graph_<name>.yaml`` through
``robofollow_ros.graph.declaration.load_graph``, the same declaration ``robofollow launch <name>`` starts, so the
two cannot drift apart. The evaluator is the main node: when it is done the launch shuts down; any other node
exiting shuts it down too. Every node runs in the environment ``robofollow launch`` gives it (``node_environment``):
the launching shell's, completed with the shipped Fast DDS profile (shared memory, this host only), headless MuJoCo
and the discovery range it needs where the user set none of them. ``workers:=N`` starts N graphs, graph i in ROS domain
ROS_DOMAIN_ID + i, and one evaluator for all (``graph_instances``); unlike ``robofollow launch``, which stops only
the graph of a node that died and goes on with the others, here any required node's exit ends the launch.
"""

from __future__ import annotations

import os
from typing import Any

from robofollow_ros.graph.declaration import added_environment, graph_instances, load_graph
from robofollow_ros.graph.domains import base_domain

PACKAGE = 'robofollow'


def graph_launch_description(graph: str) -> Any:
    """The ``LaunchDescription`` of graph ``graph``: declare its arguments; build one launch_ros Node per declared
    node once they are known."""
    from launch.actions import DeclareLaunchArgument, OpaqueFunction, Shutdown
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node
    from launch_ros.parameter_descriptions import ParameterValue

    from launch import LaunchDescription  # type: ignore[attr-defined]  # (mypy takes the repository's launch/)

    defaults = load_graph(graph)

    def nodes(context: Any, *_: Any, **__: Any) -> list[Any]:
        values = {argument: LaunchConfiguration(argument).perform(context) for argument in defaults.arguments}
        base = dict(getattr(context, 'environment', os.environ))
        actions = []
        for instance in graph_instances(load_graph(graph, values), base=base_domain(base)):
            node = instance.node
            parameters = {
                key: ParameterValue(value, value_type=type(value)) if isinstance(value, str) else value
                for key, value in node.parameters.items()
            }
            actions.append(
                Node(
                    package=PACKAGE,
                    executable=node.executable,
                    name=node.name,
                    parameters=[parameters],
                    remappings=list(node.remappings),
                    output='screen',
                    on_exit=Shutdown() if node.main or node.required else None,
                    additional_env=added_environment(instance, base),
                )
            )
        return actions

    return LaunchDescription(
        [
            *(
                DeclareLaunchArgument(argument, default_value=value, description=defaults.descriptions[argument])
                for argument, value in defaults.arguments.items()
            ),
            OpaqueFunction(function=nodes),
        ]
    )
