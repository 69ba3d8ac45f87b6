"""The node graph declared as data (``config/graph_<name>.yaml``), resolved against launch arguments.

``launch/sim.launch.py`` (launch_ros) and ``robofollow launch`` (``graph/supervisor.py``) both start the nodes this
module resolves, so the two cannot drift apart.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from robofollow_ros.errors import GraphError, RoboFollowError
from robofollow_ros.graph.domains import DOMAIN_VARIABLE, graph_domains, parse_workers
from robofollow_ros.resources import share_file

SUBSTITUTION = re.compile(r'\$\((\w+)\)')
PROFILE = 'config/fastdds_shm.xml'
DISCOVERY_RANGE = 'ROS_AUTOMATIC_DISCOVERY_RANGE'
PROFILE_DISCOVERY_RANGE = 'SYSTEM_DEFAULT'
"""The discovery range the graph runs in with the shipped profile: rmw_fastrtps then leaves discovery to it."""
LEGACY_PROFILE_DISTROS = ('humble', 'jazzy')
POSE_SOURCES = ('sim', 'tracker', 'mocap')
"""Where the real-time graph's object poses come from (``pose_source``)."""
CELL_FLAGS = ('fake_hardware', 'markers')
OBJECT_PLACEHOLDER = '{object}'
FLAG_WORDS = ('true', 'false')


@dataclass(frozen=True)
class NodeDeclaration:
    """One node of the graph, with its parameters resolved.

    Attributes:
        name: node name (``__node`` remap).
        executable: console script (``ros2 run robofollow <executable>``), also ``robofollow_ros.nodes.<executable>``.
        parameters: typed parameter values.
        remappings: (from, to) topic remappings.
        required: the graph ends (non-zero) when this node exits.
        main: the graph ends with this node's exit code when it exits.
        once: started once whatever the number of graphs (the evaluator, which drives them all), in the user's
            ROS domain; every other node is started once per graph, in that graph's domain.
    """

    name: str
    executable: str
    parameters: dict[str, Any] = field(default_factory=dict)
    remappings: tuple[tuple[str, str], ...] = ()
    required: bool = False
    main: bool = False
    once: bool = False

    @property
    def module(self) -> str:
        """The Python module of the node (``python -m``)."""
        return f'robofollow_ros.nodes.{self.executable}'


@dataclass(frozen=True)
class GraphDeclaration:
    """A resolved graph: the nodes to start, in order, and the argument values used."""

    name: str
    nodes: tuple[NodeDeclaration, ...]
    arguments: dict[str, str]
    descriptions: dict[str, str]

    @property
    def workers(self) -> int:
        """How many graphs to run side by side (the ``workers`` argument; 1 if the graph declares none)."""
        return parse_workers(self.arguments.get('workers', '1'))


@dataclass(frozen=True)
class NodeInstance:
    """One process to start: a declared node in one graph's ROS domain.

    Attributes:
        node: the declaration.
        label: how messages name it (the node name; ``name@domain`` when several graphs run).
        domain: its ROS domain, or ``None`` to keep the launcher's environment (one graph).
        graph: the index of its graph, or ``None`` for a node started once.
    """

    node: NodeDeclaration
    label: str
    domain: int | None
    graph: int | None


def graph_instances(graph: GraphDeclaration, *, base: int) -> list[NodeInstance]:
    """The processes of ``graph.workers`` graphs (``graph/domains.py``): every graph's nodes, graph after graph,
    then the nodes started once. With one graph these are the declared nodes, in order, in the launcher's domain.

    Raises:
        GraphError: a bad ``workers`` value, or a domain range that cannot be used.
    """
    workers = graph.workers
    if workers == 1:
        return [NodeInstance(node, node.name, None, None if node.once else 0) for node in graph.nodes]
    domains = graph_domains(base, workers)
    instances = [
        NodeInstance(node, f'{node.name}@{domain}', domain, index)
        for index, domain in enumerate(domains)
        for node in graph.nodes
        if not node.once
    ]
    return instances + [NodeInstance(node, node.name, base, None) for node in graph.nodes if node.once]


GRAPHS = ('sim', 'real')
"""The shipped graphs (``config/graph_<name>.yaml``)."""


def graph_file(name: str) -> Path:
    """``config/graph_<name>.yaml`` (source tree or installed share folder)."""
    return share_file(f'config/graph_{name}.yaml')


def _other_graphs_hint(name: str, unknown: list[str]) -> str:
    """``; robot_profile is an argument of graph 'real' (robofollow launch real ...)`` when another shipped graph
    declares them all."""
    for other in GRAPHS:
        if other == name:
            continue
        document = yaml.safe_load(graph_file(other).read_text(encoding='utf-8'))
        if set(unknown) <= set(document.get('arguments') or {}):
            are = 'is an argument' if len(unknown) == 1 else 'are arguments'
            return f'; {", ".join(unknown)} {are} of graph {other!r} (robofollow launch {other} ...)'
    return ''


def _substitute(value: Any, arguments: Mapping[str, str], *, as_string: bool) -> Any:
    if not isinstance(value, str):
        return value
    used = SUBSTITUTION.findall(value)
    unknown = [name for name in used if name not in arguments]
    if unknown:
        raise GraphError(f'graph refers to undeclared argument(s) {", ".join(unknown)}')
    text = SUBSTITUTION.sub(lambda match: arguments[match.group(1)], value)
    if as_string or not used:
        return text
    try:
        return yaml.safe_load(text) if text.strip() else text
    except yaml.YAMLError:
        return text


def load_graph(name: str, arguments: Mapping[str, str] | None = None, *, path: Path | None = None) -> GraphDeclaration:
    """Read and resolve a graph declaration.

    Args:
        name: the graph (``sim``).
        arguments: launch argument values (strings, as on a ``ros2 launch`` command line).
        path: read this file instead of the installed ``config/graph_<name>.yaml``.

    Raises:
        GraphError: unknown graph or argument, an unknown robot, a malformed declaration, or evaluator parameters
            that would fail once the graph runs (``check_suite_parameters``: an unknown policy, a scene that does
            not exist, filters that select no task, ...).
    """
    try:
        source = path or graph_file(name)
    except RoboFollowError as error:
        raise GraphError(f'unknown graph {name!r}: {error}') from None
    try:
        document = yaml.safe_load(Path(source).read_text(encoding='utf-8'))
    except (OSError, yaml.YAMLError) as error:
        raise GraphError(f'cannot read graph {source}: {error}') from None
    declared = document.get('arguments') or {}
    given = dict(arguments or {})
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise GraphError(
            f'unknown launch argument(s) {", ".join(unknown)} of graph {name!r}{_other_graphs_hint(name, unknown)} '
            f'(declared: {", ".join(declared)})'
        )
    defaults = {key: str(spec.get('default', '')) for key, spec in declared.items()}
    values = {key: str(given.get(key, defaults[key])) for key, spec in declared.items()}
    if values.get('robot') == '' and values.get('robot_profile'):
        values['robot'] = _robot_of_profile(values['robot_profile'])
    _check_arguments(values)
    strings = set(document.get('strings') or [])
    nodes = []
    typed_defaults: list[dict[str, Any]] = []
    sources: list[dict[str, str]] = []
    for entry in document.get('nodes') or []:
        if not _applies(entry.get('when'), values):
            continue
        sources.append(_argument_sources(entry.get('parameters') or {}))
        parameters = {
            key: _substitute(value, values, as_string=key in strings)
            for key, value in (entry.get('parameters') or {}).items()
        }
        typed_defaults.append(
            {
                key: _substitute(value, defaults, as_string=key in strings)
                for key, value in (entry.get('parameters') or {}).items()
            }
        )
        nodes.append(
            NodeDeclaration(
                name=str(entry['name']),
                executable=str(entry['executable']),
                parameters=parameters,
                remappings=_remappings(entry.get('remappings') or [], values),
                required=bool(entry.get('required', False)),
                main=bool(entry.get('main', False)),
                once=bool(entry.get('once', False)),
            )
        )
    for node, origin in zip(nodes, sources, strict=True):
        if node.executable == 'evaluator':
            from robofollow_ros.graph.suite_parameters import SUITE_PARAMETERS, check_suite_parameters

            check_suite_parameters(
                {key: value for key, value in node.parameters.items() if key in SUITE_PARAMETERS}, labels=origin
            )
    nodes = [
        replace(
            node,
            parameters={
                key: _typed(_parameter_label(node.name, key, origin), value, default[key])
                for key, value in node.parameters.items()
            },
        )
        for node, default, origin in zip(nodes, typed_defaults, sources, strict=True)
    ]
    descriptions = {key: str(spec.get('description', '')) for key, spec in declared.items()}
    return GraphDeclaration(name=name, nodes=tuple(nodes), arguments=values, descriptions=descriptions)


def _argument_sources(parameters: Mapping[str, Any]) -> dict[str, str]:
    """Parameter -> the launch argument it is set from, for the parameters given as exactly ``$(argument)``: errors
    name what the user typed."""
    found = {}
    for key, value in parameters.items():
        match = SUBSTITUTION.fullmatch(value) if isinstance(value, str) else None
        if match:
            found[key] = match.group(1)
    return found


def _parameter_label(node: str, key: str, sources: Mapping[str, str]) -> str:
    parameter = f'parameter {node}.{key}'
    return f'launch argument {sources[key]} ({parameter})' if key in sources else parameter


def _typed(name: str, value: Any, default: Any) -> Any:
    """``value`` with the type of the parameter's default, since the nodes declare typed parameters: a whole number
    given for a float parameter (``policy_timeout:=300``) becomes a float; any other mismatch is refused here, before
    a node starts, rather than by the node."""
    if type(value) is type(default) or not isinstance(default, (bool, int, float)):
        return value
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    kind = (
        'true or false' if isinstance(default, bool) else 'a whole number' if isinstance(default, int) else 'a number'
    )
    raise GraphError(f'{name} must be {kind} (got {value!r})')


def _applies(when: Mapping[str, Any] | None, values: Mapping[str, str]) -> bool:
    """Whether every ``argument: value`` of a ``when`` holds; ``true``/``false`` match in any case (``True``)."""

    def same(given: str | None, expected: Any) -> bool:
        expected_text = str(expected).lower() if isinstance(expected, bool) else str(expected)
        if given is not None and expected_text.lower() in FLAG_WORDS:
            return given.strip().lower() == expected_text.lower()
        return given == expected_text

    return all(same(values.get(key), expected) for key, expected in (when or {}).items())


def _remappings(entries: list[Any], values: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """A node's remappings: ``[from, to]`` pairs, or ``{from, to, when}`` mappings that apply only ``when`` the
    arguments say so; ``{object}`` in a mapping's topics stands for every scene item (its pose topic, say)."""
    from robofollow_ros.topics import all_object_names

    pairs: list[tuple[str, str]] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            source, target = entry
            pairs.append((str(source), str(target)))
            continue
        if not _applies(entry.get('when'), values):
            continue
        source, target = str(entry['from']), str(entry['to'])
        names = all_object_names() if OBJECT_PLACEHOLDER in source + target else ['']
        pairs += [
            (source.replace(OBJECT_PLACEHOLDER, name), target.replace(OBJECT_PLACEHOLDER, name)) for name in names
        ]
    return tuple(pairs)


def _robot_of_profile(name: str) -> str:
    """The robot a profile drives (``''`` when it names none or cannot be read: ``_check_arguments`` says why)."""
    from robofollow_ros.robot.profiles import load_profile

    try:
        return load_profile(name).robot or ''
    except RoboFollowError:
        return ''


def _check_arguments(values: Mapping[str, str]) -> None:
    """Refuse values that would only fail once the nodes run (so the error comes before any node starts)."""
    from robofollow_ros.graph.suite_parameters import flag
    from robofollow_ros.robot.specs import get_robot_spec
    from robofollow_ros.state_layout import HEAD_CAMERA
    from robofollow_ros.tracking.extrinsic_file import calibration_for

    if values.get('robot'):
        try:
            get_robot_spec(values['robot'])
        except RoboFollowError as error:
            raise GraphError(f'launch argument robot: {error}') from None
    for name in CELL_FLAGS:
        if name in values:
            flag(f'launch argument {name}', values[name])
    _check_pose_source(values)
    _check_layout_gate(values)
    if values.get('calibration'):
        try:
            calibration_for(values['calibration'], HEAD_CAMERA)
        except RoboFollowError as error:
            raise GraphError(f'launch argument calibration: {error}') from None
    if 'robot_profile' in values:
        _check_robot_profile(values['robot_profile'], values.get('robot'))


def _check_pose_source(values: Mapping[str, str]) -> None:
    """``pose_source`` is known and fits ``fake_hardware`` and ``markers``."""
    from robofollow_ros.graph.suite_parameters import flag

    if 'pose_source' in values and values['pose_source'] not in POSE_SOURCES:
        raise GraphError(
            f'launch argument pose_source must be one of {", ".join(POSE_SOURCES)} (got {values["pose_source"]!r})'
        )
    if values.get('pose_source') == 'sim' and not flag('fake_hardware', values.get('fake_hardware', 'false')):
        raise GraphError(
            "launch argument pose_source: sim (the simulation's truth) needs fake_hardware:=true; "
            'a real cell takes pose_source:=tracker or mocap'
        )
    if (
        values.get('pose_source') == 'tracker'
        and flag('fake_hardware', values.get('fake_hardware', 'false'))
        and not flag('markers', values.get('markers', 'false'))
    ):
        raise GraphError(
            'launch argument pose_source: tracker over fake hardware needs markers:=true (the tracker sees the tags '
            'fake hardware draws; without them no object is ever tracked)'
        )


def _check_robot_profile(name: str, robot: str | None) -> None:
    """The profile loads, names a robot description, and the one ``robot`` names if given."""
    from robofollow_ros.robot.profiles import load_profile

    try:
        profile = load_profile(name)
    except RoboFollowError as error:
        raise GraphError(f'launch argument robot_profile: {error}') from None
    if profile.robot is None:
        raise GraphError(
            f'launch argument robot_profile: {profile.name!r} names no robot description, and the real-time graph '
            'needs one (the TCP poses the referee scores and the workspace check come from its URDF); add the '
            "arm's URDF as a registered robot and name it in the profile's robot field"
        )
    if robot is not None and profile.robot != robot:
        raise GraphError(
            f'launch argument robot: {robot!r} but robot profile {profile.name!r} drives the {profile.robot!r} robot'
        )


def _check_layout_gate(values: Mapping[str, str]) -> None:
    """The layout check's tolerances, waits and re-check period: positive numbers; its timeout: 0 or more."""
    for name in ('layout_position_mm', 'layout_rotation_deg', 'layout_pose_wait', 'layout_recheck', 'layout_timeout'):
        if name not in values:
            continue
        try:
            number = float(values[name])
        except ValueError:
            number = math.nan
        if name == 'layout_timeout':
            if not math.isfinite(number) or number < 0.0:
                raise GraphError(f'launch argument {name} must be 0 (for ever) or more seconds, got {values[name]!r}')
        elif not math.isfinite(number) or number <= 0.0:
            raise GraphError(f'launch argument {name} must be a positive number, got {values[name]!r}')


def graph_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every node of the graph runs in: the shipped Fast DDS profile (shared memory, this host
    only), headless MuJoCo rendering and localhost discovery, each only where ``base`` (the launcher's environment)
    does not set it.

    With the shipped profile, discovery is the profile's, which never leaves 127.0.0.1: a LOCALHOST (or unset)
    ``ROS_AUTOMATIC_DISCOVERY_RANGE`` becomes ``SYSTEM_DEFAULT``, because with LOCALHOST rmw_fastrtps adds a UDP
    transport of its own to the profile's, and that one binds 0.0.0.0 and the network address. With a profile of
    the user's, LOCALHOST stays the default.
    """
    environment = dict(os.environ if base is None else base)
    profile = share_file(PROFILE)
    environment.setdefault('FASTDDS_DEFAULT_PROFILES_FILE', str(profile))
    if environment.get('ROS_DISTRO', '').lower() in LEGACY_PROFILE_DISTROS:
        environment.setdefault('FASTRTPS_DEFAULT_PROFILES_FILE', environment['FASTDDS_DEFAULT_PROFILES_FILE'])
    environment.setdefault('MUJOCO_GL', 'egl')
    shipped = Path(environment['FASTDDS_DEFAULT_PROFILES_FILE']).resolve() == profile.resolve()
    if shipped and environment.get(DISCOVERY_RANGE, '').strip().upper() in ('', 'LOCALHOST'):
        environment[DISCOVERY_RANGE] = PROFILE_DISCOVERY_RANGE
    environment.setdefault(DISCOVERY_RANGE, 'LOCALHOST')
    return environment


def node_environment(instance: NodeInstance, base: Mapping[str, str]) -> dict[str, str]:
    """The whole environment ``instance`` runs in when launched from ``base``: ``graph_environment(base)`` in the
    instance's ROS domain. ``robofollow launch`` and the ``ros2 launch`` files both start nodes with it."""
    environment = graph_environment(base)
    if instance.domain is not None:
        environment[DOMAIN_VARIABLE] = str(instance.domain)
    return environment


def added_environment(instance: NodeInstance, base: Mapping[str, str]) -> dict[str, str]:
    """What ``node_environment`` adds to or changes in ``base`` (a launch_ros Node's ``additional_env``)."""
    return {name: value for name, value in node_environment(instance, base).items() if base.get(name) != value}
