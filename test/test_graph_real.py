"""The real-time graph (issue 20): its declaration, and the evaluator's real-cell mode over real DDS.

The evaluator node runs a suite on a real cell against two small stand-ins, a bridge (it serves
``/robofollow/home`` and ends each episode it is instructed) and a referee (it scores every ended episode
unscored): the operator says ready through ``/robofollow/ready`` or Enter, voids a trial through
``/robofollow/void``, and a trial the bridge's stop ended is void too; both are played again.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import rclpy
import yaml
from graph_helpers import ROOT, graph_env, profile_without_robot, ros_domain, spinning, wait_until
from launch_capture import declared_nodes, run_launch_file
from rclpy.context import Context
from rclpy.node import Node
from std_msgs.msg import String
from std_srvs.srv import Trigger

from robofollow_ros import topics
from robofollow_ros.benchmark import registry
from robofollow_ros.errors import GraphError
from robofollow_ros.evaluation.episode_files import episode_stem
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.identity import RunIdentity, read_identity
from robofollow_ros.evaluation.records import Trial, unscored_record
from robofollow_ros.evaluation.results import RESULTS_NAME, ResultsFile
from robofollow_ros.evaluation.suite import SuiteOptions, run_identity, run_suite
from robofollow_ros.graph.declaration import graph_instances, load_graph
from robofollow_ros.graph.supervisor import Supervisor
from robofollow_ros.nodes import evaluator
from robofollow_ros.referee.aggregate import read_result_records
from robofollow_ros.ros import qos
from robofollow_ros.ros.graph_trials import GraphTrials
from robofollow_ros.ros.protocol import (
    EpisodeEnd,
    EpisodeEndMessage,
    EpisodeSpecMessage,
    MoveHome,
    ResetEpisode,
    ResultMessage,
    SimStatus,
    SimStatusMessage,
    StatusEvent,
    result_message,
    spec_from_message,
)

DOMAIN = ros_domain(39)
TASKS = ('L0_pickup_yellow_block_1_left', 'L1_scene2_1_01_pickup_red_cylinder_larger_red_object')


# --- the declaration --------------------------------------------------------------------------------------------


def _names(**arguments: str) -> list[str]:
    return [node.name for node in load_graph('real', arguments).nodes]


def test_the_real_graph_starts_the_nodes_its_arguments_ask_for_with_the_cells_parameters() -> None:
    graph = load_graph('real')
    assert [node.name for node in graph.nodes] == ['fake_hardware', 'ee_pose', 'policy_bridge', 'referee', 'evaluator']
    nodes = {node.name: node for node in graph.nodes}
    assert nodes['fake_hardware'].parameters == {
        'robot_profile': 'aloha_ros2_control',
        'markers': False,
        'publish_object_poses': True,
        'gripper_mode': '',
    }
    assert nodes['policy_bridge'].parameters['runtime'] == 'real' == nodes['evaluator'].parameters['runtime']
    assert nodes['ee_pose'].parameters['robot_profile'] == 'aloha_ros2_control'
    assert nodes['referee'].parameters['joint_states'] == topics.CELL_JOINT_STATES
    assert nodes['evaluator'].parameters['fake_hardware'] is True and nodes['evaluator'].main
    assert 'workers' not in graph.arguments and graph.workers == 1
    assert [instance.domain for instance in graph_instances(graph, base=5)] == [None] * 5
    tracked = load_graph('real', {'pose_source': 'tracker', 'markers': 'true'}).nodes[0]
    assert tracked.name == 'fake_hardware' and tracked.parameters['publish_object_poses'] is False
    assert tracked.parameters['markers'] is True
    assert (tracked.parameters['head_width'], tracked.parameters['head_height']) == (640, 480)
    mocap_fake = load_graph('real', {'pose_source': 'mocap'}).nodes[0]
    assert mocap_fake.parameters['publish_object_poses'] is False and mocap_fake.remappings == ()
    assert _names(fake_hardware='True', pose_source='tracker', markers='true', record='bag') == [
        'fake_hardware',
        'ee_pose',
        'aruco_tracker',
        'policy_bridge',
        'referee',
        'recorder',
        'evaluator',
    ]
    assert _names(fake_hardware='false', pose_source='tracker') == [
        'ee_pose',
        'aruco_tracker',
        'policy_bridge',
        'referee',
        'evaluator',
    ]
    mocap = {node.name: node for node in load_graph('real', {'fake_hardware': 'false', 'pose_source': 'mocap'}).nodes}
    assert list(mocap) == ['ee_pose', 'policy_bridge', 'referee', 'evaluator']
    expected = {(topics.object_pose_topic(name), f'/vrpn_mocap/{name}/pose') for name in topics.all_object_names()}
    for reader in ('policy_bridge', 'referee', 'evaluator'):  # (the evaluator checks the layout)
        assert set(mocap[reader].remappings) == expected, reader
    assert nodes['referee'].remappings == () and mocap['evaluator'].parameters['pose_source'] == 'mocap'


def _refused(argument: str, capsys, monkeypatch) -> str:
    started: list[str] = []
    monkeypatch.setattr(Supervisor, '_start', lambda self, instance, folder: started.append(instance.label))
    from robofollow_ros.cli import main

    assert main(['launch', 'real', argument]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and started == [], error
    return error


@pytest.mark.parametrize(
    ('argument', 'message'),
    [
        ('robot_profile:=nope', "launch argument robot_profile: unknown robot profile 'nope'"),
        ('pose_source:=gps', "pose_source must be one of sim, tracker, mocap (got 'gps')"),
        ('fake_hardware:=false', 'pose_source: sim (the simulation'),
        ('pose_source:=tracker', 'pose_source: tracker over fake hardware needs markers:=true'),
        ('fake_hardware:=maybe', "fake_hardware must be true or false (got 'maybe')"),
        ('robot:=primitive', "robot profile 'aloha_ros2_control' drives the 'aloha' robot"),
        ('policy:=nope', "unknown policy 'nope'"),
        ('calibration:=/missing.yaml', 'launch argument calibration: '),
        ('layout_position_mm:=0', "layout_position_mm must be a positive number, got '0'"),
        ('layout_rotation_deg:=ten', "layout_rotation_deg must be a positive number, got 'ten'"),
        ('layout_recheck:=0', "layout_recheck must be a positive number, got '0'"),
        ('layout_timeout:=-1', "layout_timeout must be 0 (for ever) or more seconds, got '-1'"),
    ],
)
def test_a_bad_cell_argument_is_refused_in_one_line_before_any_node_starts(argument, message, capsys, monkeypatch):
    assert message in _refused(argument, capsys, monkeypatch)


def test_a_profile_without_a_robot_description_is_refused_before_any_node_starts(tmp_path, capsys, monkeypatch):
    error = _refused(f'robot_profile:={profile_without_robot(tmp_path)}', capsys, monkeypatch)
    assert "'no_robot' names no robot description, and the real-time graph needs one" in error


def test_a_calibration_of_another_camera_is_refused_and_one_of_its_optical_frame_taken(tmp_path, capsys, monkeypatch):
    from robofollow_ros.tracking.camera import CameraPose, Intrinsics
    from robofollow_ros.tracking.extrinsic_file import CalibrationQuality, CameraCalibration, save_calibration

    def calibration(camera: str) -> Path:
        pose = CameraPose.look_at(position=(0.0, -0.3, 1.2), target=(0.0, 0.0, 0.75))
        quality = CalibrationQuality(rms_px=0.3, max_px=0.6, board_tags=(40, 41, 42), images=1)
        intrinsics = Intrinsics(fx=500.0, fy=500.0, cx=319.5, cy=239.5, width=640, height=480)
        return save_calibration(CameraCalibration(camera, intrinsics, pose, quality), tmp_path / f'{camera}.yaml')

    error = _refused(f'calibration:={calibration("cam_low")}', capsys, monkeypatch)
    assert error.endswith("is for camera 'cam_low', not 'cam_high'"), error
    load_graph('real', {'calibration': str(calibration('cam_high_optical_frame'))})


def test_launch_arguments_without_a_graph_name_go_to_the_default_graph(capsys, monkeypatch):
    started: list[str] = []
    monkeypatch.setattr(Supervisor, '_start', lambda self, instance, folder: started.append(instance.label))
    from robofollow_ros.cli import main

    assert main(['launch', 'robot_profile:=aloha_interbotix']) == 2
    error = capsys.readouterr().err.strip()
    assert (
        "unknown launch argument(s) robot_profile of graph 'sim'; robot_profile is an argument of graph 'real' ("
        in error
    )
    assert 'robofollow launch real ...)' in error and started == []


def test_a_profile_file_with_a_bad_field_is_refused_naming_the_field(tmp_path, capsys, monkeypatch) -> None:
    profile = yaml.safe_load((ROOT / 'config' / 'robots' / 'aloha_ros2_control.yaml').read_text(encoding='utf-8'))
    profile['row_period'] = 'fast'
    path = tmp_path / 'cell.yaml'
    path.write_text(yaml.safe_dump(profile), encoding='utf-8')
    error = _refused(f'robot_profile:={path}', capsys, monkeypatch)
    assert f'launch argument robot_profile: robot profile {path}: row_period' in error
    del profile['workspace']
    path.write_text(yaml.safe_dump(profile), encoding='utf-8')
    with pytest.raises(GraphError, match='workspace: is missing'):
        load_graph('real', {'robot_profile': str(path)})


@pytest.mark.parametrize(
    'arguments',
    [
        {},
        {'pose_source': 'tracker', 'markers': 'true', 'record': 'bag', 'out': 'OUT', 'scenes': '1,2'},
        {'fake_hardware': 'false', 'pose_source': 'mocap', 'policy_kwargs': '{"steps": 3}'},
    ],
    ids=['defaults', 'tracker-bag', 'mocap'],
)
def test_real_launch_file_starts_the_graph_robofollow_launch_reads(arguments, tmp_path, monkeypatch) -> None:
    # The launch file's OpaqueFunction runs (real launch_ros when importable, stand-ins otherwise: launch_capture)
    # and every Node it builds is compared with the declaration robofollow launch starts.
    arguments = {key: str(tmp_path) if value == 'OUT' else value for key, value in arguments.items()}
    monkeypatch.setenv('ROS_DOMAIN_ID', str(DOMAIN))
    launched = run_launch_file(ROOT / 'launch' / 'real.launch.py', arguments)
    graph = load_graph('real', arguments)
    assert launched.arguments == load_graph('real').arguments and set(launched.descriptions) == set(graph.arguments)
    assert launched.nodes == declared_nodes('real', arguments, base=DOMAIN)
    assert launched.environment == {}  # (each node's own additional_env, never the launch process's environment)
    # (not only equal to the declaration: what a real cell needs, spelled out)
    nodes = {node.name: node for node in launched.nodes}
    assert [node.name for node in launched.nodes] == [node.name for node in graph.nodes] and len(nodes) >= 4
    assert all(node.package == 'robofollow' and 'ROS_DOMAIN_ID' not in node.environment for node in launched.nodes)
    assert nodes['policy_bridge'].parameters['runtime'] == 'real' == nodes['evaluator'].parameters['runtime']
    assert nodes['evaluator'].ends_launch and nodes['policy_bridge'].ends_launch
    evaluator = nodes['evaluator'].parameters
    assert evaluator['policy_kwargs'] == arguments.get('policy_kwargs', '{}') and evaluator['rounds'] == 1
    assert evaluator['fake_hardware'] is (arguments.get('fake_hardware', 'true') == 'true')
    assert evaluator['scenes'] == arguments.get('scenes', '')
    if arguments.get('pose_source') == 'mocap':
        expected = {(topics.object_pose_topic(o), f'/vrpn_mocap/{o}/pose') for o in topics.all_object_names()}
        assert expected and all(set(nodes[reader].remappings) == expected for reader in ('policy_bridge', 'evaluator'))
    if arguments.get('record') == 'bag':
        assert 'recorder' in nodes and nodes['recorder'].parameters['out'] == str(tmp_path)


def test_a_cells_identity_names_it_and_a_simulated_runs_identity_has_no_cell_fields(tmp_path) -> None:
    options = SuiteOptions(out=tmp_path, policy='expert')
    simulated = run_identity(options, privileged=True)
    assert not {'robot_profile', 'pose_source'} & set(simulated.as_dict())
    cell = RunIdentity(**{**simulated.__dict__, 'runtime': 'real', 'robot_profile': 'piper', 'pose_source': 'mocap'})
    assert cell.as_dict()['robot_profile'] == 'piper' and cell.digest != simulated.digest
    assert RunIdentity.from_dict(cell.as_dict(), source='x') == cell
    assert RunIdentity.from_dict(simulated.as_dict(), source='x') == simulated
    assert 'robot_profile null there vs "piper" here' in simulated.differences(cell)


# --- the evaluator on a real cell, over DDS -------------------------------------------------------------------


class StandInBridge(Node):
    """Serves /robofollow/home; ends each instructed episode at once (``stopped``: with the error kind of
    /robofollow/stop)."""

    def __init__(self, context: Context, *, stopped: set[str]) -> None:
        super().__init__('policy_bridge', context=context)
        self.calls: list[str] = []
        self.stopped = stopped
        self.resets: list[tuple[str, int]] = []
        self.specs: dict[str, str] = {}
        self.instructions = 0
        self.ended = 0
        self.create_service(MoveHome, topics.HOME, self.on_home)
        self.create_subscription(EpisodeSpecMessage, topics.EPISODE, self.on_spec, qos.LATCHED_READER)
        self.create_subscription(SimStatusMessage, topics.SIM_STATUS, self.on_status, qos.EVENTS)
        self.create_subscription(String, topics.INSTRUCTION, self.on_instruction, qos.COMMANDS)
        self.end_pub = self.create_publisher(EpisodeEndMessage, topics.EPISODE_END, qos.EVENTS)

    def on_home(self, _request: MoveHome.Request, response: MoveHome.Response) -> MoveHome.Response:
        self.calls.append('home')
        response.code = MoveHome.Response.MOVING
        return response

    def on_spec(self, message: EpisodeSpecMessage) -> None:
        spec = spec_from_message(message)
        self.specs[spec.episode_id] = spec.task_id
        self.try_end()

    def on_status(self, message: SimStatusMessage) -> None:
        status = SimStatus.from_message(message)
        if status.event is StatusEvent.RESET:
            self.resets.append((status.episode_id, status.stamp_ns))
        self.try_end()

    def on_instruction(self, _message: String) -> None:
        self.instructions += 1
        self.try_end()

    def try_end(self) -> None:
        """End the episode of the latest RESET once its spec and its instruction are in (any order)."""
        if self.ended >= min(self.instructions, len(self.resets)) or self.resets[self.ended][0] not in self.specs:
            return
        episode_id = self.resets[self.ended][0]
        self.ended += 1
        task = self.specs[episode_id]
        stop = task in self.stopped
        self.stopped.discard(task)
        self.calls.append(f'{task} stopped' if stop else task)
        end = EpisodeEnd(
            episode_id,
            end_stamp_ns=time.time_ns(),
            queries=1,
            executed_rows=50,
            policy_error='stopped by /robofollow/stop' if stop else None,
            error_kind='stopped' if stop else None,
        )
        self.end_pub.publish(end.to_message())


class StandInReferee(Node):
    """Publishes an unscored result for every ended episode."""

    def __init__(self, context: Context) -> None:
        super().__init__('referee', context=context)
        self.specs: dict[str, dict[str, object]] = {}
        self.create_subscription(EpisodeSpecMessage, topics.EPISODE, self.on_spec, qos.LATCHED_READER)
        self.create_subscription(SimStatusMessage, topics.SIM_STATUS, lambda _: None, qos.EVENTS)
        self.create_subscription(EpisodeEndMessage, topics.EPISODE_END, self.on_end, qos.EVENTS)
        self.result_pub = self.create_publisher(ResultMessage, topics.RESULT, qos.EVENTS)

    def on_spec(self, message: EpisodeSpecMessage) -> None:
        spec = spec_from_message(message)
        self.specs[spec.episode_id] = {'task_id': spec.task_id, 'round': spec.round, 'seed': spec.seed}

    def on_end(self, message: EpisodeEndMessage) -> None:
        end = EpisodeEnd.from_message(message)
        spec = self.specs[end.episode_id]  # (the latched spec came long before the episode's end)
        trial = Trial(registry.get_task(str(spec['task_id'])), round=int(spec['round']), seed=int(spec['seed']))
        record = unscored_record(trial, reason='stand-in referee', variant='published')
        record.update(end.bookkeeping(), episode_id=end.episode_id, end_stamp_ns=end.end_stamp_ns)
        self.result_pub.publish(result_message(record))


class Terminal:
    """The evaluator's stdin as a terminal: each ``press()`` is an Enter."""

    def __init__(self) -> None:
        self.lines: queue.Queue[str] = queue.Queue()

    def isatty(self) -> bool:
        return True

    def press(self) -> None:
        self.lines.put('\n')

    def enter(self, text: str) -> None:
        """Type ``text``, then Enter."""
        self.lines.put(f'{text}\n')

    def __iter__(self) -> Iterator[str]:
        while True:
            yield self.lines.get()


def _call(node: Node, service: str) -> Trigger.Response:
    client = node.create_client(Trigger, service)
    wait_until(client.service_is_ready, timeout=20, what=service)
    future = client.call_async(Trigger.Request())
    wait_until(future.done, timeout=20, what=f'the answer of {service}')
    node.destroy_client(client)
    return future.result()


@contextlib.contextmanager
def running_cell_graph(
    out: Path,
    monkeypatch,
    *,
    parameters: Mapping[str, str] | None = None,
    extra: Callable[[Context], list[Node]] = lambda _context: [],
) -> Iterator[tuple[Any, ...]]:
    """An evaluator on a real cell without fake hardware (the operator resets it; ``parameters`` change or add to
    its parameters), the stand-ins, a node that calls the operator's services and the ``extra`` nodes; spun
    together in a private domain. Yields the evaluator, the bridge, the referee, the operator's node, the terminal,
    then the extra nodes."""
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    terminal = Terminal()
    monkeypatch.setattr(sys, 'stdin', terminal)
    context = Context()
    parameters = {
        'runtime': 'real',
        'robot_profile': 'aloha_ros2_control',
        'pose_source': 'tracker',
        'fake_hardware': 'false',
        'out': str(out),
        'task_ids': ','.join(TASKS),
        'progress': 'false',
        **(parameters or {}),
    }
    arguments = ['--ros-args', *(item for key, value in parameters.items() for item in ('-p', f'{key}:={value}'))]
    rclpy.init(context=context, domain_id=DOMAIN, args=arguments)
    stopped = {TASKS[1]}
    nodes = [
        evaluator.EvaluatorNode(context=context),
        StandInBridge(context, stopped=stopped),
        StandInReferee(context),
        rclpy.create_node('operator', context=context),
        *extra(context),
    ]
    with spinning(context, *nodes, threads=4):
        try:
            yield (*nodes[:4], terminal, *nodes[4:])
        finally:
            nodes[0].stopping = True


@pytest.fixture
def cell_graph(tmp_path, monkeypatch):
    """``running_cell_graph`` without the layout check (nothing publishes object poses here; the check has its own
    tests in test_layout_gate.py)."""
    with running_cell_graph(tmp_path / 'run', monkeypatch, parameters={'layout_check': 'false'}) as nodes:
        yield nodes


def test_the_operator_readies_each_trial_and_voided_or_stopped_trials_are_recorded_void_and_played_again(
    cell_graph, tmp_path, capsys
) -> None:
    node, bridge, _referee, operator, terminal = cell_graph
    cell = node.cell
    out = tmp_path / 'run'
    assert _call(operator, topics.VOID).success is False, 'no trial has started: nothing to void'
    assert _call(operator, topics.READY).success is False, 'no trial is waiting'
    node.wait_for_graph()
    trials = GraphTrials([node], cell=node.cell_settings.identity_fields())
    done: dict[str, object] = {}

    def run() -> None:
        try:
            done['records'] = run_suite(node.options, progress=False, executor=trials)
        except BaseException as error:  # handed to the test thread
            done['error'] = error

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    played: list[str] = []

    def next_wait() -> str:
        wait_until(
            lambda: (cell.awaiting is not None and cell.awaiting not in played) or 'error' in done,
            timeout=60,
            what='the evaluator to wait for the operator',
        )
        assert 'error' not in done, done['error']
        played.append(cell.awaiting)
        return cell.awaiting

    first = next_wait()
    picture = out / 'layouts' / f'{episode_stem(TASKS[0], 1)}.png'
    assert picture.is_file() and picture.read_bytes()[:4] == b'\x89PNG'
    prompt = capsys.readouterr().out
    assert f'next trial: {TASKS[0]} round 1' in prompt and registry.get_task(TASKS[0]).instruction in prompt
    for placement in registry.layout_of(registry.get_task(TASKS[0])).placements:
        assert placement.name in prompt
    assert bridge.calls == ['home'] and bridge.resets == [], 'the arms go home, and nothing starts before ready'
    before = time.time_ns()
    assert _call(operator, topics.READY).success
    next_wait()  # the second trial: the first ran
    assert bridge.resets[0][0] == first and bridge.resets[0][1] >= before, 'RESET stamped with the wall clock'
    voided = _call(operator, topics.VOID)  # right after the first trial, before the second starts
    assert voided.success and f'{TASKS[0]} round 1 is void' in voided.message
    terminal.press()  # the second trial starts on Enter (and is stopped by the stand-in)
    next_wait()
    assert _call(operator, topics.READY).success  # the first again
    next_wait()
    terminal.press()  # the second again
    runner.join(timeout=60)
    assert not runner.is_alive() and 'error' not in done, done.get('error')
    assert _call(operator, topics.VOID).success is False, 'the last trial is recorded: too late to void it'
    assert bridge.calls == [
        'home', TASKS[0], 'home', f'{TASKS[1]} stopped', 'home', TASKS[0], 'home', TASKS[1]
    ]  # fmt: skip
    every = read_result_records(out / RESULTS_NAME, void=True)
    assert [(r['task_id'], r.get('void', False), r.get('void_reason')) for r in every] == [
        (TASKS[0], True, 'voided by the operator'),
        (TASKS[1], True, 'stopped'),
        (TASKS[0], False, None),
        (TASKS[1], False, None),
    ]
    assert all(
        (r['runtime'], r['robot_profile'], r['pose_source']) == ('real', 'aloha_ros2_control', 'tracker') for r in every
    )
    counted = read_result_records(out / RESULTS_NAME)
    assert [r['task_id'] for r in counted] == list(TASKS) == [r['task_id'] for r in done['records']]
    assert ResultsFile(out / RESULTS_NAME).done() == {(task, 1) for task in TASKS}
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    assert run['status'] == 'complete' and run['runtime'] == 'real' and run['completed_trials'] == 2
    assert (run['identity']['robot_profile'], run['identity']['pose_source']) == ('aloha_ros2_control', 'tracker')
    assert read_identity(out).robot_profile == 'aloha_ros2_control'


def test_fake_hardware_resets_the_cell_with_the_episode_after_the_arms_went_home(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    context = Context()
    arguments = [
        '--ros-args',
        '-p',
        'runtime:=real',
        '-p',
        'robot_profile:=aloha_ros2_control',
        '-p',
        f'out:={tmp_path}',
    ]
    arguments += ['-p', 'fake_hardware:=true', '-p', 'layout_check:=false']  # (this stand-in publishes no poses)
    rclpy.init(context=context, domain_id=DOMAIN, args=arguments)
    calls: list[str] = []
    node = evaluator.EvaluatorNode(context=context)
    hardware = rclpy.create_node('fake_hardware', context=context)

    called: list[float] = []

    def on_reset(request: ResetEpisode.Request, response: ResetEpisode.Response) -> ResetEpisode.Response:
        calls.append(f'reset {request.episode.task_id}')
        called.append(time.monotonic())
        response.code, response.episode_id = ResetEpisode.Response.OK, request.episode.episode_id
        return response

    def on_home(_request: MoveHome.Request, response: MoveHome.Response) -> MoveHome.Response:
        calls.append('home')
        called.append(time.monotonic())
        if len(calls) == 1:  # the bridge's answers: before it heard the driver, then while the move runs
            response.code, response.message = MoveHome.Response.NOT_YET, 'the message is not read'
        else:
            response.code, response.seconds, response.message = MoveHome.Response.MOVING, 0.5, 'not read either'
        return response

    hardware.create_service(ResetEpisode, topics.CELL_RESET, on_reset)
    hardware.create_service(MoveHome, topics.HOME, on_home)
    with spinning(context, node, hardware, threads=3):
        wait_until(
            lambda: node.cell.reset_client.service_is_ready() and node.cell.home_client.service_is_ready(),
            timeout=20,
            what='the fake hardware services',
        )
        task = registry.get_task(TASKS[0])
        spec = EpisodeSpec.for_trial(task, seed=3, round=1, variant='published')
        assert node.prepare_episode(spec) == {}, 'no layout check: nothing for the record'
        assert calls == ['home', 'home', f'reset {TASKS[0]}'] and node.cell.awaiting is None
        assert called[2] - called[1] >= 0.5, 'the cell is reset once the arms are home'
        assert not (tmp_path / 'layouts').exists(), 'no operator, no picture'


def test_a_simulated_evaluator_refuses_a_wrong_runtime_and_a_real_one_needs_one_graph(monkeypatch) -> None:
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    for parameters, message in [
        (['runtime:=cell'], "runtime must be one of sim, real (got 'cell')"),
        (['runtime:=real'], 'runtime real needs the robot_profile parameter'),
        (['runtime:=real', 'robot_profile:=piper', 'workers:=2'], 'workers must be 1'),
        (['runtime:=real', 'robot_profile:=piper', 'layout_position_mm:=0.0'], 'layout_position_mm'),
    ]:
        context = Context()
        rclpy.init(context=context, domain_id=DOMAIN, args=['--ros-args', *(a for p in parameters for a in ('-p', p))])
        try:
            with pytest.raises(GraphError, match=re.escape(message)):
                evaluator.EvaluatorNode(context=context)
        finally:
            rclpy.shutdown(context=context)


def _cell_record(task_id: str, *, completed: bool, void: bool = False) -> dict[str, object]:
    trial = Trial(registry.get_task(task_id), round=1, seed=registry.trial_seed(task_id, 1))
    record = unscored_record(trial, reason='test', variant='published')
    record.update(
        completion_ok=completed, round=1, seed=trial.seed, policy='expert', run_id='abc', isolation='built-in'
    )
    record.update(runtime='real', robot_profile='aloha_ros2_control', pose_source='tracker', privileged=True)
    if void:
        record.update(void=True, void_reason='voided by the operator')
    return record


def test_void_records_stay_in_the_file_but_no_resume_summary_or_report_counts_them(tmp_path, capsys) -> None:
    path = tmp_path / RESULTS_NAME
    void = _cell_record(TASKS[0], completed=True, void=True)
    kept = [_cell_record(TASKS[0], completed=False), _cell_record(TASKS[1], completed=False)]
    path.write_text(''.join(json.dumps(record) + '\n' for record in [void, *kept]), encoding='utf-8')
    results = ResultsFile(path)
    assert results.records == kept and results.void == [void]
    assert results.done() == {(TASKS[0], 1), (TASKS[1], 1)}
    results.keep_only(kept[:1])
    assert read_result_records(path, void=True) == [void, kept[0]], 'rewriting the file keeps the void record'
    results.append(kept[1])
    assert read_result_records(path) == kept
    from robofollow_ros.cli import main

    assert main(['report', str(path), '--baseline', 'none', '--out', str(tmp_path / 'report')]) == 0
    output = capsys.readouterr()
    assert 'real cell aloha_ros2_control, object poses from tracker' in output.out
    assert '2 episodes in 2 groups' in output.err
    summary = json.loads((tmp_path / 'report' / 'summary.json').read_text(encoding='utf-8'))
    assert summary['run']['robot_profile'] == 'aloha_ros2_control'
    assert all(group['completion_rate'] == 0.0 for group in summary['groups']), 'the void success is not counted'


def test_a_void_trials_bag_is_set_aside_and_its_replay_records_under_the_trials_name(tmp_path) -> None:
    from test_graph_trials import FakeGraph

    class Recording(FakeGraph):
        """A cell whose operator voids the first play of the first trial; the recorder writes one bag per play."""

        def __init__(self) -> None:
            super().__init__(0, [])
            self.plays: list[str] = []

        def wait_for_result(self, spec, *, deadline):
            self.plays.append(spec.episode_id)
            bag = tmp_path / 'episodes' / episode_stem(spec.task_id, spec.round)
            bag.mkdir(parents=True, exist_ok=True)
            (bag / 'play.txt').write_text(spec.episode_id, encoding='utf-8')
            live = _cell_record(spec.task_id, completed=True)
            live.update(episode_id=spec.episode_id, policy_error=None, error_kind=None, queries=1, executed_rows=50)
            return live, 0.0

        def void_reason(self, spec):
            return 'voided by the operator' if self.plays == [spec.episode_id] else None

    options = SuiteOptions(out=tmp_path, policy='expert', task_ids=list(TASKS), record='bag')
    graph = Recording()
    cell = {'robot_profile': 'piper', 'pose_source': 'mocap'}
    records = run_suite(options, progress=False, executor=GraphTrials([graph], cell=cell))  # type: ignore[list-item]
    assert [record['task_id'] for record in records] == [TASKS[1], TASKS[0]] and len(graph.plays) == 3
    void = read_result_records(tmp_path / RESULTS_NAME, void=True)[0]
    stem = episode_stem(TASKS[0], 1)
    assert void['void'] and void['episode_file'] == f'episodes/{stem}.void-1'
    assert (tmp_path / void['episode_file'] / 'play.txt').read_text(encoding='utf-8') == graph.plays[0]
    assert (tmp_path / 'episodes' / stem / 'play.txt').read_text(encoding='utf-8') == graph.plays[2]
    assert records[1]['episode_file'] == f'episodes/{stem}', 'the replay, played after the next trial'
    assert read_identity(tmp_path).pose_source == 'mocap' and records[1]['robot_profile'] == 'piper'


def test_aborting_while_the_operator_places_objects_leaves_the_run_resumable(cell_graph, tmp_path) -> None:
    from robofollow_ros.evaluation.suite import RunInterrupted

    node, bridge, _referee, _operator, terminal = cell_graph
    bridge.stopped.clear()
    cell, out = node.cell, tmp_path / 'run'
    node.wait_for_graph()
    prompts: list[str] = []

    def operator_then_ctrl_c() -> None:
        try:
            for count in (1, 2):
                wait_until(
                    lambda: cell.awaiting is not None and cell.awaiting not in prompts, timeout=60, what='a prompt'
                )
                prompts.append(cell.awaiting)
                if count == 1:
                    terminal.press()
        finally:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the operator places the second trial's objects

    helper = threading.Thread(target=operator_then_ctrl_c, daemon=True)
    helper.start()
    cell_fields = node.cell_settings.identity_fields()
    with pytest.raises(RunInterrupted):
        run_suite(node.options, progress=False, executor=GraphTrials([node], cell=cell_fields))
    helper.join(timeout=10)
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    assert len(prompts) == 2 and run['status'] == 'interrupted' and bridge.calls == ['home', TASKS[0], 'home']
    assert cell.awaiting is None, 'the operator wait ended with the run'
    node.stopping = False
    resumed: list[str] = []

    def operator_again() -> None:
        try:
            while len(resumed) < 2:
                wait_until(
                    lambda: cell.awaiting is not None and cell.awaiting not in resumed, timeout=60, what='a prompt'
                )
                resumed.append(cell.awaiting)
                terminal.press()
        except AssertionError:
            os.kill(os.getpid(), signal.SIGINT)  # (fails the test instead of waiting for ever)

    threading.Thread(target=operator_again, daemon=True).start()
    records = run_suite(node.options, progress=False, executor=GraphTrials([node], cell=cell_fields))
    assert sorted(record['task_id'] for record in records) == sorted(TASKS) and len(resumed) == 2
    # The first trial's result is collected once the second has started (it could still be voided until then), so
    # the run stopped at the second's prompt plays the first again.
    assert bridge.calls == ['home', TASKS[0], 'home', 'home', TASKS[0], 'home', TASKS[1]]
    assert json.loads((out / 'run.json').read_text(encoding='utf-8'))['status'] == 'complete'


def test_the_evaluator_resets_the_fake_hardware_node_and_starts_the_episode_on_its_wall_clock(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    command = [sys.executable, '-m', 'robofollow_ros.nodes.fake_hardware', '--ros-args', '-p', 'camera_rate:=1.0']
    hardware = subprocess.Popen(command, env=graph_env(39), cwd=ROOT, stderr=subprocess.PIPE, text=True)
    context = Context()
    parameters = ['runtime:=real', 'robot_profile:=aloha_ros2_control', f'out:={tmp_path}', 'fake_hardware:=true']
    rclpy.init(context=context, domain_id=DOMAIN, args=['--ros-args', *(a for p in parameters for a in ('-p', p))])
    node = evaluator.EvaluatorNode(context=context)
    listener = rclpy.create_node('listener', context=context)
    statuses: list[SimStatus] = []
    listener.create_subscription(
        SimStatusMessage, topics.SIM_STATUS, lambda m: statuses.append(SimStatus.from_message(m)), qos.EVENTS
    )
    try:
        with spinning(context, node, listener, threads=3):
            wait_until(node.cell.reset_client.service_is_ready, timeout=120, what='the fake hardware node')
            wait_until(lambda: node.cell.status_pub.get_subscription_count() > 0, timeout=20, what='the listener')
            spec = EpisodeSpec.for_trial(registry.get_task(TASKS[1]), seed=5, round=1, variant='published')
            fields = node.prepare_episode(spec)  # raises unless the fake hardware answered OK for this episode
            check = fields['layout_check']  # on the simulation's truth after the reset: every object in place
            layout = registry.layout_of(registry.get_task(TASKS[1]))
            assert check['passed'] and check['missing'] == [] and check['attempts'] == 1, check
            assert [o['name'] for o in check['objects']] == list(layout.object_names)
            assert all(o['displacement_mm'] < 2.0 for o in check['objects']), check
            assert (tmp_path / check['picture']).is_file()
            before = node.get_clock().now().nanoseconds
            node.start_episode(spec, deadline=time.monotonic() + 60)
            wait_until(lambda: statuses, timeout=20, what='the RESET status')
            assert statuses[0].event is StatusEvent.RESET and statuses[0].episode_id == spec.episode_id
            assert statuses[0].stamp_ns >= before > 10**18, 'stamped with the wall clock, not a simulated time'
    finally:
        hardware.terminate()
        hardware.communicate(timeout=30)


def test_the_robot_follows_the_profile_unless_given() -> None:
    from robofollow_ros.graph.declaration import load_graph

    for profile, robot in (('piper', 'piper'), ('aloha_ros2_control', 'aloha'), ('aloha_interbotix', 'aloha')):
        graph = load_graph('real', {'robot_profile': profile, 'fake_hardware': 'true'})
        assert {n.parameters['robot'] for n in graph.nodes if 'robot' in n.parameters} == {robot}, profile
