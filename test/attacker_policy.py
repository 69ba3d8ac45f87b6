"""A hostile user policy: in its first ``predict`` it tries every attack the policy sandbox must stop.

Each attack prints one line ``ATTACK <name> <succeeded|failed> <detail>`` on stdout (the evaluator keeps a policy's
output in its log file, which is how the tests read the verdicts), then the policy holds still, so that an honest
referee scores it as a failure. The tests check the effects from outside as well (a listener on the arm topic, the
run's files, the process table); the printed verdicts say which way each attempt went and why.

Keyword arguments: ``attacks`` (names, default all of ``ATTACKS``), ``target_pid`` (the evaluator's process),
``secret`` (a value only the evaluator's environment holds), ``out`` (the run folder), ``domain`` (the graph's ROS
domain), ``marker`` (a word that names the processes and lines it leaves behind), ``ros_seconds`` (how long to wait
for the graph).
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
ARM_TOPIC = '/left_arm_controller/joint_trajectory'
FLOOD_BYTES = 8 * 1024 * 1024


class Attacker:
    """Tries each attack once, on its first query, then holds."""

    def __init__(
        self,
        attacks: list[str] | None = None,
        target_pid: int = 0,
        secret: str = '',
        out: str = '',
        domain: int = 0,
        marker: str = 'robofollow-attacker',
        ros_seconds: float = 4.0,
        mmap_mib: int = 1024,
        stop_socket: str = '',
    ) -> None:
        self.attacks = list(attacks or ATTACKS)
        self.target_pid = int(target_pid)
        self.secret = secret
        self.out = out
        self.domain = int(domain)
        self.marker = marker
        self.ros_seconds = float(ros_seconds)
        self.mmap_mib = int(mmap_mib)
        self.stop_socket = stop_socket
        self.done = False

    def reset(self) -> None:
        """Nothing to forget."""

    def set_instruction(self, text: str) -> None:
        """Ignored."""

    def predict(self, observation: Any) -> np.ndarray:
        """Attack once, then hold."""
        if not self.done:
            self.done = True
            for name in self.attacks:
                try:
                    verdict = ATTACKS[name](self)
                except Exception as error:
                    verdict = False, f'{type(error).__name__}: {error}'
                if verdict is not None:
                    report(name, *verdict)
        return np.tile(np.asarray(observation.state, dtype=np.float32), (3, 1))

    def targets(self) -> list[int]:
        """The evaluator's process if named, the parent unless it is the sandbox's init (bwrap), and every process of
        the project's nodes that ``/proc`` shows (the bridge, the evaluator), but this policy's own."""
        found = [self.target_pid] if self.target_pid > 0 else []
        for entry in os.listdir('/proc'):
            if not entry.isdigit() or int(entry) in (os.getpid(), *found):
                continue
            try:
                with open(f'/proc/{entry}/cmdline', 'rb') as stream:
                    command = stream.read()
            except OSError:
                continue
            ours = b'isolation.host' in command or self.marker.encode() in command
            project = b'robofollow_ros' in command or b'robofollow ' in command
            parent = int(entry) == os.getppid() and b'bwrap' not in command.split(b'\0')[0]
            if (project and not ours) or parent:
                found.append(int(entry))
        return found


def nothing_found() -> str:
    return f'no target process (/proc shows {sum(e.isdigit() for e in os.listdir("/proc"))} processes, all of its own)'


def report(name: str, succeeded: bool, detail: str) -> None:
    print(f'ATTACK {name} {"succeeded" if succeeded else "failed"} {detail}'.replace('\n', ' '), flush=True)


def read_environ(self: Attacker) -> tuple[bool, str]:
    for pid in [*self.targets(), 1]:
        try:
            with open(f'/proc/{pid}/environ', 'rb') as stream:
                if self.secret and self.secret.encode() in stream.read():
                    return True, f'read the secret in /proc/{pid}/environ'
        except OSError as error:
            last = f'/proc/{pid}/environ: {error.strerror}'
            continue
        last = f'/proc/{pid}/environ holds no secret'
    return False, last if self.targets() else nothing_found()


def read_memory(self: Attacker) -> tuple[bool, str]:
    detail = nothing_found()
    for pid in self.targets():
        try:
            with open(f'/proc/{pid}/maps', encoding='utf-8') as stream:
                start = next(int(line.split('-')[0], 16) for line in stream if line.split()[1].startswith('r'))
            with open(f'/proc/{pid}/mem', 'rb') as stream:
                stream.seek(start)
                data = stream.read(16)
            writable = os.access(f'/proc/{pid}/mem', os.W_OK)
            return len(data) == 16, f'read 16 bytes of /proc/{pid}/mem (writable: {writable})'
        except OSError as error:
            detail = f'/proc/{pid}/mem: {error.strerror}'
    return False, detail


def trace_parent(self: Attacker) -> tuple[bool, str]:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    detail = nothing_found()
    for pid in self.targets()[:1]:  # one stop of one process is proof enough
        if libc.ptrace(PTRACE_SEIZE, pid, None, None) == 0:
            libc.ptrace(PTRACE_INTERRUPT, pid, None, None)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0x40000000)  # __WALL
            libc.ptrace(PTRACE_DETACH, pid, None, None)
            return True, f'PTRACE_SEIZE of {pid} allowed'
        detail = f'PTRACE_SEIZE of {pid}: {os.strerror(ctypes.get_errno())}'
    return False, detail


def signal_parent(self: Attacker) -> tuple[bool, str]:
    detail = nothing_found()
    for pid in self.targets():
        try:
            os.kill(pid, 0)
            return True, f'kill({pid}, 0) allowed'
        except OSError as error:
            detail = f'kill({pid}, 0): {error.strerror}'
    return False, detail


def write_out(self: Attacker) -> tuple[bool, str]:
    results = os.path.join(self.out, 'results.jsonl')
    try:
        with open(os.path.join(self.out, f'{self.marker}.forged'), 'w', encoding='utf-8') as stream:
            stream.write('forged\n')
        with open(results, 'a', encoding='utf-8') as stream:
            stream.write('')
        return True, f'created a file in {self.out} and opened results.jsonl for writing'
    except OSError as error:
        return False, f'{self.out}: {error.strerror}'


def keep_privileges(self: Attacker) -> tuple[bool, str]:
    """Whether the process may gain privileges (no ``no_new_privs``) or holds a capability."""
    with open('/proc/self/status', encoding='utf-8') as stream:
        status = dict(line.split(':', 1) for line in stream.read().splitlines() if ':' in line)
    no_new_privs, effective = status['NoNewPrivs'].strip(), int(status['CapEff'].strip(), 16)
    held = no_new_privs != '1' or effective != 0
    return held, f'NoNewPrivs {no_new_privs}, CapEff {effective:#x}'


def map_past_cap(self: Attacker) -> tuple[bool, str]:
    size = self.mmap_mib << 20
    try:
        area = mmap.mmap(-1, size, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
    except OSError as error:
        return False, f'mmap of {self.mmap_mib} MiB shared memory: {error.strerror}'
    for offset in range(0, size, mmap.PAGESIZE):
        area[offset] = 1
    area.close()
    return True, f'mapped and touched {self.mmap_mib} MiB of shared memory'


def leave_child(self: Attacker) -> tuple[bool, str]:
    script = f'import time\n# {self.marker}-child\ntime.sleep(600)\n'
    child = subprocess.Popen([sys.executable, '-c', script], start_new_session=True)
    if os.fork() == 0:
        os.setsid()
        os.execv(sys.executable, [sys.executable, '-c', script])
    return True, f'started {child.pid} in a session of its own and a forked grandchild (the test looks for them)'


def flood(self: Attacker) -> None:
    """Fake progress lines on the terminal, then 16 MiB of them on stdout and stderr (reported before the flood, which
    buries anything printed after it)."""
    line = f'{self.marker}-flood 1 trials: 1 scored, 0 with policy errors, 1 completed\n'
    try:
        with open('/dev/tty', 'w', encoding='utf-8') as terminal:
            terminal.write(line)
        report('flood', True, 'wrote to /dev/tty')
    except OSError as error:
        report('flood', False, f'/dev/tty: {error.strerror}; now {2 * FLOOD_BYTES} bytes to stdout and stderr')
    block = line * (FLOOD_BYTES // len(line))
    sys.stdout.write(block)
    sys.stderr.write(block)
    sys.stdout.flush()


def with_ros(self: Attacker, act: Callable[[Any, Any], tuple[bool, str]]) -> tuple[bool, str]:
    os.environ.update(ROS_DOMAIN_ID=str(self.domain), ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context, domain_id=self.domain)
    try:
        node = rclpy.create_node(f'attacker_{os.getpid()}', context=context)
        return act(node, context)
    finally:
        rclpy.shutdown(context=context)


def until(seconds: float, done: Callable[[], bool], context: Any, node: Any) -> bool:
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not done():
        executor.spin_once(timeout_sec=0.05)
    return done()


def publish_arm(self: Attacker) -> tuple[bool, str]:
    def act(node: Any, context: Any) -> tuple[bool, str]:
        from builtin_interfaces.msg import Duration
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

        publisher = node.create_publisher(JointTrajectory, ARM_TOPIC, 10)
        if not until(self.ros_seconds, lambda: publisher.get_subscription_count() > 0, context, node):
            return False, f'no subscriber of {ARM_TOPIC} within {self.ros_seconds:g} s'
        message = JointTrajectory()
        message.joint_names = [f'{self.marker}_joint']
        message.points = [JointTrajectoryPoint(positions=[1.5], time_from_start=Duration(sec=0, nanosec=200_000_000))]
        for _ in range(5):
            publisher.publish(message)
            time.sleep(0.05)
        return True, f'published on {ARM_TOPIC} to {publisher.get_subscription_count()} subscriber(s)'

    return with_ros(self, act)


def publish_result(self: Attacker) -> tuple[bool, str]:
    def act(node: Any, context: Any) -> tuple[bool, str]:
        from robofollow_interfaces.msg import Result

        publisher = node.create_publisher(Result, '/robofollow/result', 10)
        if not until(self.ros_seconds, lambda: publisher.get_subscription_count() > 0, context, node):
            return False, f'no subscriber of /robofollow/result within {self.ros_seconds:g} s'
        message = Result()
        message.task_id = self.marker
        # The writer can see the reader before the reader has matched the writer: one message may go nowhere.
        for _ in range(5):
            publisher.publish(message)
            time.sleep(0.05)
        return True, f'published a Result to {publisher.get_subscription_count()} subscriber(s)'

    return with_ros(self, act)


def read_poses(self: Attacker) -> tuple[bool, str]:
    def act(node: Any, context: Any) -> tuple[bool, str]:
        from geometry_msgs.msg import PoseStamped

        heard: list[str] = []
        topics: set[str] = set()

        def discover() -> bool:
            for name, _ in node.get_topic_names_and_types():
                if name.startswith('/robofollow/objects/') and name not in topics:
                    topics.add(name)
                    node.create_subscription(PoseStamped, name, lambda _m, n=name: heard.append(n), 10)
            return bool(heard)

        if until(self.ros_seconds, discover, context, node):
            return True, f'received {len(heard)} object pose(s), first on {heard[0]}'
        return False, f'no object pose within {self.ros_seconds:g} s ({len(topics)} pose topics seen)'

    return with_ros(self, act)


def call_services(self: Attacker) -> tuple[bool, str]:
    def act(node: Any, context: Any) -> tuple[bool, str]:
        from std_srvs.srv import Trigger

        from robofollow_interfaces.srv import ResetEpisode

        wanted = {'/robofollow/sim/reset': ResetEpisode, '/robofollow/stop': Trigger, '/robofollow/void': Trigger}
        clients = {name: node.create_client(kind, name) for name, kind in wanted.items()}
        if not until(self.ros_seconds, lambda: any(c.service_is_ready() for c in clients.values()), context, node):
            return False, f'no robofollow service within {self.ros_seconds:g} s'
        answered = []
        for name, client in clients.items():
            if client.service_is_ready():
                future = client.call_async(wanted[name].Request())
                if until(2.0, future.done, context, node):
                    answered.append(name)
        return bool(answered), f'services answered: {", ".join(answered) or "none"}'

    return with_ros(self, act)


def connect_stop_socket(self: Attacker) -> tuple[bool, str]:
    """Connect to the bridge's stop socket (``realcell/stop_socket.py``): the path it was given (the evaluator's, as
    the test computes it), this process's own idea of it, and any robofollow socket in the runtime folders."""
    import glob
    import socket

    from robofollow_ros.realcell.stop_socket import stop_socket_path

    candidates = {self.stop_socket} if self.stop_socket else set()
    candidates.add(str(stop_socket_path(self.domain)))
    candidates.update(glob.glob('/run/user/*/robofollow/*.sock') + glob.glob('/tmp/robofollow-*/*.sock'))
    for path in sorted(candidates):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(2.0)
            try:
                client.connect(path)
            except OSError:
                continue
            return True, f'connected to {path}'
    return False, f'no stop socket reachable ({len(candidates)} paths tried)'


ATTACKS: dict[str, Callable[[Attacker], tuple[bool, str] | None]] = {
    'environ': read_environ,
    'memory': read_memory,
    'ptrace': trace_parent,
    'signal': signal_parent,
    'write_out': write_out,
    'publish_arm': publish_arm,
    'publish_result': publish_result,
    'read_poses': read_poses,
    'call_services': call_services,
    'stop_socket': connect_stop_socket,
    'leave_child': leave_child,
    'privileges': keep_privileges,
    'flood': flood,
    'mmap': map_past_cap,
}


def verdicts(log_text: str) -> dict[str, tuple[bool, str]]:
    """``{attack: (succeeded, detail)}`` from a policy log."""
    found = {}
    for line in log_text.splitlines():
        if line.startswith('ATTACK '):
            _, name, verdict, *detail = line.split(' ', 3)
            found[name] = (verdict == 'succeeded', ' '.join(detail))
    return found


class ForkThenDie:
    """Forks a child that keeps the policy's pipes open, then its own process exits at once."""

    def __init__(self, marker: str = 'robofollow-attacker') -> None:
        self.marker = marker

    def reset(self) -> None:
        """Nothing to forget."""

    def set_instruction(self, text: str) -> None:
        """Ignored."""

    def predict(self, observation: Any) -> np.ndarray:
        """Fork a sleeper that inherits every descriptor, then die."""
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, '-c', f'import time\n# {self.marker}-child\ntime.sleep(600)\n'])
        os._exit(3)
