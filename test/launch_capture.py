"""What a launch file starts: run its ``generate_launch_description()`` and the OpaqueFunction in it with given
launch arguments, and capture each Node action it builds (package, executable, name, parameters as the node would
read them, remappings, extra environment, whether its exit ends the launch).

With ``launch`` and ``launch_ros`` importable this runs the real classes: a ``LaunchContext`` holding the arguments,
each ``DeclareLaunchArgument`` filling in its default, the OpaqueFunction, and each Node's own substitution and
parameter evaluation (the parameter file it writes is read back). Without them (ROS from PyPI wheels has neither)
the same launch file code runs over minimal stand-ins of the classes it uses: each takes the real constructor's
keyword arguments and refuses any other, and parameters are evaluated by launch_ros's rules (humble to rolling: a
plain string is YAML-dumped then read back, so it stays a string; a bool, int or float stays as it is; a list must be
of one type; ``ParameterValue(value, value_type=T)`` yields a T); whatever these stand-ins do not model fails loudly
rather than pass.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from robofollow_ros.graph.declaration import added_environment, graph_instances, load_graph

PACKAGE = 'robofollow'


@dataclass(frozen=True)
class LaunchedNode:
    """One Node action, as ``ros2 launch`` would start it."""

    package: str
    executable: str
    name: str
    parameters: dict[str, Any]
    remappings: tuple[tuple[str, str], ...]
    environment: dict[str, str]
    ends_launch: bool


@dataclass(frozen=True)
class Launched:
    """What a launch file declared and started for one set of launch arguments."""

    real: bool  # launch_ros ran (not the stand-ins)
    arguments: dict[str, str]  # declared launch arguments and their defaults
    descriptions: dict[str, str]
    environment: dict[str, str]  # SetEnvironmentVariable actions
    nodes: tuple[LaunchedNode, ...]


def launch_ros_available() -> bool:
    return importlib.util.find_spec('launch_ros') is not None


def run_launch_file(path: Path, arguments: Mapping[str, str]) -> Launched:
    """Load the launch file at ``path`` and run it with ``arguments`` (``name:=value`` on the command line)."""
    spec = importlib.util.spec_from_file_location(f'launch_file_{path.stem.replace(".", "_")}', path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if launch_ros_available():
        return _run_real(module, arguments)
    with _stand_ins():
        return _run_stand_in(module, arguments)


def declared_nodes(graph: str, arguments: Mapping[str, str], *, base: int) -> tuple[LaunchedNode, ...]:
    """What the graph declaration (``robofollow launch``'s source) says the launch should start."""
    return tuple(
        LaunchedNode(
            package=PACKAGE,
            executable=instance.node.executable,
            name=instance.node.name,
            parameters=dict(instance.node.parameters),
            remappings=tuple(instance.node.remappings),
            environment=added_environment(instance, os.environ),
            ends_launch=instance.node.main or instance.node.required,
        )
        for instance in graph_instances(load_graph(graph, arguments), base=base)
    )


# --- the real launch / launch_ros ---------------------------------------------------------------------------------


def _run_real(module: types.ModuleType, arguments: Mapping[str, str]) -> Launched:
    from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable, Shutdown
    from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions
    from launch_ros.actions import Node

    from launch import LaunchContext  # type: ignore[attr-defined]

    def text(context: Any, value: Any) -> str:
        if isinstance(value, str):
            return value
        return perform_substitutions(context, normalize_to_list_of_substitutions(value))

    description = module.generate_launch_description()
    context = LaunchContext()
    context.launch_configurations.update(arguments)
    defaults: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    environment: dict[str, str] = {}
    actions: list[Any] = []
    for entity in description.entities:
        if isinstance(entity, DeclareLaunchArgument):
            defaults[entity.name] = perform_substitutions(context, entity.default_value)
            descriptions[entity.name] = entity.description
            entity.visit(context)
        elif isinstance(entity, SetEnvironmentVariable):
            environment[text(context, entity.name)] = text(context, entity.value)
        elif isinstance(entity, OpaqueFunction):
            actions.extend(entity.visit(context) or ())
        else:
            raise AssertionError(f'unexpected launch entity {entity!r}')
    nodes = []
    for action in actions:
        assert isinstance(action, Node), action
        action._perform_substitutions(context)  # (what Node.execute does before starting the process)
        parameters: dict[str, Any] = {}
        for argument, is_file in action._Node__expanded_parameter_arguments or ():
            assert is_file, argument
            written = Path(argument)
            (entry,) = yaml.safe_load(written.read_text(encoding='utf-8')).values()
            parameters.update(entry['ros__parameters'])
            written.unlink()
        on_exit = action._ExecuteLocal__on_exit
        exits = on_exit if isinstance(on_exit, list) else [on_exit]
        nodes.append(
            LaunchedNode(
                package=text(context, action.node_package),
                executable=text(context, action.node_executable),
                name=action.node_name.rsplit('/', 1)[-1],  # (a namespace placeholder may precede it)
                parameters=parameters,
                remappings=tuple(action.expanded_remapping_rules or ()),
                environment={
                    perform_substitutions(context, key): perform_substitutions(context, value)
                    for key, value in action.process_description.additional_env or ()
                },
                ends_launch=any(isinstance(item, Shutdown) for item in exits),
            )
        )
    return Launched(True, defaults, descriptions, environment, tuple(nodes))


# --- the stand-ins ------------------------------------------------------------------------------------------------


class _Context:
    def __init__(self, arguments: Mapping[str, str]) -> None:
        self.launch_configurations = dict(arguments)


class _LaunchDescription:
    def __init__(self, initial_entities: Any = None, *, deprecated_reason: str | None = None) -> None:
        self.entities = list(initial_entities or ())


class _DeclareLaunchArgument:
    def __init__(
        self,
        name: str,
        *,
        default_value: str | None = None,
        description: str | None = None,
        choices: Any = None,
        **kwargs: Any,
    ) -> None:
        _only_action_keywords(kwargs)
        assert isinstance(name, str) and isinstance(default_value, str | None), (name, default_value)
        self.name, self.default_value, self.description = name, default_value, description

    def visit(self, context: _Context) -> None:
        if self.name not in context.launch_configurations:
            assert self.default_value is not None, f'launch argument {self.name} has no value and no default'
            context.launch_configurations[self.name] = self.default_value


class _SetEnvironmentVariable:
    def __init__(self, name: str, value: str, **kwargs: Any) -> None:
        _only_action_keywords(kwargs)
        assert isinstance(name, str) and isinstance(value, str), (name, value)
        self.name, self.value = name, value


class _OpaqueFunction:
    def __init__(self, *, function: Any, args: Any = None, kwargs: Any = None, **left_over: Any) -> None:
        _only_action_keywords(left_over)
        assert callable(function)
        self.function, self.args, self.kwargs = function, list(args or ()), dict(kwargs or {})

    def visit(self, context: _Context) -> Any:
        return self.function(context, *self.args, **self.kwargs)


class _Shutdown:
    def __init__(self, *, reason: str = 'reason not given', **kwargs: Any) -> None:
        _only_action_keywords(kwargs)


class _LaunchConfiguration:
    def __init__(self, variable_name: str, *, default: Any = None) -> None:
        self.variable_name, self.default = variable_name, default

    def perform(self, context: _Context) -> str:
        if self.variable_name in context.launch_configurations:
            return context.launch_configurations[self.variable_name]
        assert self.default is not None, f"launch configuration '{self.variable_name}' does not exist"
        return str(self.default)


class _ParameterValue:
    def __init__(self, value: Any, *, value_type: Any = None) -> None:
        self.value, self.value_type = value, value_type

    def evaluate(self) -> Any:
        if self.value_type is None:
            return _yaml_value(self.value) if isinstance(self.value, str) else _plain_value(self.value)
        if self.value_type not in (str, int, float, bool):
            raise NotImplementedError(f'the stand-in ParameterValue does not model value_type {self.value_type!r}')
        text = isinstance(self.value, str) and self.value_type is not str
        value = yaml.safe_load(self.value) if text else self.value
        if self.value_type is float and type(value) is int:
            value = float(value)
        if type(value) is not self.value_type:
            raise TypeError(f'ParameterValue {self.value!r} is not a {self.value_type.__name__}')
        return value


_EXECUTE_KEYWORDS = frozenset(
    {
        'prefix',
        'cwd',
        'env',
        'additional_env',
        'shell',
        'sigterm_timeout',
        'sigkill_timeout',
        'emulate_tty',
        'output',
        'output_format',
        'cached_output',
        'log_cmd',
        'on_exit',
        'respawn',
        'respawn_delay',
        'respawn_max_retries',
        'condition',
    }
)


class _Node:
    """launch_ros.actions.Node's keywords; parameters and remappings evaluated as launch_ros does."""

    def __init__(
        self,
        *,
        executable: str,
        package: str | None = None,
        name: str | None = None,
        namespace: str | None = None,
        exec_name: str | None = None,
        parameters: list[Any] | None = None,
        remappings: Any = None,
        ros_arguments: Any = None,
        arguments: Any = None,
        **kwargs: Any,
    ) -> None:
        unknown = set(kwargs) - _EXECUTE_KEYWORDS
        if unknown:
            raise TypeError(f'Node() got unexpected keyword arguments {sorted(unknown)}')
        if namespace is not None or ros_arguments or arguments or exec_name is not None:
            raise NotImplementedError('the stand-in Node does not model namespace, ros_arguments or arguments')
        assert isinstance(package, str) and isinstance(executable, str) and isinstance(name, str)
        assert parameters is None or isinstance(parameters, list), parameters
        evaluated: dict[str, Any] = {}
        for item in parameters or ():
            if not isinstance(item, Mapping):
                raise NotImplementedError(f'the stand-in Node evaluates parameter dictionaries only, got {item!r}')
            for key, value in item.items():
                assert isinstance(key, str), key
                evaluated[key] = _parameter(key, value)
        rules = []
        for rule in remappings or ():
            source, target = rule
            assert isinstance(source, str) and isinstance(target, str), rule
            rules.append((source, target))
        on_exit = kwargs.get('on_exit')
        exits = on_exit if isinstance(on_exit, list) else [on_exit]
        environment = kwargs.get('additional_env') or {}
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in environment.items()), environment
        self.launched = LaunchedNode(
            package=package,
            executable=executable,
            name=name,
            parameters=evaluated,
            remappings=tuple(rules),
            environment=dict(environment),
            ends_launch=any(isinstance(item, _Shutdown) for item in exits),
        )


def _only_action_keywords(kwargs: Mapping[str, Any]) -> None:
    unknown = set(kwargs) - {'condition'}
    if unknown:
        raise TypeError(f'unexpected keyword arguments {sorted(unknown)}')


def _parameter(key: str, value: Any) -> Any:
    if isinstance(value, _ParameterValue):
        return value.evaluate()
    if isinstance(value, Mapping):
        raise NotImplementedError(f'the stand-in Node does not model nested parameters ({key})')
    if isinstance(value, str):  # (launch_ros's normalize_parameter_dict: yaml.dump, evaluated by yaml.safe_load)
        return _yaml_value(yaml.dump(value))
    return _plain_value(value)


def _yaml_value(text: str) -> Any:
    """A string of substitutions as launch_ros evaluates it: read as YAML, a scalar or a uniform list."""
    value = yaml.safe_load(text if text else "''")
    if type(value) in (bool, int, float, str):
        return value
    if isinstance(value, list):
        return _plain_value(value)
    raise TypeError(
        f'launch_ros cannot pass {text!r} (YAML {type(value).__name__}) as a parameter: wrap it in '
        'ParameterValue(value, value_type=str)'
    )


def _plain_value(value: Any) -> Any:
    if type(value) in (bool, int, float):
        return value
    if isinstance(value, list | tuple):
        if not value or len({type(item) for item in value}) != 1 or type(value[0]) not in (bool, int, float, str):
            raise TypeError(f'a list parameter must be non-empty with items of one of bool, int, float, str: {value!r}')
        return list(value)
    raise TypeError(f'launch_ros cannot pass {value!r} ({type(value).__name__}) as a parameter')


@contextlib.contextmanager
def _stand_ins() -> Iterator[None]:
    modules = {
        'launch': {'LaunchDescription': _LaunchDescription},
        'launch.actions': {
            'DeclareLaunchArgument': _DeclareLaunchArgument,
            'OpaqueFunction': _OpaqueFunction,
            'SetEnvironmentVariable': _SetEnvironmentVariable,
            'Shutdown': _Shutdown,
        },
        'launch.substitutions': {'LaunchConfiguration': _LaunchConfiguration},
        'launch_ros': {},
        'launch_ros.actions': {'Node': _Node},
        'launch_ros.parameter_descriptions': {'ParameterValue': _ParameterValue},
    }
    saved = {name: sys.modules.get(name) for name in modules}
    try:
        for name, attributes in modules.items():
            module = types.ModuleType(name, 'a stand-in (test/launch_capture.py)')
            if '.' not in name:
                module.__path__ = []  # a package, so that its submodules import
            module.__dict__.update(attributes)
            sys.modules[name] = module
        for name in modules:
            if '.' in name:
                parent, child = name.rsplit('.', 1)
                setattr(sys.modules[parent], child, sys.modules[name])
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _run_stand_in(module: types.ModuleType, arguments: Mapping[str, str]) -> Launched:
    description = module.generate_launch_description()
    assert isinstance(description, _LaunchDescription), description
    context = _Context(arguments)
    defaults: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    environment: dict[str, str] = {}
    nodes: list[LaunchedNode] = []
    for entity in description.entities:  # in order, as the launch service visits them
        if isinstance(entity, _DeclareLaunchArgument):
            assert entity.default_value is not None, entity.name
            defaults[entity.name] = entity.default_value
            descriptions[entity.name] = entity.description or ''
            entity.visit(context)
        elif isinstance(entity, _SetEnvironmentVariable):
            environment[entity.name] = entity.value
        elif isinstance(entity, _OpaqueFunction):
            for action in entity.visit(context) or ():
                assert isinstance(action, _Node), action
                nodes.append(action.launched)
        else:
            raise AssertionError(f'unexpected launch entity {entity!r}')
    return Launched(False, defaults, descriptions, environment, tuple(nodes))
