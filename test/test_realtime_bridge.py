"""The policy bridge in real-time mode (``runtime:=real``) over real DDS, against a stand-in ros2_control cell.

The bridge runs in its own process (private domain) with a test profile that refuses out-of-limit targets
(test/data/robots/aloha_refuse_test.yaml) and a policy scripted by the instruction (test/realtime_policies.py);
this process plays the evaluator (episode, reset status, instruction) and the cell (``JtcStandIn``: JTC commands in,
``/joint_states`` out), and keeps every command that reached the arm topics. Every one of them must pass the JTC
interface check, stay inside the profile's joint limits and workspace box and within its velocity limits: the
unsafe rows of a chunk, a stale joint state and a silent policy get holds only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest
from graph_helpers import ROOT, graph_env, private_node, wait_until
from jtc_stand_in import JtcStandIn, Received
from rclpy.node import Node
from realtime_policies import GAUNTLET_ROWS, LONG_ROWS, OVERSHOOT_ROWS
from std_msgs.msg import String
from std_srvs.srv import Trigger

from robofollow_ros import topics
from robofollow_ros.benchmark import registry
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.robot.kinematics import forward_kinematics
from robofollow_ros.robot.profiles import load_profile
from robofollow_ros.ros import qos
from robofollow_ros.ros.protocol import (
    EpisodeEnd,
    EpisodeEndMessage,
    EpisodeSpecMessage,
    HomeCode,
    MoveHome,
    SimStatus,
    SimStatusMessage,
    StatusEvent,
    spec_message,
)
from robofollow_ros.safety.chunk_limits import REACH_SPEED_FRACTION
from robofollow_ros.safety.jtc import check_trajectory
from robofollow_ros.state_layout import ARMS

pytestmark = pytest.mark.ros
T = TypeVar('T')
NOMINAL_DOMAIN = 55
CLAMP_DOMAIN = 54
TEST_PROFILE = ROOT / 'test' / 'data' / 'robots' / 'aloha_refuse_test.yaml'
NS_PER_S = 1_000_000_000
TEST_CONTROL_RATE = load_profile(str(TEST_PROFILE)).control_rate
PARAMETERS = {
    'runtime': 'real',
    'robot_profile': str(TEST_PROFILE),
    'policy': 'realtime_policies:scripted',
    'trusted_policy': 'true',
    'max_queries': '5',
    'timeout': '2.5',
    'policy_deadline': '1.0',
    'max_state_age': '0.2',
    'max_observation_age': '1.0',
    'settle_tolerance': '0.001',  # the stand-in reaches each row exactly
    'settle_timeout': '5.0',  # however loaded the machine, the next observation is taken at the last row
    'sim_timeout': '3.0',  # also how long a fresh observation is waited for
    'command_window': '0.0',  # each chunk one trajectory, as the checks below read it (windows: test_realtime_drivers)
    # The stand-in publishes from this test's process: starved beside a loaded machine its states came 0.35 s apart,
    # and a state gap's stop cut a chunk whose rows the test counts. The pause's own test silences them for longer.
    'state_pause': '0.2',
}


@dataclass
class Cell:
    """The test's side of the graph."""

    node: Node
    driver: JtcStandIn
    bridge: subprocess.Popen[str]
    ends: list[EpisodeEnd]
    spec_pub: object
    status_pub: object
    instruction_pub: object


@contextlib.contextmanager
def running_cell(profile_path: Path, domain: int) -> Iterator[Cell]:
    """The bridge over ``profile_path`` in its own process and the stand-in cell, in the private ``domain``."""
    profile = load_profile(str(profile_path))
    env = graph_env(domain)
    with private_node(domain, 'realtime_test', spin=True) as (node, _executor):
        driver = JtcStandIn(node, profile, start=profile.home_state())
        ends: list[EpisodeEnd] = []
        node.create_subscription(
            EpisodeEndMessage, topics.EPISODE_END, lambda m: ends.append(EpisodeEnd.from_message(m)), qos.EVENTS
        )
        parameters = {**PARAMETERS, 'robot_profile': str(profile_path)}
        arguments = [arg for name, value in parameters.items() for arg in ('-p', f'{name}:={value}')]
        bridge = subprocess.Popen(
            [sys.executable, '-m', 'robofollow_ros.nodes.policy_bridge', '--ros-args', *arguments],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            yield Cell(
                node=node,
                driver=driver,
                bridge=bridge,
                ends=ends,
                spec_pub=node.create_publisher(EpisodeSpecMessage, topics.EPISODE, qos.LATCHED),
                status_pub=node.create_publisher(SimStatusMessage, topics.SIM_STATUS, qos.EVENTS),
                instruction_pub=node.create_publisher(String, topics.INSTRUCTION, qos.COMMANDS),
            )
        finally:
            if bridge.poll() is None:
                bridge.terminate()
            try:
                bridge.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                bridge.kill()
                bridge.communicate()


@pytest.fixture(scope='module')
def cell() -> Iterator[Cell]:
    with running_cell(TEST_PROFILE, NOMINAL_DOMAIN) as running:
        yield running


@pytest.fixture(scope='module')
def clamp_cell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cell]:
    """The cell of ``cell`` under the test profile changed to ``joint_limits: clamp``."""
    text = TEST_PROFILE.read_text()
    assert text.count('joint_limits: refuse') == 1
    path = tmp_path_factory.mktemp('profiles') / 'aloha_clamp_test.yaml'
    path.write_text(text.replace('joint_limits: refuse', 'joint_limits: clamp'))
    with running_cell(path, CLAMP_DOMAIN) as running:
        yield running


def quiet(cell: Cell, *, seconds: float = 0.5, timeout: float = 10.0) -> None:
    """Wait until no command has reached the stand-in driver for ``seconds`` (at most ``timeout``)."""
    deadline = time.monotonic() + timeout
    count, since = len(cell.driver.received), time.monotonic()
    while (now := time.monotonic()) < deadline and now - since < seconds:
        time.sleep(0.02)
        if len(cell.driver.received) != count:
            count, since = len(cell.driver.received), time.monotonic()


def run_episode(
    cell: Cell, instruction: str, *, timeout: float = 60.0, reset_ns: int | None = None
) -> tuple[EpisodeEnd, list[Received]]:
    """Announce an episode as the evaluator does in real mode (its reset stamped now, or ``reset_ns``); its end and
    the commands that arrived meanwhile."""
    wait_until(
        lambda: (
            cell.instruction_pub.get_subscription_count() > 0  # type: ignore[attr-defined]
            and cell.status_pub.get_subscription_count() > 0
        ),  # type: ignore[attr-defined]
        timeout=120,
        what='the bridge to subscribe',
    )
    task = registry.eval_tasks(scene=1, level=1)[0]
    spec = EpisodeSpec.for_trial(task, seed=1, round=1, variant='corrected', layout=registry.layout_of(task).name)
    spec = dataclasses.replace(spec, instruction=instruction)  # the bridge takes an instruction for its own episode
    first = len(cell.driver.received)
    cell.spec_pub.publish(spec_message(spec))  # type: ignore[attr-defined]
    now_ns = cell.node.get_clock().now().nanoseconds if reset_ns is None else reset_ns
    status = SimStatus(event=StatusEvent.RESET, episode_id=spec.episode_id, stamp_ns=now_ns)
    cell.status_pub.publish(status.to_message())  # type: ignore[attr-defined]
    cell.instruction_pub.publish(String(data=instruction))  # type: ignore[attr-defined]

    def ended() -> bool:
        assert cell.bridge.poll() is None, cell.bridge.communicate()[1][-4000:]
        return any(end.episode_id == spec.episode_id for end in cell.ends)

    wait_until(ended, timeout=timeout, what=f'the end of the {instruction} episode')
    quiet(cell)  # the hold after a failure follows the end by a moment, longer under load
    end = next(end for end in cell.ends if end.episode_id == spec.episode_id)
    return end, cell.driver.received[first:]


def call(cell: Cell, service: str) -> tuple[Trigger.Response, float]:
    """Call a Trigger service; the answer and the monotonic time just before the call."""
    client = cell.node.create_client(Trigger, service)
    assert client.wait_for_service(timeout_sec=60)
    called = time.monotonic()
    future = client.call_async(Trigger.Request())
    wait_until(future.done, timeout=30, what=f'{service} to answer', poll=0.001)
    result = future.result()
    assert result is not None
    return result, called


def call_home(cell: Cell) -> MoveHome.Response:
    """Call the bridge's ``/robofollow/home``; its typed answer."""
    client = cell.node.create_client(MoveHome, topics.HOME)
    assert client.wait_for_service(timeout_sec=60)
    future = client.call_async(MoveHome.Request())
    wait_until(future.done, timeout=30, what=f'{topics.HOME} to answer', poll=0.001)
    result = future.result()
    assert result is not None
    return result


def assert_safe(received: list[Received]) -> int:
    """Every command passes the JTC check and keeps every point inside the profile's limits, box and speeds; how
    many arm points were checked (at least one: a filter that matches no arm command must not pass as safe)."""
    profile = load_profile(str(TEST_PROFILE))
    checked = 0
    lower, upper = profile.state_lower(), profile.state_upper()
    fk = forward_kinematics('aloha')
    joints_of = {}
    for arm in ARMS:
        spec = profile.arms[arm]
        joints_of[spec.command.topic] = (arm, spec.joints, profile.arms[arm].velocity)
    for item in received:
        assert item.points >= 1
        controller = (
            joints_of[item.topic][1]
            if item.topic in joints_of
            else tuple(
                profile.arms[a].gripper.command.joint
                for a in ARMS
                if profile.arms[a].gripper.interface.topic == item.topic
            )
        )
        assert check_trajectory(item.message, controller_joints=controller) == ()
        assert (item.message.header.stamp.sec, item.message.header.stamp.nanosec) == (0, 0)
        if item.topic not in joints_of:
            continue
        arm, _, velocity = joints_of[item.topic]
        columns = slice(0, 6) if arm == 'left' else slice(7, 13)
        previous, previous_t = item.state[columns], 0.0
        for point in item.message.points:
            q = np.array(point.positions)
            t = seconds_from_start(point)
            assert np.all(q >= lower[columns] - 1e-9) and np.all(q <= upper[columns] + 1e-9)
            position = fk.tcp_pose(arm, q).position
            assert np.all(position >= profile.workspace_min) and np.all(position <= profile.workspace_max)
            assert np.all(np.abs(q - previous) <= velocity * (t - previous_t) * (1 + 1e-6) + 1e-9)
            previous, previous_t = q, t
            checked += 1
    assert checked > 0, f'no arm command among the {len(received)} received: nothing was checked'
    return checked


def arm_topic(arm: str) -> str:
    """The arm controller's command topic, as the stand-in subscribes it (``Received.topic``: an absolute name)."""
    topic = load_profile(str(TEST_PROFILE)).arms[arm].command.topic  # type: ignore[index]
    assert topic == topics.resolve(topics.arm_trajectory_topic(arm))  # type: ignore[arg-type]
    return topic


def arm_commands(received: list[Received], arm: str) -> list[Received]:
    return [item for item in received if item.topic == arm_topic(arm)]


def arm_of(item: Received) -> str:
    (arm,) = (arm for arm in ARMS if item.topic == arm_topic(arm))
    return arm


def only_holds(received: list[Received]) -> None:
    """Each arm got at least one command, and every one is a hold (never vacuously: an empty filter fails)."""
    for arm in ARMS:
        commands = arm_commands(received, arm)
        assert commands, f'no command reached the {arm} arm ({arm_topic(arm)}) among {len(received)}'
        assert all(is_hold(item) for item in commands), [item.message.points for item in commands]


def is_hold(item: Received) -> bool:
    """One point at the position the arm stands at: within a few settle tolerances, since the bridge takes the arms
    as settled within one, and the last rows of a closing stop move less than that; every move of these tests is
    ten times larger."""
    columns = slice(0, 6) if arm_of(item) == 'left' else slice(7, 13)
    tolerance = 5.0 * float(PARAMETERS['settle_tolerance'])
    return item.points == 1 and np.allclose(
        item.message.points[0].positions, item.state[columns], rtol=0.0, atol=tolerance
    )


def seconds_from_start(point: Any) -> float:
    """A trajectory point's ``time_from_start`` in seconds."""
    return point.time_from_start.sec + point.time_from_start.nanosec / NS_PER_S


def stopped_along_the_chunk(item: Received, chunk: Received) -> bool:
    """``item`` is a controlled stop of the motion ``chunk`` commanded: every point lies on the chunk's way (between
    its start and its last row, joint by joint: onwards, never back to an older measured position), and each row's
    travel is no larger than the one before (it decelerates, never speeds up)."""
    columns = slice(0, 6) if arm_of(item) == 'left' else slice(7, 13)
    way = np.vstack([chunk.state[columns], *(np.array(point.positions) for point in chunk.message.points)])
    low, high = way.min(axis=0) - 1e-9, way.max(axis=0) + 1e-9
    points = np.array([point.positions for point in item.message.points])
    if not np.all((points >= low) & (points <= high)):
        return False
    times = [seconds_from_start(point) for point in item.message.points]
    speeds = np.abs(np.diff(points, axis=0)) / np.diff(times)[:, None] if len(points) > 1 else np.zeros((0, 6))
    return bool(np.all(np.diff(speeds, axis=0) <= 1e-6))


def test_unsafe_rows_stale_state_and_a_silent_policy_never_reach_the_arms(cell: Cell) -> None:
    # An allowed move, too fast, beyond the (refused) joint limit, below the workspace floor, then NaN.
    end, received = run_episode(cell, 'gauntlet')
    assert end.error_kind == 'invalid_chunk' and 'non-finite' in (end.policy_error or '')
    assert end.queries == 4 and end.executed_rows == sum(GAUNTLET_ROWS)
    counted = dict(end.interventions)  # the episode's end names each intervention, for the trial's record
    assert all(counted.get(kind, 0) >= 1 for kind in ('too_fast', 'position_refused', 'outside_workspace')), counted
    assert end.bookkeeping()['interventions'] == counted
    assert_safe(received)
    for arm in ARMS:
        # Per chunk: its allowed rows, or a hold; a chunk refused from a row on (the third and the fourth) its rows and
        # then a controlled stop (it used to end its last row at speed); then the hold after the NaN ended the episode.
        commands = arm_commands(received, arm)
        assert [item.points for item in commands][:2] == [GAUNTLET_ROWS[0], 1] and commands[-1].points == 1
        assert len(commands) == len(GAUNTLET_ROWS) + 1
        assert is_hold(commands[1]) and is_hold(commands[-1])
        for item, rows in zip(commands[2:4], GAUNTLET_ROWS[2:4], strict=True):
            assert item.points > rows
            points = np.array([point.positions for point in item.message.points])
            times = [seconds_from_start(p) for p in item.message.points]
            speeds = np.abs(np.diff(points, axis=0)).max(axis=1) / np.diff(times)
            assert (np.diff(speeds[rows - 1 :]) <= 1e-6).all(), speeds  # from the last row sent on, only slower

    # The driver's joint states are 0.5 s old: observations (limit 1 s) are taken, but no command moves (0.2 s).
    cell.driver.lag = 0.5
    time.sleep(0.3)  # the bridge's newest joint state is then one of the old ones (the stand-in publishes at 100 Hz)
    try:
        end, received = run_episode(cell, 'stale')
    finally:
        cell.driver.lag = 0.0
    assert end.error_kind is None and end.queries == 5 and end.executed_rows == 0
    assert dict(end.interventions).get('stale_state', 0) >= 5, end.interventions
    assert_safe(received)
    only_holds(received)

    # Joint states 1.5 s old, beyond the observation limit (1 s): refused, never shown to the policy; after 3 s of
    # waiting for a fresher one the episode ends with a graph error naming what is old.
    cell.driver.lag = 1.5
    time.sleep(0.3)
    try:
        end, received = run_episode(cell, 'move')
    finally:
        cell.driver.lag = 0.0
    assert end.error_kind == 'graph' and end.queries == 0 and end.executed_rows == 0
    assert 'timed out after 3 s waiting for a fresh observation: joint state 1.5' in (end.policy_error or '')
    assert_safe(received)
    for arm in ARMS:
        (only,) = arm_commands(received, arm)
        assert is_hold(only)  # the hold that ends every failed episode

    # A policy that answers after 4 s: the dead-man holds after 1 s, the 2.5 s query timeout ends the episode.
    end, received = run_episode(cell, 'silent')
    assert end.error_kind == 'timeout' and end.executed_rows == 0
    assert_safe(received)
    for arm in ARMS:
        commands = arm_commands(received, arm)
        assert len(commands) == 2 and all(is_hold(item) for item in commands)  # the dead-man's, the end's


def test_joint_states_going_stale_mid_chunk_stop_the_arms_and_end_the_episode(cell: Cell) -> None:
    # The driver's joint states turn 0.8 s old while a 2.4 s chunk runs (the watchdog: 0.5 s): the arms used to run
    # the chunk out unwatched.
    went_stale: list[float] = []

    def go_stale_during_the_long_chunk() -> None:
        wait_until(
            lambda: any(item.points == LONG_ROWS for item in cell.driver.received[first:]),
            timeout=60,
            what='the first long chunk',
            poll=0.005,
        )
        time.sleep(0.3)
        went_stale.append(time.monotonic())
        cell.driver.lag = 0.8

    first = len(cell.driver.received)
    staler = threading.Thread(target=go_stale_during_the_long_chunk)
    staler.start()
    try:
        end, received = run_episode(cell, 'long')
    finally:
        staler.join()
        cell.driver.lag = 0.0
    assert end.error_kind == 'graph' and 'went stale while a chunk ran' in (end.policy_error or ''), end
    assert 0 < end.executed_rows < LONG_ROWS and dict(end.interventions).get('stale_state', 0) >= 1
    assert_safe(received)
    for arm in ARMS:
        (chunk,) = [item for item in arm_commands(received, arm) if item.points == LONG_ROWS]
        stops = [item for item in arm_commands(received, arm) if item.arrived > went_stale[0]]
        assert stops and all(stopped_along_the_chunk(item, chunk) for item in stops)
        assert stops[0].arrived - went_stale[0] < 1.0  # at once (0.8 s > 0.5 s), a 20 ms look, the transport


def test_a_pause_in_the_joint_states_stops_the_arms_and_the_episode_goes_on_from_there(cell: Cell) -> None:
    # The driver's joint states stop for 0.3 s while a long chunk runs (state_pause 0.2 s, state_watchdog 0.5 s): the
    # arms used to run on unseen until the watchdog, 5-11 cm of travel on fake hardware; the chunk stops now, and the
    # episode goes on once the states are back. The operator's stop then ends it.
    def pause_the_states_then_stop() -> float:
        silenced = time.monotonic()
        cell.driver.silent = True
        time.sleep(0.3)
        cell.driver.silent = False
        wait_until(
            lambda: any(item.points == LONG_ROWS and item.arrived > silenced for item in cell.driver.received),
            timeout=30,
            what='a long chunk after the pause',
        )
        call(cell, topics.STOP)
        return silenced

    end, received, silenced, _ = stopped_mid_chunk(cell, pause_the_states_then_stop)
    counted = dict(end.interventions)
    assert end.error_kind == 'stopped' and end.queries >= 2, end
    assert counted.get('state_gap', 0) >= 1 and 'stale_state' not in counted, counted
    assert_safe(received)
    for arm in ARMS:
        first_chunk, *later = [item for item in arm_commands(received, arm) if item.points == LONG_ROWS]
        assert later and later[0].arrived > silenced
        stop = next(item for item in arm_commands(received, arm) if item.arrived > silenced)
        assert stopped_along_the_chunk(stop, first_chunk) and stop.arrived < later[0].arrived
        assert stop.arrived - silenced < 0.5  # 0.1 s, a 20 ms look, the transport: before the watchdog's 0.5 s
        # A brisk stop: the slow ramp stops within one control period, not over the gentle stop's row period.
        assert seconds_from_start(stop.message.points[-1]) == pytest.approx(1.0 / TEST_CONTROL_RATE)
    released, _ = call(cell, topics.RELEASE)
    assert released.success, released.message


def test_home_on_a_stale_joint_state_answers_none_yet_so_that_the_evaluator_asks_again(cell: Cell) -> None:
    # After a driver pause the home move used to be refused as a "hold: stale_state", and the run ended.
    cell.driver.lag = 0.8
    try:
        time.sleep(0.3)
        refused = call_home(cell)
    finally:
        cell.driver.lag = 0.0
    assert refused.code == HomeCode.NOT_YET and 's old' in refused.message, refused.message
    assert refused.seconds == 0.0
    wait_until(lambda: call_home(cell).code == HomeCode.MOVING, timeout=30, what='home once the driver is fresh again')


def stopped_mid_chunk(cell: Cell, trigger: Callable[[], T]) -> tuple[EpisodeEnd, list[Received], T, float]:
    """A 'long' episode that ``trigger`` stops half a second into its first long chunk: its end, the commands that
    arrived meanwhile, what ``trigger`` returned and the monotonic time just before it was called."""
    result: dict[str, Any] = {}

    def stop_during_the_first_chunk() -> None:
        wait_until(
            lambda: any(item.points == LONG_ROWS for item in cell.driver.received[first:]),
            timeout=60,
            what='the first long chunk',
            poll=0.005,
        )
        time.sleep(0.5)
        result['called'] = time.monotonic()
        result['outcome'] = trigger()

    first = len(cell.driver.received)
    stopper = threading.Thread(target=stop_during_the_first_chunk)
    stopper.start()
    end, received = run_episode(cell, 'long')
    stopper.join()
    return end, received, result['outcome'], result['called']


def holds_after(received: list[Received], called: float) -> dict[str, float]:
    """Asserts that every command of each arm after ``called`` stops it along its long chunk; each arm's delay (s)."""
    delays = {}
    for arm in ARMS:
        commands = arm_commands([item for item in received if item.arrived >= called], arm)
        (chunk,) = [item for item in arm_commands(received, arm) if item.points == LONG_ROWS]
        assert commands and all(stopped_along_the_chunk(item, chunk) for item in commands), [
            item.message.points for item in commands
        ]
        delays[arm] = commands[0].arrived - called
    return delays


def test_stop_holds_both_arms_ends_the_episode_and_refuses_motion_until_the_next(cell: Cell) -> None:
    end, received, (answer, called), _ = stopped_mid_chunk(cell, lambda: call(cell, topics.STOP))
    assert isinstance(answer, Trigger.Response) and answer.success, answer
    assert end.error_kind == 'stopped' and end.queries == 1 and 0 < end.executed_rows < LONG_ROWS
    assert_safe(received)
    delays = holds_after(received, called)
    control_period = 1.0 / load_profile(str(TEST_PROFILE)).control_rate
    print(
        f'stop -> hold: left {delays["left"] * 1e3:.2f} ms, right {delays["right"] * 1e3:.2f} ms '
        f'(control period {control_period * 1e3:.0f} ms)'
    )

    # Stopped: home is refused too, and an episode announced before the stop stays stopped (its reset was stamped
    # before it); an episode announced after it moves again.
    refused = call_home(cell)
    assert refused.code == HomeCode.STOPPED and 'stopped' in refused.message
    before_stop_ns = end.end_stamp_ns - 1_000_000_000
    end, received = run_episode(cell, 'move', reset_ns=before_stop_ns)
    assert end.error_kind == 'stopped' and end.executed_rows == 0
    assert_safe(received)
    only_holds(received)
    end, received = run_episode(cell, 'move')
    assert end.error_kind is None and end.executed_rows == 5 * 3
    assert_safe(received)

    # Home: one slow trajectory per controller through the safety filter, ending at the profile's home pose.
    before = len(cell.driver.received)
    answer = call_home(cell)
    assert answer.code == HomeCode.MOVING, answer.message
    assert answer.seconds > 0.0 and f'moving home in {answer.seconds:.2f} s' in answer.message
    wait_until(lambda: len(cell.driver.received) >= before + 4, timeout=30, what='the home trajectories')
    home = cell.driver.received[before:]
    assert_safe(home)
    profile = load_profile(str(TEST_PROFILE))
    rows = int(re.search(r'\((\d+) rows', answer.message)[1])  # 'move' shifted the right waist by up to 0.075 rad
    assert answer.seconds == pytest.approx(rows * profile.row_period)
    for arm in ARMS:
        (command,) = arm_commands(home, arm)
        assert command.points == rows
        np.testing.assert_allclose(command.message.points[-1].positions, profile.arms[arm].home[:6], atol=1e-9)


def test_the_operators_stop_command_reaches_the_bridge_over_its_socket_without_discovery(cell: Cell) -> None:
    """``robofollow operator stop`` goes first to the bridge's stop socket (``realcell/stop_socket.py``): the same
    stop as the service, with no DDS participant to start and no graph to discover."""

    def operator_stop() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, '-m', 'robofollow_ros', 'operator', 'stop', '--timeout', '20'],
            env=graph_env(NOMINAL_DOMAIN),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    end, received, done, called = stopped_mid_chunk(cell, operator_stop)
    assert done.returncode == 0 and done.stdout.startswith('both arms hold'), done.stderr
    assert '(service found after' in done.stderr and 'the stop socket' in done.stderr, done.stderr
    assert end.error_kind == 'stopped' and 0 < end.executed_rows < LONG_ROWS
    assert_safe(received)
    holds_after(received, called)
    end, received = run_episode(cell, 'move')  # a trial announced after the stop moves again
    assert end.error_kind is None and end.executed_rows == 5 * 3


def gripper_commands(received: list[Received], arm: str, *, points: int) -> list[np.ndarray]:
    """The normalised targets of the ``arm`` gripper's commands of ``points`` points, in arrival order."""
    scale = load_profile(str(TEST_PROFILE)).arms[arm].gripper  # type: ignore[index]
    return [
        np.array([scale.command.from_driver(point.positions[0]) for point in item.message.points])
        for item in received
        if item.topic == scale.interface.topic and item.points == points
    ]


@pytest.mark.parametrize('mode', ['clamp', 'refuse'])
def test_the_profile_joint_limits_mode_decides_out_of_limit_targets_and_grippers_move_at_their_speed(
    request: pytest.FixtureRequest, mode: str
) -> None:
    # Issue 29: the bridge's URDF chunk check ended the episode `invalid_chunk` at the gripper's 1.1 before the
    # safety filter saw the chunk, so `joint_limits: clamp` never acted; and the grippers had no speed limit.
    cell: Cell = request.getfixturevalue('clamp_cell' if mode == 'clamp' else 'cell')
    profile = load_profile(str(TEST_PROFILE))
    home = profile.home_state()
    wait_until(lambda: call_home(cell).code == HomeCode.MOVING, timeout=60, what='the home move')
    wait_until(
        lambda: np.allclose(cell.driver.state(), home, atol=1e-6), timeout=30, what='the arms at home', poll=0.01
    )
    end, received = run_episode(cell, 'overshoot')
    counted = dict(end.interventions)
    assert end.error_kind is None and end.queries == len(OVERSHOOT_ROWS), end
    assert_safe(received)
    (first, *_) = arm_commands(received, 'left')
    (left_grip, *_) = [
        item
        for item in received
        if item.topic == profile.arms['left'].gripper.interface.topic  # type: ignore[index]
    ]
    if mode == 'clamp':
        # Sent whole: the left waist held at its +0.2 limit from row 4, the gripper at fully open from row 2.
        assert end.executed_rows == sum(OVERSHOOT_ROWS)
        assert counted.get('position_clamped') == 6 and 'position_refused' not in counted, counted
        assert first.points == OVERSHOOT_ROWS[0]
        waist = [point.positions[0] for point in first.message.points]
        np.testing.assert_allclose(waist, [0.05, 0.1, 0.15, 0.2, 0.2, 0.2], atol=1e-6)
        np.testing.assert_allclose([point.positions[0] for point in left_grip.message.points], 0.036, atol=1e-9)
    else:
        # Refused from row 2 (the gripper's 1.1) on: rows 0 and 1 sent.
        assert end.executed_rows == 2 + sum(OVERSHOOT_ROWS[1:])
        assert counted.get('position_refused', 0) >= 1 and counted.get('rows_refused') == 1, counted
        assert 'position_clamped' not in counted, counted
        assert first.points > 2  # rows 0 and 1, then the controlled stop that ends them
    # The right gripper closed, then opened, in one row: moved at 0.9 of its URDF speed (a full stroke in 0.2 s,
    # four rows), never refused as too fast.
    step = 0.2 / 0.036 * profile.row_period * REACH_SPEED_FRACTION
    *_, close, open_ = gripper_commands(received, 'right', points=5)  # (a refused first chunk's stop may have 5)
    np.testing.assert_allclose(close, np.clip(1.0 - step * np.arange(1, 6), 0.0, 1.0), atol=1e-6)
    np.testing.assert_allclose(open_, np.clip(step * np.arange(1, 6), 0.0, 1.0), atol=1e-6)
    assert 'too_fast' not in counted, counted
