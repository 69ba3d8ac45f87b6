"""The graph's arm commands as a ros2_control JointTrajectoryController takes them, over real DDS (issue 20)."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
import rclpy
from graph_helpers import read_records, ros_domain, run_launch
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from robofollow_ros import topics
from robofollow_ros.robot.description import joint_layout
from robofollow_ros.ros import qos
from robofollow_ros.ros.protocol import ChunkTicketMessage
from robofollow_ros.ros.trajectory_cdr import trajectory_digest
from robofollow_ros.safety.jtc import check_command_qos, check_trajectory, trajectory_view
from robofollow_ros.sim.constants import ROW_SECONDS
from robofollow_ros.state_layout import ARMS
from robofollow_ros.units import NS_PER_S

pytestmark = pytest.mark.ros

DOMAIN = 29
TASK = 'L0_pickup_yellow_block_1_left'


def test_every_arm_command_and_the_hold_after_a_failure_are_what_a_jtc_accepts(tmp_path, monkeypatch) -> None:
    # graph_policies:hold_then_nan answers with 10 rows, then 4, then a NaN: the bridge refuses that chunk and holds.
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    layout = joint_layout('aloha')
    context = Context()
    rclpy.init(context=context, domain_id=ros_domain(DOMAIN))
    node = rclpy.create_node('jtc_listener', context=context)
    commands: dict[str, list[tuple[JointTrajectory, int]]] = {arm: [] for arm in ARMS}
    writers: dict[str, list] = {}
    tickets: list[ChunkTicketMessage] = []
    states: list[JointState] = []

    def on_command(message: JointTrajectory, arm: str) -> None:
        commands[arm].append((message, node.get_clock().now().nanoseconds))

    def bridge_writers_known() -> bool:
        """Whether the bridge's writer of each arm is listed under its node name (that name comes with the graph
        information, which may arrive after the DDS match)."""
        for arm in ARMS:
            infos = node.get_publishers_info_by_topic(topics.arm_trajectory_topic(arm))
            if arm not in writers and any(info.node_name == 'policy_bridge' for info in infos):
                writers[arm] = infos
        return len(writers) == len(ARMS)

    volatile = [
        node.create_subscription(
            JointTrajectory,
            topics.arm_trajectory_topic(arm),
            lambda m, arm=arm: on_command(m, arm),
            qos.ARM_COMMANDS,
        )
        for arm in ARMS
    ]
    volatile.append(node.create_subscription(ChunkTicketMessage, topics.SIM_CHUNK, tickets.append, qos.ARM_COMMANDS))
    node.create_subscription(JointState, topics.JOINT_STATES, states.append, qos.STATE)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    done = threading.Event()

    ready = tmp_path / 'scratch' / 'listener_matched'  # in the one folder the sandboxed policy sees of the test's
    ready.parent.mkdir()

    def spin() -> None:
        while not done.is_set():
            executor.spin_once(timeout_sec=0.05)
            matched = all(subscription.get_publisher_count() > 0 for subscription in volatile)
            if not ready.exists() and matched and bridge_writers_known():
                ready.touch()  # the policy answers its first query only now (commands are never replayed)

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        kwargs = json.dumps({'ready_file': str(ready)})
        result = run_launch(
            DOMAIN,
            policy='graph_policies:hold_then_nan',
            policy_kwargs=kwargs,
            policy_scratch=str(ready.parent),
            task_ids=TASK,
            out=str(tmp_path / 'run'),
        )
    finally:
        done.set()
        spinner.join(timeout=10)
        executor.shutdown()
        rclpy.shutdown(context=context)
    assert result.returncode == 0, result.stdout[-4000:]
    (record,) = read_records(tmp_path / 'run' / 'results.jsonl')
    assert 'non-finite value' in record['policy_error'] and 'holding the arms' in result.stdout
    assert record['queries'] == 2 and record['executed_rows'] == 14  # the hold is no query and steps no row

    last_state = layout.state_from_joint_state(list(states[-1].name), np.asarray(states[-1].position))
    for arm in ARMS:
        joints = layout.command_joints(arm)
        assert [len(message.points) for message, _ in commands[arm]] == [10, 4, 1], arm
        for message, received_ns in commands[arm]:
            assert check_trajectory(message, controller_joints=joints, received_ns=received_ns) == ()
            view = trajectory_view(message)
            assert view.stamp_ns == 0 and view.joint_names == joints
            times = [point.time_from_start_ns for point in view.points]
            assert times == [round((i + 1) * ROW_SECONDS * NS_PER_S) for i in range(len(times))]
        hold = trajectory_view(commands[arm][-1][0]).points[0]
        np.testing.assert_allclose(hold.positions, layout.arm_command(last_state[None, :], arm)[0], atol=1e-9)
        (bridge,) = [info for info in writers[arm] if info.node_name == 'policy_bridge']
        profile = bridge.qos_profile
        assert check_command_qos(durability=profile.durability, reliability=profile.reliability) == ()

    assert [(ticket.rows, ticket.hold) for ticket in tickets] == [(10, False), (4, False), (1, True)]
    assert len({ticket.episode_id for ticket in tickets}) == 1 and tickets[0].episode_id
    # Each answers the observation after the rows before it (the hold: the one the refused chunk answered).
    stamps = [ticket.for_stamp_ns for ticket in tickets]
    assert np.diff(stamps).tolist() == [round(rows * ROW_SECONDS * NS_PER_S) for rows in (10, 4)]
    for index, ticket in enumerate(tickets):
        for arm, digest in (('left', ticket.left_digest), ('right', ticket.right_digest)):
            view = trajectory_view(commands[arm][index][0])
            positions = np.array([point.positions for point in view.points])
            times = np.array([point.time_from_start_ns for point in view.points])
            assert trajectory_digest(list(view.joint_names), positions, times) == digest


class _Log:
    """Stands in for a node's logger: keeps what it was told, by level."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def __getattr__(self, level: str):
        return lambda text, **_: self.lines.append((level, text))


def test_the_sim_runs_a_chunk_once_both_commands_match_the_ticket_of_its_latest_observation(monkeypatch) -> None:
    # Topics are not ordered with each other: the ticket may come first, and an older command may still be held.
    from robofollow_ros.benchmark import registry
    from robofollow_ros.evaluation.episode_spec import EpisodeSpec
    from robofollow_ros.nodes.sim import SimNode
    from robofollow_ros.ros.protocol import ChunkTicket, ResetEpisode, spec_message
    from robofollow_ros.ros.trajectory_cdr import decode_trajectory, encode_trajectory

    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    task = registry.eval_tasks(scene=1, level=0)[0]
    spec = EpisodeSpec.for_trial(task, seed=1, round=1, variant='published', layout=registry.layout_of(task).name)
    rclpy.init(domain_id=ros_domain(DOMAIN - 1))
    try:
        sim = SimNode()
        log = _Log()
        monkeypatch.setattr(sim, 'get_logger', lambda: log)
        response = sim.on_reset(ResetEpisode.Request(episode=spec_message(spec)), ResetEpisode.Response())
        assert response.code == ResetEpisode.Response.OK
        layout, start = sim.joint_layout, sim.observation_ns

        def commands(rows: int, shift: float = 0.0) -> dict[str, bytes]:
            chunk = np.tile(sim.env.state(), (rows, 1))
            chunk[:, 1] += shift
            return {
                arm: encode_trajectory(
                    layout.command_joints(arm), layout.arm_command(chunk, arm), row_seconds=ROW_SECONDS
                )
                for arm in ARMS
            }

        def ticket(sent: dict[str, bytes], for_stamp_ns: int, *, hold: bool = False, episode: str = spec.episode_id):
            digests = {arm: decode_trajectory(data).digest() for arm, data in sent.items()}
            rows = len(decode_trajectory(sent['left']).positions)
            return ChunkTicket(episode, for_stamp_ns, rows, digests, hold).to_message()

        chunk, older = commands(3), commands(2, shift=0.01)
        sim.on_trajectory('right', older['right'])
        sim.on_ticket(ticket(chunk, start))
        sim.on_trajectory('left', chunk['left'])
        assert sim.observation_ns == start  # the right arm's command is not the ticket's yet
        sim.on_trajectory('right', chunk['right'])
        after = sim.observation_ns
        assert after == start + round(3 * ROW_SECONDS * NS_PER_S) and not sim.commands

        for stale in (ticket(chunk, start), ticket(chunk, after, episode='another')):
            sim.on_trajectory('left', chunk['left'])
            sim.on_trajectory('right', chunk['right'])
            sim.on_ticket(stale)
        warnings = [text for level, text in log.lines if level == 'warning']
        assert len(warnings) == 2 and all('not the latest observation: ignored' in text for text in warnings)
        assert sim.observation_ns == after

        hold = commands(1)
        sim.on_ticket(ticket(hold, -1, hold=True))
        for arm in ARMS:
            sim.on_trajectory(arm, hold[arm])
        assert sim.observation_ns == after and not sim.commands and sim.ticket is None  # held still, consumed
        assert [level for level, _ in log.lines if level in ('warning', 'error')] == ['warning', 'warning']
        sim.close()
        sim.destroy_node()
    finally:
        rclpy.shutdown()
