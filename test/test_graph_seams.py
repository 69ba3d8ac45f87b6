"""The graph's pure pieces: 14-D layout helpers, EpisodeSpec, the trajectory builder, chunk limits, the sim clock,
handshake messages, camera intrinsics and the graph declaration shared by both launchers."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import eval_process
import numpy as np
import pytest
from launch_capture import declared_nodes, run_launch_file

from robofollow_ros import topics
from robofollow_ros.benchmark import registry
from robofollow_ros.errors import EpisodeSpecError, GraphError, LayoutError, PolicyError, TrajectoryError
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.graph.clock import SimClock
from robofollow_ros.graph.declaration import graph_environment, graph_instances, load_graph
from robofollow_ros.graph.domains import base_domain, graph_domains
from robofollow_ros.graph.intrinsics import pinhole_from_fovy
from robofollow_ros.graph.supervisor import Supervisor, node_command
from robofollow_ros.interfaces import CHUNK_TICKET, EPISODE_END, EPISODE_SPEC, RESULT, SIM_STATUS, VERSIONS
from robofollow_ros.referee.builder import TrajectoryBuilder
from robofollow_ros.robot.description import home_state, joint_layout, known_joint_layouts, load_robot
from robofollow_ros.robot.specs import DEFAULT_ROBOT, robot_names
from robofollow_ros.ros.protocol import (
    ChunkTicket,
    ChunkTicketMessage,
    EpisodeEnd,
    EpisodeEndMessage,
    EpisodeSpecMessage,
    ResetCode,
    ResetEpisode,
    ResultMessage,
    SimStatus,
    SimStatusMessage,
    StatusEvent,
    record_from_result,
    result_message,
    spec_from_message,
    spec_message,
)
from robofollow_ros.safety.chunk_limits import ChunkLimits
from robofollow_ros.state_layout import GENERIC_LAYOUT, JointLayout, find_layout

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize('layout', known_joint_layouts(), ids=lambda layout: layout.robot)
def test_joint_state_and_per_arm_trajectories_round_trip_the_14_vector_by_name(layout: JointLayout) -> None:
    chunk = np.linspace(0.0, 1.0, 3 * 14).reshape(3, 14)
    chunk[:, [6, 13]] = [[0.0, 1.0], [1.0, 0.5], [0.25, 0.0]]
    per_arm = {
        arm: (list(layout.command_joints(arm))[::-1], layout.arm_command(chunk, arm)[:, ::-1])
        for arm in ('left', 'right')
    }
    np.testing.assert_array_equal(layout.chunk_from_arm_rows(per_arm), chunk)
    names, positions = layout.joint_state(chunk[1])
    assert len(set(names)) == len(names) == len(positions)
    shuffled = ['extra', *names[::-1]]
    state = layout.state_from_joint_state(shuffled, [99.0, *positions[::-1]])
    np.testing.assert_array_equal(state, chunk[1])
    left_gripper = positions[names.index(layout.grippers['left'])]
    assert left_gripper == pytest.approx(layout.gripper_scale) and 0.0 < layout.gripper_scale <= 1.0
    for arm in ('left', 'right'):
        for mimic in layout.gripper_mimics.get(arm, ()):
            assert positions[names.index(mimic)] == positions[names.index(layout.grippers[arm])]
    np.testing.assert_array_equal(layout.to_joints(chunk), [layout.to_joints(row) for row in chunk])
    assert find_layout(names, known_joint_layouts()) is not None
    assert find_layout(names, known_joint_layouts()).robot == layout.robot
    with pytest.raises(LayoutError, match=f'lacks {layout.grippers["right"]}'):
        layout.state_from_joint_state(layout.names[:-1], chunk[0][:-1])
    with pytest.raises(LayoutError, match='different numbers of points'):
        layout.chunk_from_arm_rows({'left': per_arm['left'], 'right': (per_arm['right'][0], per_arm['right'][1][:2])})
    with pytest.raises(LayoutError, match='no trajectory for the right arm'):
        layout.chunk_from_arm_rows({'left': per_arm['left']})
    other = next(candidate for candidate in known_joint_layouts() if candidate.robot != layout.robot)
    with pytest.raises(LayoutError, match='expected'):
        layout.chunk_from_arm_rows({arm: (other.command_joints(arm), rows) for arm, (_, rows) in per_arm.items()})


@pytest.mark.parametrize('robot', robot_names())
def test_each_robot_layout_names_the_movable_joints_of_its_urdf(robot: str) -> None:
    description = load_robot(robot)
    layout = joint_layout(robot)
    root = ET.parse(description.spec.urdf).getroot()
    movable = {joint.get('name') for joint in root.iter('joint') if joint.get('type') != 'fixed'}
    assert set(layout.published_names) == movable and len(layout.published_names) == len(movable) == 16
    assert layout.names[:6] == tuple(f'left_{joint}' for joint in description.spec.joints)
    assert layout.gripper_scale == description.arms['left'].finger_travel
    assert known_joint_layouts(robot)[0].robot == robot and known_joint_layouts()[0].robot == DEFAULT_ROBOT
    assert known_joint_layouts()[-1] is GENERIC_LAYOUT


def test_name_lists_and_layouts_import_without_mujoco() -> None:
    code = (
        'import sys; import robofollow_ros.robot.description as r, robofollow_ros.bags, '
        'robofollow_ros.referee.builder, '
        'robofollow_ros.evaluation.environment, robofollow_ros.safety.chunk_limits; '
        'r.known_joint_layouts(); assert "mujoco" not in sys.modules, "mujoco imported"'
    )
    subprocess.run([sys.executable, '-c', code], check=True)


def test_episode_spec_round_trips_resolves_and_rejects_malformed_json() -> None:
    task = registry.eval_tasks(scene=3, level=1)[0]
    spec = EpisodeSpec.for_trial(task, seed=7, round=2, variant='published')
    again = EpisodeSpec.from_json(spec.to_json())
    assert again == spec
    resolved_task, layout = again.resolve()
    assert resolved_task.task_id == task.task_id and layout.name == task.layout
    assert EpisodeSpec.from_json(spec.to_json()).episode_id == spec.episode_id
    broken = json.loads(spec.to_json())
    for change, message in [
        ({'seed': 'x'}, "'seed' must be an integer"),
        ({'variant': 'literal'}, 'variant'),
        ({'arm': 'middle'}, 'arm'),
        ({'task_id': ''}, "'task_id' must be a non-empty string"),
    ]:
        with pytest.raises(EpisodeSpecError, match=message):
            EpisodeSpec.from_mapping({**broken, **change})
    with pytest.raises(EpisodeSpecError, match='not valid JSON'):
        EpisodeSpec.from_json('{oops')
    with pytest.raises(EpisodeSpecError, match='lacks instruction'):
        EpisodeSpec.from_mapping({k: v for k, v in broken.items() if k != 'instruction'})
    with pytest.raises(EpisodeSpecError, match='no_such_task'):
        EpisodeSpec.from_mapping({**broken, 'task_id': 'no_such_task'}).resolve()


def test_trajectory_builder_orders_by_stamp_and_holds_signals() -> None:
    builder = TrajectoryBuilder()
    joints = list(GENERIC_LAYOUT.names)
    for stamp in (30, 10, 20):
        for arm in ('left', 'right'):
            builder.add_pose(topics.ee_pose_topic(arm), stamp, [stamp, 0, 0], [1, 0, 0, 0])
        builder.add_joint_state(stamp, joints, [stamp / 100] * 14)
    builder.add_pose(topics.object_pose_topic('cube'), 5, [1, 2, 3], [1, 0, 0, 0])
    built = builder.build(origin_ns=10, frames_are_rows=True)
    trajectory = built.trajectory
    np.testing.assert_allclose(trajectory.t, [0.0, 1e-8, 2e-8])
    np.testing.assert_allclose(trajectory.ee['left'][:, 0], [10, 20, 30])
    np.testing.assert_allclose(trajectory.grip['right'], [0.1, 0.2, 0.3])
    np.testing.assert_allclose(trajectory.obj_pos['cube'], [[1, 2, 3]] * 3)
    assert trajectory.frames_are_rows and built.joint_positions.shape == (3, 14)
    assert len(builder.build(since_ns=20).trajectory) == 2
    with pytest.raises(TrajectoryError, match='no EE pose data for the left arm'):
        TrajectoryBuilder().build()


@pytest.mark.parametrize('robot', robot_names())
def test_chunk_limits_reject_out_of_range_and_too_fast_rows(robot: str) -> None:
    limits = ChunkLimits.for_robot(robot, max_row_step=0.5)
    description = load_robot(robot)
    np.testing.assert_array_equal(limits.upper[:6], description.arms['left'].upper)
    home = home_state(robot)
    steady = np.tile(home, (4, 1))
    limits.check(steady, home)
    outside = steady.copy()
    outside[2, 1] = 9.0
    name = description.arms['left'].joints[1]
    with pytest.raises(PolicyError, match=rf'row 2 puts {name} at 9\.0000, outside its limits'):
        limits.check(outside, home)
    jump = steady.copy()
    jump[1:, 9] += 0.6
    name = description.arms['right'].joints[2]
    with pytest.raises(PolicyError, match=rf'row 1 moves {name} by 0\.6000 in one row'):
        limits.check(jump, home)
    with pytest.raises(PolicyError, match='row 0 moves'):
        limits.check(steady, home + np.r_[np.zeros(13), 0.0] + np.r_[0.7, np.zeros(13)])


def test_sim_clock_never_goes_backwards_across_episodes() -> None:
    clock = SimClock()
    first = clock.start_episode()
    stamps = [clock.stamp(t) for t in (0.0, 0.06, 4.2)]
    second = clock.start_episode()
    assert second > stamps[-1] and clock.stamp(0.0) == second
    assert stamps == sorted(stamps) and stamps[0] == first


def test_handshake_messages_round_trip_through_the_typed_messages_and_reject_garbage() -> None:
    status = SimStatus(event=StatusEvent.EXECUTED, episode_id='e', stamp_ns=5, for_stamp_ns=3, rows=50)
    message = status.to_message()
    assert isinstance(message, SimStatusMessage) and message.event == SimStatusMessage.EVENT_EXECUTED
    assert SimStatus.from_message(message) == status
    end = EpisodeEnd(
        episode_id='e',
        end_stamp_ns=9,
        queries=2,
        executed_rows=60,
        policy_error='x',
        error_kind='timeout',
        bridge_overhead_ms=(1.5, 2.0),
    )
    assert EpisodeEnd.from_message(end.to_message()) == end
    assert end.bookkeeping()['error_kind'] == 'timeout'
    clean = EpisodeEnd(episode_id='e', end_stamp_ns=9, queries=2, executed_rows=60)
    assert EpisodeEnd.from_message(clean.to_message()) == clean  # None survives the message's empty strings
    # The example: an unknown event (and a stamp that is no number) was accepted from JSON.
    with pytest.raises(GraphError, match='SimStatus event 7 is not one of'):
        SimStatus.from_message(SimStatusMessage(version=VERSIONS[SIM_STATUS], event=7, episode_id='e', stamp_ns=1))
    with pytest.raises(GraphError, match='version 2 is not 1'):
        SimStatus.from_message(SimStatusMessage(version=2, event=SimStatusMessage.EVENT_RESET, episode_id='e'))
    with pytest.raises(GraphError, match='without for_stamp_ns'):
        SimStatus.from_message(
            SimStatusMessage(
                version=VERSIONS[SIM_STATUS], event=SimStatusMessage.EVENT_EXECUTED, episode_id='e', stamp_ns=1
            )
        )
    with pytest.raises(GraphError, match='no episode_id'):
        EpisodeEnd.from_message(EpisodeEndMessage(version=VERSIONS[EPISODE_END]))
    ticket = ChunkTicket(episode_id='e', for_stamp_ns=7, rows=50, digests={'left': 2**64 - 1, 'right': 3})
    assert ChunkTicket.from_message(ticket.to_message()) == ticket
    hold = ChunkTicket(episode_id='e', for_stamp_ns=-1, rows=1, digests={'left': 1, 'right': 2}, hold=True)
    assert ChunkTicket.from_message(hold.to_message()) == hold  # a hold before any observation still holds
    with pytest.raises(GraphError, match='no rows'):
        ChunkTicket.from_message(ChunkTicketMessage(version=VERSIONS[CHUNK_TICKET], episode_id='e', for_stamp_ns=7))
    with pytest.raises(GraphError, match='without for_stamp_ns'):
        ChunkTicket.from_message(
            ChunkTicketMessage(version=VERSIONS[CHUNK_TICKET], episode_id='e', for_stamp_ns=-1, rows=3)
        )
    with pytest.raises(GraphError, match='ChunkTicket version 2 is not 1'):
        ChunkTicket.from_message(ChunkTicketMessage(version=2, episode_id='e', rows=1))


def test_episode_spec_and_result_round_trip_through_their_messages() -> None:
    task = registry.eval_tasks(scene=1, level=1)[0]
    spec = EpisodeSpec.for_trial(task, seed=3, round=2, variant='corrected', layout=registry.layout_of(task).name)
    message = spec_message(spec)
    assert message.version == EpisodeSpecMessage.VERSION == VERSIONS[EPISODE_SPEC]
    assert spec_from_message(message) == spec
    message.arm = 'middle'
    with pytest.raises(EpisodeSpecError, match='arm'):
        spec_from_message(message)
    record = {
        'episode_id': spec.episode_id,
        'task_id': spec.task_id,
        'scored': True,
        'intent_score': 0.75,
        'exec_score': 0.5,
        'completion_ok': True,
        'stages': [
            {'name': 'reach', 'intent': 0.5, 'exec': 0.25, 'max': 0.5, 'intent_reason': 'ok', 'exec_reason': 'slow'}
        ],
        'adjustments': [{'name': 'bonus', 'score': 'intent', 'amount': 0.1, 'reason': 'retry'}],
        'events': {'grasp': 1.5},
    }
    result = result_message(record)
    assert result.stages[0].name == 'reach' and result.stages[0].exec == 0.25 and result.stages[0].max == 0.5
    assert result.adjustments[0].amount == 0.1 and result.intent_score == 0.75 and result.completion_ok
    assert record_from_result(result) == record
    result.episode_id = 'other'
    with pytest.raises(GraphError, match='not the record of its episode_id'):
        record_from_result(result)
    with pytest.raises(GraphError, match='cannot be sent'):
        result_message({**record, 'intent_score': float('nan')})


def test_every_interface_definition_carries_the_version_the_code_speaks() -> None:
    kinds = {
        SIM_STATUS: SimStatusMessage,
        EPISODE_END: EpisodeEndMessage,
        EPISODE_SPEC: EpisodeSpecMessage,
        RESULT: ResultMessage,
        CHUNK_TICKET: ChunkTicketMessage,
    }
    assert set(kinds) == set(VERSIONS)
    for name, kind in kinds.items():
        assert VERSIONS[name] == kind.VERSION, name
    assert {int(code) for code in ResetCode} == {
        ResetEpisode.Response.OK,
        ResetEpisode.Response.INVALID_EPISODE,
        ResetEpisode.Response.RESET_FAILED,
    }


def test_camera_intrinsics_match_the_vertical_field_of_view() -> None:
    info = pinhole_from_fovy(37.0, width=320, height=240)
    fy = info.k[4]
    assert math.degrees(2 * math.atan(120 / fy)) == pytest.approx(37.0)
    assert info.k[0] == fy and info.k[2] == 160 and info.k[5] == 120 and info.p[0] == fy


def test_graph_declaration_resolves_arguments_and_typed_parameters() -> None:
    graph = load_graph('sim', {'policy': 'blind', 'scenes': '1,2', 'rounds': '3', 'record': 'bag'})
    names = [node.name for node in graph.nodes]
    assert names == ['sim', 'policy_bridge', 'referee', 'recorder', 'evaluator']
    evaluator = graph.nodes[-1]
    assert evaluator.main and evaluator.parameters['rounds'] == 3 and evaluator.parameters['scenes'] == '1,2'
    assert evaluator.parameters['policy_kwargs'] == '{}' and graph.nodes[1].parameters['policy'] == 'blind'
    assert 'recorder' not in [node.name for node in load_graph('sim').nodes]
    with pytest.raises(GraphError, match='unknown launch argument'):
        load_graph('sim', {'polcy': 'x'})
    with pytest.raises(GraphError, match='unknown graph'):
        load_graph('nonexistent')
    environment = graph_environment({})
    assert Path(environment['FASTDDS_DEFAULT_PROFILES_FILE']) == ROOT / 'config' / 'fastdds_shm.xml'
    assert 'FASTRTPS_DEFAULT_PROFILES_FILE' not in environment
    assert graph_environment({'ROS_DISTRO': 'jazzy'})['FASTRTPS_DEFAULT_PROFILES_FILE'].endswith('fastdds_shm.xml')


USER_SETTINGS = {
    'MUJOCO_GL': 'osmesa',
    'FASTDDS_DEFAULT_PROFILES_FILE': '/etc/cell/fastdds_cell.xml',
    'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET',
}


@pytest.mark.parametrize('graph', ['sim', 'real'])
@pytest.mark.parametrize('user', [{}, USER_SETTINGS], ids=['unset', 'set-by-the-user'])
def test_both_launchers_hand_every_node_the_same_environment_and_keep_what_the_user_set(
    graph, user, tmp_path, monkeypatch
) -> None:
    for name in USER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    for name, value in user.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv('ROS_DOMAIN_ID', '40')
    arguments = {'workers': '2'} if graph == 'sim' else {}
    supervisor = Supervisor(load_graph(graph, arguments))
    launched = run_launch_file(ROOT / 'launch' / f'{graph}.launch.py', arguments)
    captured: list[dict[str, str]] = []
    monkeypatch.setattr(
        'robofollow_ros.graph.supervisor.subprocess.Popen', lambda command, *, env, **_: captured.append(dict(env))
    )
    assert [node.name for node in launched.nodes] == [instance.node.name for instance in supervisor.instances]
    for instance, node in zip(supervisor.instances, launched.nodes, strict=True):
        supervisor._start(instance, tmp_path)
        by_supervisor = captured.pop()
        by_supervisor.pop('ROBOFOLLOW_STOP_REASON_FILE')
        assert {**os.environ, **node.environment} == by_supervisor, instance.label
        assert by_supervisor['ROS_DOMAIN_ID'] == str(40 if instance.domain is None else instance.domain)
        for name in USER_SETTINGS:
            assert by_supervisor[name] == user.get(name, graph_environment({})[name])


def test_the_robot_argument_reaches_every_node_and_an_unknown_robot_is_refused_before_any_starts(capsys) -> None:
    assert load_graph('sim').arguments['robot'] == DEFAULT_ROBOT
    graph = load_graph('sim', {'robot': 'primitive', 'record': 'bag'})
    assert {node.name: node.parameters['robot'] for node in graph.nodes} == dict.fromkeys(
        ('sim', 'policy_bridge', 'referee', 'recorder', 'evaluator'), 'primitive'
    )
    with pytest.raises(
        GraphError, match="launch argument robot: unknown robot 'ur5'; choose one of aloha, piper, primitive"
    ):
        load_graph('sim', {'robot': 'ur5'})
    from robofollow_ros.cli import main

    assert main(['launch', 'sim', 'robot:=ur5']) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "unknown robot 'ur5'" in error


@pytest.mark.parametrize(
    'arguments',
    [
        {},
        {'policy': 'expert', 'levels': 'L1', 'record': 'bag', 'out': 'OUT', 'policy_kwargs': '{}', 'scenes': '1,2'},
        {'workers': '2', 'robot': 'primitive', 'rounds': '3', 'trusted_policy': 'true'},
    ],
    ids=['defaults', 'bag', 'two-workers'],
)
def test_sim_launch_file_starts_the_graph_robofollow_launch_reads(arguments, tmp_path, monkeypatch) -> None:
    # The launch file's OpaqueFunction runs (real launch_ros when importable, stand-ins otherwise: launch_capture)
    # and every Node it builds is compared with the declaration robofollow launch starts.
    arguments = {key: str(tmp_path) if value == 'OUT' else value for key, value in arguments.items()}
    monkeypatch.setenv('ROS_DOMAIN_ID', '40')
    launched = run_launch_file(ROOT / 'launch' / 'sim.launch.py', arguments)
    graph = load_graph('sim', arguments)
    assert launched.arguments == load_graph('sim').arguments and set(launched.descriptions) == set(graph.arguments)
    assert launched.nodes == declared_nodes('sim', arguments, base=40)
    assert launched.environment == {}  # (each node's own additional_env, never the launch process's environment)
    # (not only equal to the declaration: what the simulated graph needs, spelled out)
    workers = int(arguments.get('workers', '1'))
    per_graph = ['sim', 'policy_bridge', 'referee'] + (['recorder'] if arguments.get('record') == 'bag' else [])
    assert [(node.name, {**os.environ, **node.environment}['ROS_DOMAIN_ID']) for node in launched.nodes] == [
        *((name, str(40 + graph)) for graph in range(workers) for name in per_graph),
        ('evaluator', '40'),
    ]
    assert all(node.package == 'robofollow' and node.executable == node.name for node in launched.nodes)
    assert all(node.ends_launch for node in launched.nodes)  # the evaluator (main) and every required node
    robot = arguments.get('robot', 'aloha')
    assert all(node.parameters['robot'] == robot for node in launched.nodes)
    evaluator = launched.nodes[-1].parameters
    assert evaluator['policy_kwargs'] == '{}' and evaluator['scenes'] == arguments.get('scenes', '')
    assert evaluator['rounds'] == int(arguments.get('rounds', '1')) and evaluator['workers'] == workers
    bridge = launched.nodes[1].parameters
    assert bridge['trusted_policy'] is (arguments.get('trusted_policy') == 'true') and bridge['timeout'] == 300.0
    params = tmp_path / 'p.yaml'
    command = node_command(graph.nodes[0], params)
    assert command[1:3] == ['-m', 'robofollow_ros.nodes.sim'] and '__node:=sim' in command


def test_graph_domains_follow_the_user_domain_and_refuse_unusable_ranges() -> None:
    assert graph_domains(50, 1) == [50] and graph_domains(150, 1) == [150]
    assert graph_domains(50, 3) == [50, 51, 52] and graph_domains(230, 3) == [230, 231, 232]
    with pytest.raises(GraphError, match='need domains 231-233, beyond 232; set ROS_DOMAIN_ID to at most 230'):
        graph_domains(231, 3)
    with pytest.raises(GraphError, match='need domains 100-103, and 102-103 fall among the ephemeral ports'):
        graph_domains(100, 4)
    assert base_domain({}) == 0 and base_domain({'ROS_DOMAIN_ID': ' 42 '}) == 42
    for bad, message in [('x', 'not a whole number'), ('233', 'outside 0-232')]:
        with pytest.raises(GraphError, match=message):
            base_domain({'ROS_DOMAIN_ID': bad})
    with pytest.raises(GraphError, match='workers must be at least 1'):
        graph_instances(load_graph('sim', {'workers': '0'}), base=0)


def test_n_graphs_start_every_node_once_per_domain_and_the_evaluator_once() -> None:
    single = load_graph('sim', {'record': 'bag'})
    assert [(i.label, i.domain, i.graph) for i in graph_instances(single, base=7)] == [
        ('sim', None, 0),
        ('policy_bridge', None, 0),
        ('referee', None, 0),
        ('recorder', None, 0),
        ('evaluator', None, None),
    ]
    double = load_graph('sim', {'record': 'bag', 'workers': '2'})
    instances = graph_instances(double, base=50)
    assert [(i.label, i.domain, i.graph) for i in instances] == [
        *((f'{name}@50', 50, 0) for name in ('sim', 'policy_bridge', 'referee', 'recorder')),
        *((f'{name}@51', 51, 1) for name in ('sim', 'policy_bridge', 'referee', 'recorder')),
        ('evaluator', 50, None),
    ]
    assert instances[-1].node.parameters['workers'] == 2 and instances[-1].node.main
    with pytest.raises(GraphError, match='beyond 232'):
        Supervisor(load_graph('sim', {'workers': '4'}), environment={'ROS_DOMAIN_ID': '230'})


@pytest.mark.parametrize(
    ('argument', 'message'),
    [
        ('policy:=nope', "unknown policy 'nope'"),
        ('scenes:=9', "unknown scene '9'"),
        ('levels:=L7', "unknown level 'L7'"),
        ('rounds:=0', 'must be at least 1'),
        ('record:=json', 'record must be one of none, bag'),
        ('tasks:=no_such_task_anywhere', 'no evaluation task matches'),
        ('policy_kwargs:={oops', 'not valid JSON'),
        ('trusted_policy:=maybe', "trusted_policy must be true or false (got 'maybe')"),
        ('policy_memory_limit:=abc', "policy_memory_limit must be a whole number (got 'abc')"),
        ('policy_timeout:=soon', "launch arguments: policy_timeout must be a number (got 'soon')"),
    ],
)
def test_every_launch_argument_is_checked_before_any_node_starts(argument, message, capsys, monkeypatch) -> None:
    started = []
    monkeypatch.setattr(Supervisor, '_start', lambda self, instance, folder: started.append(instance.label))
    from robofollow_ros.cli import main

    assert main(['launch', 'sim', argument]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and message in error, error
    assert started == []


def test_every_argument_description_survives_yaml_parsing_whole() -> None:
    # An unquoted comma inside a flow mapping ends the description there and turns the rest into a key of its own.
    import yaml

    source = ROOT / 'config' / 'graph_sim.yaml'
    declared = yaml.safe_load(source.read_text(encoding='utf-8'))['arguments']
    lines = {
        line.split(':', 1)[0].strip(): line
        for line in source.read_text(encoding='utf-8').splitlines()
        if 'description:' in line
    }
    for name, spec in declared.items():
        assert set(spec) == {'default', 'description'}, (name, spec)
        raw = lines[name].split('description:', 1)[1].strip().removesuffix('}').strip().strip('\'"')
        assert spec['description'] == raw, name
    descriptions = load_graph('sim').descriptions
    assert descriptions['out'] == 'output folder of results.jsonl, run.json and episodes'
    assert descriptions['task_ids'] == 'exact task ids, comma-separated (instead of the filters)'


def test_temporary_folders_of_dead_launchers_are_removed_and_live_ones_kept(tmp_path, live_pid) -> None:
    from robofollow_ros.graph.supervisor import FOLDER_PREFIX, remove_stale_folders

    stale = tmp_path / f'{FOLDER_PREFIX}{eval_process.dead_pid()}_abc'
    live = tmp_path / f'{FOLDER_PREFIX}{live_pid}_def'
    unnamed = tmp_path / f'{FOLDER_PREFIX}xyz'
    for folder in (stale, live, unnamed):
        folder.mkdir()
        (folder / 'sim.yaml').write_text('x')
    assert remove_stale_folders(tmp_path) == [stale]
    assert not stale.exists() and live.exists() and unnamed.exists()


def test_the_installed_interfaces_are_the_repository_definitions_ros2_interface_show_prints() -> None:
    # `ros2 interface show robofollow_interfaces/msg/X` prints the .msg text from the package's share folder
    # (no ros2 CLI here): the build imported must be of the current definitions, with the stages a typed array.
    import robofollow_interfaces

    prefix = Path(robofollow_interfaces.__file__).parents[4]  # <prefix>/lib/pythonX.Y/site-packages/<package>/
    share = prefix / 'share' / 'robofollow_interfaces'
    for source in sorted((ROOT / 'robofollow_interfaces').glob('*/*.*')):
        if source.suffix in ('.msg', '.srv'):
            installed = share / source.parent.name / source.name
            assert installed.read_text() == source.read_text(), f'{installed} is stale: run scripts/build_interfaces.sh'
    assert ResultMessage.get_fields_and_field_types()['stages'] == 'sequence<robofollow_interfaces/Stage>'
    assert ResetEpisode.Request.get_fields_and_field_types() == {'episode': 'robofollow_interfaces/EpisodeSpec'}
