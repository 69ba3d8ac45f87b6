"""Every node declares typed, read-only, described parameters with ranges, and refuses values that do not fit.

Real nodes in real processes: one process builds each node and lists what it declared (``describe_parameters``);
others start a node with a wrong-typed or out-of-range parameter and see it exit with one line.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from graph_helpers import graph_env

from robofollow_ros.benchmark.constants import MAX_QUERIES
from robofollow_ros.evaluation.guard import DEFAULT_POLICY_MEMORY_MIB, DEFAULT_QUERY_TIMEOUT
from robofollow_ros.graph.declaration import load_graph
from robofollow_ros.graph.suite_parameters import SUITE_PARAMETERS

DOMAIN = 53
DESCRIBE = r"""
import json, sys
import rclpy
from rcl_interfaces.msg import ParameterType
from robofollow_ros.nodes.aruco_tracker import ArucoTrackerNode
from robofollow_ros.nodes.ee_pose import EePoseNode
from robofollow_ros.nodes.evaluator import EvaluatorNode
from robofollow_ros.nodes.fake_hardware import FakeHardwareNode
from robofollow_ros.nodes.policy_bridge import PolicyBridge
from robofollow_ros.nodes.recorder import RecorderNode
from robofollow_ros.nodes.referee import RefereeNode
from robofollow_ros.nodes.sim import SimNode

NAMES = {value: name.removeprefix('PARAMETER_').lower() for name, value in vars(ParameterType).items()
         if name.startswith('PARAMETER_')}
rclpy.init(args=['--ros-args', '-p', 'policy:=hold', '-p', 'out:=' + sys.argv[1]])
described = {}
for factory in (
    SimNode, PolicyBridge, RefereeNode, RecorderNode, EePoseNode, EvaluatorNode, FakeHardwareNode, ArucoTrackerNode
):
    node = factory()
    names = sorted(node._parameters)
    described[node.get_name()] = {
        d.name: {
            'type': NAMES[d.type],
            'value': node.get_parameter(d.name).value,
            'read_only': d.read_only,
            'description': d.description,
            'integer_range': [[r.from_value, r.to_value] for r in d.integer_range],
            'floating_point_range': [[r.from_value, r.to_value] for r in d.floating_point_range],
        }
        for d in node.describe_parameters(names)
        if d.name != 'use_sim_time'
    }
    close = getattr(node, 'close', None)
    if close is not None:
        close()
    node.destroy_node()
rclpy.shutdown()
print(json.dumps(described))
"""


@pytest.fixture(scope='module')
def declared(tmp_path_factory) -> dict[str, dict[str, dict]]:
    out = tmp_path_factory.mktemp('out')
    done = subprocess.run(
        [sys.executable, '-c', DESCRIBE, str(out)],
        env=graph_env(DOMAIN),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_node_parameter_is_typed_read_only_and_described(declared) -> None:
    assert set(declared) == {
        'sim',
        'policy_bridge',
        'referee',
        'recorder',
        'ee_pose',
        'evaluator',
        'fake_hardware',
        'aruco_tracker',
    }
    for node, parameters in declared.items():
        assert parameters, node
        for name, described in parameters.items():
            assert described['type'] in {'bool', 'integer', 'double', 'string'}, (node, name, described)
            assert described['read_only'] and described['description'], (node, name)


def test_numbers_carry_their_ranges_and_defaults_come_from_the_suite(declared) -> None:
    bridge, evaluator = declared['policy_bridge'], declared['evaluator']
    assert bridge['max_queries'] == {**bridge['max_queries'], 'type': 'integer', 'value': MAX_QUERIES}
    assert bridge['max_queries']['integer_range'] == [[1, 2**63 - 1]]
    assert bridge['timeout']['type'] == 'double' and bridge['timeout']['value'] == DEFAULT_QUERY_TIMEOUT
    assert bridge['timeout']['floating_point_range'][0][0] == pytest.approx(0.001)
    assert bridge['policy_memory_limit']['value'] == DEFAULT_POLICY_MEMORY_MIB
    assert bridge['policy_memory_limit']['integer_range'] == [[0, 2**63 - 1]]
    assert bridge['trusted_policy']['type'] == 'bool'
    assert declared['referee']['end_timeout']['floating_point_range'][0][0] == pytest.approx(0.001)
    assert declared['sim']['width']['integer_range'] == [[1, 4096]]
    for name, default in SUITE_PARAMETERS.items():
        kind = {bool: 'bool', int: 'integer', float: 'double', str: 'string'}[type(default)]
        assert evaluator[name]['type'] == kind, name
        if name not in {'out', 'policy'}:
            assert evaluator[name]['value'] == default, name
    for name in ('workers', 'rounds', 'first_round', 'max_queries'):
        assert evaluator[name]['integer_range'] == [[1, 2**63 - 1]], name


def test_the_launchers_pass_every_parameter_with_the_type_its_node_declares(declared) -> None:
    graph = load_graph('sim', {'record': 'bag', 'policy_timeout': '300', 'rounds': '2'})
    for node in graph.nodes:
        for name, value in node.parameters.items():
            kind = {bool: 'bool', int: 'integer', float: 'double', str: 'string'}[type(value)]
            assert declared[node.name][name]['type'] == kind, (node.name, name, value)
    assert graph.nodes[1].parameters['timeout'] == 300.0


@pytest.mark.parametrize(
    ('module', 'parameter', 'message'),
    [
        ('referee', 'end_timeout:=-1.0', 'end_timeout of node referee: must satisfy 0.001 <= end_timeout'),
        ('referee', 'end_timeout:=soon', 'end_timeout of node referee: expected a number'),
        ('policy_bridge', 'max_queries:=0', 'max_queries of node policy_bridge: must satisfy 1 <= max_queries'),
        ('policy_bridge', 'trusted_policy:=maybe', 'trusted_policy of node policy_bridge: expected true or'),
        ('sim', 'width:=100000', 'width of node sim: must satisfy 1 <= width <= 4096'),
    ],
)
def test_a_node_refuses_a_parameter_of_the_wrong_type_or_out_of_range(module, parameter, message) -> None:
    done = subprocess.run(
        [sys.executable, '-m', f'robofollow_ros.nodes.{module}', '--ros-args', '-p', parameter, '-p', 'policy:=hold'],
        env=graph_env(DOMAIN),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith(f'error: parameter {message}') and 'Traceback' not in done.stderr, done.stderr[-3000:]


def test_a_launch_argument_of_the_wrong_type_is_refused_before_any_node_starts() -> None:
    from robofollow_ros.errors import GraphError

    with pytest.raises(
        GraphError,
        match=r"launch argument record_images \(parameter recorder\.images\) must be true or false \(got 'maybe'\)",
    ):
        load_graph('sim', {'record': 'bag', 'record_images': 'maybe'})
