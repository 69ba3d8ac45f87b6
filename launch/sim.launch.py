"""Launch the simulated RoboFollow graph: ``ros2 launch robofollow sim.launch.py policy:=expert scenes:=1``.

The nodes, their parameters and remappings come from ``config/graph_sim.yaml`` through
``robofollow_ros.graph.declaration.load_graph``, the same declaration ``robofollow launch sim`` starts, so the two
cannot drift apart. The evaluator is the main node: when it is done the launch shuts down; any other node exiting
shuts it down too. Every node runs with the shipped Fast DDS shared-memory profile. ``workers:=N`` starts N graphs,
graph i in ROS domain ROS_DOMAIN_ID + i, and one evaluator for all (``graph_instances``); unlike ``robofollow launch``,
which stops only the graph of a node that died and goes on with the others, here any required node's exit ends
the launch.
"""

from __future__ import annotations

from robofollow_ros.graph.declaration import GraphDeclaration, graph_environment, graph_instances, load_graph
from robofollow_ros.graph.domains import DOMAIN_VARIABLE, base_domain

PACKAGE = 'robofollow'
PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE', 'MUJOCO_GL')


def declared_graph(arguments: dict[str, str]) -> GraphDeclaration:
    """The resolved graph for these launch argument values (what this file starts)."""
    return load_graph('sim', arguments)


def generate_launch_description():
    """Declare the graph's arguments; build one launch_ros Node per declared node once they are known."""
    from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable, Shutdown
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node
    from launch_ros.parameter_descriptions import ParameterValue

    from launch import LaunchDescription

    defaults = load_graph('sim')
    environment = graph_environment({})

    def nodes(context, *_, **__):
        values = {name: LaunchConfiguration(name).perform(context) for name in defaults.arguments}
        actions = []
        for instance in graph_instances(declared_graph(values), base=base_domain()):
            node = instance.node
            domain = {} if instance.domain is None else {DOMAIN_VARIABLE: str(instance.domain)}
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
                    additional_env=domain,
                )
            )
        return actions

    return LaunchDescription(
        [
            *(
                DeclareLaunchArgument(name, default_value=value, description=defaults.descriptions[name])
                for name, value in defaults.arguments.items()
            ),
            *(SetEnvironmentVariable(name, environment[name]) for name in PROFILE_VARIABLES if name in environment),
            OpaqueFunction(function=nodes),
        ]
    )
