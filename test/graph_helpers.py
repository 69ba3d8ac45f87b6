"""Running the ROS graph from tests: private domains (graph range 10-59), localhost discovery, shipped profile."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / 'config' / 'fastdds_shm.xml'


def discovery_range() -> str:
    """The discovery range of a test's own nodes: the graph's (``graph_environment``), so that every participant of
    a test's domain runs the same discovery. With the shipped profile that is SYSTEM_DEFAULT, which leaves
    discovery to the profile: unicast to 127.0.0.1 only, stricter than LOCALHOST (a node with LOCALHOST beside the
    graph's nodes now and then failed to discover one of their writers or services under load)."""
    from robofollow_ros.graph.declaration import graph_environment

    localhost = {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST', 'FASTDDS_DEFAULT_PROFILES_FILE': str(PROFILE)}
    return graph_environment(localhost)['ROS_AUTOMATIC_DISCOVERY_RANGE']


def ros_domain(domain: int) -> int:
    """The ROS domain a test's nominal ``domain`` (10-59) runs in.

    Under pytest-xdist the second worker folds the nominal domains into 60-101 (``60 + (domain - 10) % 42``), so the
    two workers never share a domain; 102-214 are avoided, where a domain's ports fall among the ephemeral ones
    (``robofollow launch`` refuses such domains for several graphs). Tests that one worker runs one after another may
    share a domain. ``ROBOFOLLOW_TEST_DOMAINS=LO-HI`` folds every test domain into LO-HI instead (split between the
    workers), so several people can run the suite on one machine at once, each in their own range.
    """
    assert 10 <= domain <= 59, 'graph tests use ROS domains 10-59'
    worker = int(os.environ.get('PYTEST_XDIST_WORKER', 'gw0').removeprefix('gw'))
    folded = os.environ.get('ROBOFOLLOW_TEST_DOMAINS', '')
    if not folded:
        assert worker <= 1, 'two workers at most without ROBOFOLLOW_TEST_DOMAINS'
        return domain if worker == 0 else 60 + (domain - 10) % 42
    low, high = (int(part) for part in folded.split('-'))
    share = (high - low + 1) // int(os.environ.get('PYTEST_XDIST_WORKER_COUNT', '1'))
    assert share >= 2, f'ROBOFOLLOW_TEST_DOMAINS={folded} is too narrow for every worker to have two domains'
    return low + worker * share + domain % share


def graph_env(domain: int, **extra: str) -> dict[str, str]:
    """Environment of a graph test in its own DDS domain; the test folder is importable (test policies)."""
    env = dict(os.environ)
    env.update(
        ROS_DOMAIN_ID=str(ros_domain(domain)),
        ROS_AUTOMATIC_DISCOVERY_RANGE=discovery_range(),
        FASTDDS_DEFAULT_PROFILES_FILE=str(PROFILE),
        MUJOCO_GL=env.get('MUJOCO_GL', 'egl'),
        PYTHONPATH=os.pathsep.join([str(ROOT / 'test'), str(ROOT), env.get('PYTHONPATH', '')]).rstrip(os.pathsep),
    )
    env.pop('FASTRTPS_DEFAULT_PROFILES_FILE', None)
    env.update(extra)
    return env


def launch_command(*, graph: str = 'sim', **arguments: str) -> list[str]:
    """``robofollow launch <graph> name:=value ...`` with the test's interpreter."""
    return [sys.executable, '-m', 'robofollow_ros', 'launch', graph, *(f'{k}:={v}' for k, v in arguments.items())]


STARTED: list[subprocess.Popen[str]] = []
"""Every launcher a test started, so that one left running by a failed test is stopped (``stop_leftovers``)."""


def start_launch(domain: int, *, graph: str = 'sim', **arguments: str) -> subprocess.Popen[str]:
    """Start the graph in a new session (so signals reach exactly its process group)."""
    process = subprocess.Popen(
        launch_command(graph=graph, progress='false', **arguments),
        env=graph_env(domain),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    STARTED.append(process)
    return process


def stop_leftovers() -> None:
    """Stop launchers still running after their test (SIGTERM stops their nodes; SIGKILL if it does not)."""
    while STARTED:
        process = STARTED.pop()
        if process.poll() is not None:
            continue
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()


def finish(process: subprocess.Popen[str], timeout: float = 30.0) -> str:
    """Wait for a launcher to exit; its output (killed with its whole group, and failing, if it does not)."""
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        raise AssertionError(f'graph did not finish in {timeout} s:\n{output[-4000:]}') from None
    return output


def run_launch(
    domain: int, *, graph: str = 'sim', timeout: float = 120.0, **arguments: str
) -> subprocess.CompletedProcess[str]:
    """Run the graph to its end."""
    process = start_launch(domain, graph=graph, **arguments)
    output = finish(process, timeout)
    return subprocess.CompletedProcess(process.args, process.returncode, output, '')


def children(pid: int) -> list[int]:
    """Direct child process ids of ``pid``."""
    found = []
    for task in Path(f'/proc/{pid}/task').glob('*'):
        text = (task / 'children').read_text() if (task / 'children').exists() else ''
        found += [int(item) for item in text.split()]
    return found


def node_pids(launcher: int) -> dict[str, int]:
    """Node name -> pid of the node processes a launcher started."""
    return dict(_node_processes(launcher))


def node_pids_by_domain(launcher: int) -> dict[str, int]:
    """``name@domain`` -> pid of the node processes a launcher of several graphs started (``evaluator``: once)."""
    pids = {}
    for name, pid in _node_processes(launcher):
        environment = Path(f'/proc/{pid}/environ').read_bytes().split(b'\0')
        domain = next(item.split(b'=', 1)[1].decode() for item in environment if item.startswith(b'ROS_DOMAIN_ID='))
        pids[name if name == 'evaluator' else f'{name}@{domain}'] = pid
    return pids


def _node_processes(launcher: int) -> list[tuple[str, int]]:
    found = []
    for child in children(launcher):
        try:
            command = Path(f'/proc/{child}/cmdline').read_bytes().split(b'\0')
        except OSError:
            continue
        modules = [part.decode() for part in command if part.startswith(b'robofollow_ros.nodes.')]
        found += [(module.rsplit('.', 1)[1], child) for module in modules]
    return found


def udp_sockets(pid: int) -> list[tuple[str, int]]:
    """The (address, port) every UDP socket of process ``pid`` is bound to (``/proc/<pid>/fd`` and ``net/udp*``)."""
    inodes = set()
    for link in Path(f'/proc/{pid}/fd').iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(link)
            if target.startswith('socket:['):
                inodes.add(target[len('socket:[') : -1])
    bound = []
    for table, family in (('udp', socket.AF_INET), ('udp6', socket.AF_INET6)):
        for line in Path(f'/proc/{pid}/net/{table}').read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] not in inodes:
                continue
            address, port = fields[1].split(':')
            raw = bytes.fromhex(address)
            # /proc prints the address as 32-bit words in host byte order
            words = b''.join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)) if sys.byteorder == 'little' else raw
            bound.append((socket.inet_ntop(family, words), int(port, 16)))
    return bound


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process."""
    try:
        state = Path(f'/proc/{pid}/stat').read_text().split(') ', 1)[1][0]
    except (OSError, IndexError):
        return False
    return state != 'Z'


def where_they_wait(processes: dict[str, int]) -> str:
    """The processes still alive, each with its threads' names and kernel wait channels (what a process that does not
    exit is blocked in), for a failure message."""
    lines = []
    for name, pid in processes.items():
        if not alive(pid):
            continue
        threads = []
        for task in sorted(Path(f'/proc/{pid}/task').glob('*')):
            with contextlib.suppress(OSError):
                threads.append(f'{(task / "comm").read_text().strip()}@{(task / "wchan").read_text().strip() or "-"}')
        lines.append(f'{name} (pid {pid}): {", ".join(threads)}')
    return '; '.join(lines) or 'none'


def wait_until(
    condition, *, timeout: float, what: str, poll: float = 0.05, detail: Callable[[], str] | None = None
) -> None:
    """Poll ``condition`` until true, or fail naming ``what`` (and what ``detail`` says at that moment)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f'timed out waiting for {what}' + ('' if detail is None else f': {detail()}'))
        time.sleep(poll)


def read_records(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a results file."""
    return [json.loads(line) for line in path.read_text(encoding='utf-8').splitlines() if line.strip()]


VOLATILE = ('wall_seconds', 'episode_file', 'source', 'run_id')
"""run_id differs by design: the run identity names the runtime (in-process or ros-graph)."""


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A result record without the fields that legitimately differ between runs of the same episode."""
    return {key: value for key, value in record.items() if key not in VOLATILE}


LISTEN_JOINT_NAMES = """
import json, sys, time
import rclpy
from robofollow_interfaces.msg import Result
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from robofollow_ros.ros import qos
rclpy.init()
node = rclpy.create_node('joint_names_listener')
seen = {}
results = []
node.create_subscription(JointState, '/joint_states', lambda m: seen.setdefault('names', list(m.name)), qos.STATE)
node.create_subscription(String, '/robot_description', lambda m: seen.setdefault('urdf', m.data), qos.LATCHED)


def on_result(m):
    stages = [{'name': s.name, 'intent': s.intent, 'exec': s.exec, 'max': s.max} for s in m.stages]
    fields = ('task_id', 'intent_score', 'exec_score', 'completion_ok', 'scored', 'seed', 'round')
    results.append({**{name: getattr(m, name) for name in fields}, 'stages': stages})


node.create_subscription(Result, '/robofollow/result', on_result, qos.EVENTS)
print('ready', flush=True)
deadline = time.monotonic() + float(sys.argv[2])
expected = int(sys.argv[3])
writers = dict.fromkeys(('/joint_states', '/robot_description', '/robofollow/result'), 0)
try:
    while (len(seen) < 2 or len(results) < expected) and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
        writers = {topic: max(count, node.count_publishers(topic)) for topic, count in writers.items()}
except KeyboardInterrupt:
    pass
with open(sys.argv[1], 'w', encoding='utf-8') as out:
    json.dump({**seen, 'results': results, 'writers_seen': writers}, out)
"""


def start_joint_names_listener(
    domain: int, path: Path, *, timeout: float = 300.0, results: int = 0
) -> subprocess.Popen[str]:
    """A process in ``domain`` that writes to ``path`` the names of the first /joint_states message, the
    /robot_description text and the typed fields of the ``/robofollow/result`` messages (read through rclpy's
    ``robofollow_interfaces/msg/Result``) as JSON (``names``, ``urdf``, ``results``; and ``writers_seen``, the most
    writers of each of the three topics it discovered at once, to tell a missed match from lost messages), once it
    has the first two and ``results`` results, or on SIGINT with what it has; returns once it is subscribed."""
    process = subprocess.Popen(
        [sys.executable, '-c', LISTEN_JOINT_NAMES, str(path), str(timeout), str(results)],
        env=graph_env(domain),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == 'ready'
    return process


def stop_listener(process: subprocess.Popen[str], *, grace: float = 20.0) -> None:
    """Let a listener finish on its own for ``grace`` seconds, then interrupt it (it writes what it got)."""
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=10)


@contextlib.contextmanager
def private_node(domain: int, name: str, *, spin: bool = False) -> Iterator[tuple[Any, Any]]:
    """An rclpy node of its own context in the test's private ``domain`` (the graph's discovery, the shipped Fast DDS
    profile: this host only), with a single-threaded executor it was added to, spun on a thread when ``spin``; torn
    down after."""
    import rclpy
    from rclpy.context import Context

    saved = {key: os.environ.get(key) for key in ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'FASTDDS_DEFAULT_PROFILES_FILE')}
    os.environ.update(ROS_AUTOMATIC_DISCOVERY_RANGE=discovery_range(), FASTDDS_DEFAULT_PROFILES_FILE=str(PROFILE))
    try:
        context = Context()
        rclpy.init(context=context, domain_id=ros_domain(domain))
        node = rclpy.create_node(name, context=context)
        with spinning(context, node, spin=spin) as executor:
            yield node, executor
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def spinning(context: Any, *nodes: Any, threads: int = 1, spin: bool = True) -> Iterator[Any]:
    """An executor of ``nodes`` (of rclpy ``context``, ``None`` for the default one), multi-threaded when ``threads``
    > 1, spun on a thread for the block when ``spin`` (else the caller spins it); then the executor is stopped, the
    nodes destroyed and ``context`` shut down."""
    import rclpy
    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor

    executor = (
        MultiThreadedExecutor(num_threads=threads, context=context)
        if threads > 1
        else SingleThreadedExecutor(context=context)
    )
    for node in nodes:
        executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True) if spin else None
    if spinner is not None:
        spinner.start()
    try:
        yield executor
    finally:
        executor.shutdown(timeout_sec=5)
        if spinner is not None:
            spinner.join(timeout=5)
        for node in nodes:
            node.destroy_node()
        rclpy.shutdown(context=context)


def start_node_process(domain: int, node: str, *parameters: str) -> subprocess.Popen[str]:
    """Node ``robofollow_ros.nodes.<node>`` in its own process in the test's private ``domain``, with ``name:=value``
    parameters (stdout and stderr piped; ``stop_node_process`` ends it)."""
    arguments = [arg for parameter in parameters for arg in ('-p', parameter)]
    command = [sys.executable, '-m', f'robofollow_ros.nodes.{node}', '--ros-args', *arguments]
    return subprocess.Popen(
        command, env=graph_env(domain), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def stop_node_process(process: subprocess.Popen[str]) -> str:
    """Terminate a node started by ``start_node_process`` (if still running); its stderr."""
    if process.poll() is None:
        process.terminate()
    _, err = process.communicate(timeout=30)
    return err


def profile_without_robot(folder: Path) -> Path:
    """A copy of the shipped Piper profile that names no robot description (``robot: null``): ``no_robot.yaml``."""
    text = (ROOT / 'config' / 'robots' / 'piper.yaml').read_text(encoding='utf-8')
    assert '\nrobot: piper\n' in text
    path = folder / 'no_robot.yaml'
    path.write_text(text.replace('\nrobot: piper\n', '\nrobot: null\n'), encoding='utf-8')
    return path
