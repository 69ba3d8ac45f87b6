"""The policy sandbox, attacked: every attack of ``attacker_policy`` that succeeds from a plain policy process fails
from the sandboxed one, in-process and over both graphs, and the trials are recorded honestly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from attacker_policy import ARM_TOPIC, verdicts
from graph_helpers import private_node, read_records, ros_domain, run_launch, wait_until

from robofollow_ros.errors import PolicyError
from robofollow_ros.evaluation.guard import GuardedPolicy, PolicyFailure
from robofollow_ros.policy.factory import PolicyFactory, resolve_policy
from robofollow_ros.policy.isolation.output_log import DEFAULT_LIMIT_BYTES, LOG_FOLDER
from robofollow_ros.policy.isolation.sandbox import SANDBOX_PATH, SandboxOptions, sandbox_problem
from robofollow_ros.policy.observation import CAMERAS
from robofollow_ros.realcell.stop_socket import StopSocket, stop_socket_path

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=f'no sandbox here: {sandbox_problem()}')

TASK = 'L0_pickup_yellow_block_2'
STAND_IN_DOMAIN = 16
SIM_DOMAIN = 17
REAL_DOMAIN = 20
GRAPH_ATTACKS = ['environ', 'memory', 'ptrace', 'signal', 'write_out', 'publish_arm', 'publish_result', 'read_poses']
GRAPH_ATTACKS += ['call_services', 'stop_socket', 'leave_child', 'privileges']
SANDBOX_STOPS = [*GRAPH_ATTACKS, 'flood']
"""Attacks the sandbox must make fail (``leave_child`` starts its children either way: the test looks for them)."""


def secret_of_this_process() -> str:
    """An entry of this process's environment as it was exec'd (``/proc/self/environ``) that no sandbox holds."""
    entries = Path('/proc/self/environ').read_bytes().split(b'\0')
    for entry in entries:
        text = entry.decode(errors='replace')
        name = text.split('=', 1)[0]
        if '=' in text and name not in ('PATH', 'LANG', 'HOME', 'TMPDIR', 'PYTHONPATH') and len(text) > 8:
            return text
    return f'PATH={os.environ["PATH"]}' if os.environ['PATH'] != SANDBOX_PATH else pytest.skip('no secret to steal')


def leftovers(marker: str) -> list[int]:
    """Processes whose command line carries ``marker`` (children the attacker started)."""
    found = []
    for entry in Path('/proc').iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / 'cmdline').read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, 9)
        except OSError:
            continue


def observation() -> SimpleNamespace:
    images = {camera: np.zeros((24, 32, 3), dtype=np.uint8) for camera in CAMERAS}
    return SimpleNamespace(images=images, state=np.linspace(-0.5, 0.5, 14))


class GraphStandIn:
    """What a policy could reach of a graph: an arm topic, the result topic, object poses, a reset and a stop."""

    def __init__(self, node) -> None:
        from geometry_msgs.msg import PoseStamped
        from std_srvs.srv import Trigger
        from trajectory_msgs.msg import JointTrajectory

        from robofollow_interfaces.msg import Result
        from robofollow_interfaces.srv import ResetEpisode

        self.arm: list[list[str]] = []
        self.results: list[str] = []
        self.calls: list[str] = []
        node.create_subscription(JointTrajectory, ARM_TOPIC, lambda m: self.arm.append(list(m.joint_names)), 10)
        node.create_subscription(Result, '/robofollow/result', lambda m: self.results.append(m.task_id), 10)
        pose = node.create_publisher(PoseStamped, '/robofollow/objects/yellow_block_2/pose', 10)
        node.create_timer(0.05, lambda: pose.publish(PoseStamped()))
        node.create_service(Trigger, '/robofollow/stop', lambda _q, a: self.called('stop', a))
        node.create_service(ResetEpisode, '/robofollow/sim/reset', lambda _q, a: self.called('reset', a))
        self.stop_socket = StopSocket(
            stop_socket_path(ros_domain(STAND_IN_DOMAIN)), lambda: self.called('socket', (True, ''))
        )

    def called(self, name: str, answer):
        self.calls.append(name)
        return answer


def attack(tmp_path: Path, isolation: str, attacks: list[str], **extra) -> tuple[dict, GraphStandIn, str | None]:
    """Run the attacker through ``GuardedPolicy`` (``process``: no sandbox) against a stand-in graph; its verdicts."""
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'results.jsonl').write_text('{"kept": true}\n', encoding='utf-8')
    marker = f'robofollow-attacker-{isolation}-{os.getpid()}'
    kwargs = {
        'attacks': attacks,
        'target_pid': os.getpid(),
        'secret': secret_of_this_process(),
        'out': str(out),
        'domain': ros_domain(STAND_IN_DOMAIN),
        'marker': marker,
        'stop_socket': str(stop_socket_path(ros_domain(STAND_IN_DOMAIN))),
        **extra,
    }
    factory = PolicyFactory(
        name='attacker_policy:Attacker', privileged=False, factory=None, kwargs=kwargs, isolation=isolation
    )
    sandbox = SandboxOptions(log_dir=tmp_path / 'logs', hidden=(out,))
    failure = None
    with private_node(STAND_IN_DOMAIN, 'graph_stand_in', spin=True) as (node, _):
        graph = GraphStandIn(node)
        policy = GuardedPolicy(factory, timeout=60.0, sandbox=sandbox)
        try:
            policy.predict(observation(), max_rows=50)
        except PolicyFailure as error:
            failure = error.kind
        finally:
            policy.close()
            graph.stop_socket.close()
        log = Path(policy.log_path).read_text(encoding='utf-8', errors='replace')
    found = verdicts(log)
    found['_leftovers'] = (bool(leftovers(marker)), '')
    kill_all(leftovers(marker))
    assert (out / 'results.jsonl').read_text(encoding='utf-8') == '{"kept": true}\n'
    found['_forged_file'] = ((out / f'{marker}.forged').exists(), '')
    return found, graph, failure


@pytest.mark.ros
def test_without_the_sandbox_the_attacks_succeed(tmp_path) -> None:
    """The baseline: a plain policy process (today's isolation before the sandbox) reaches all of it."""
    found, graph, failure = attack(tmp_path, 'process', GRAPH_ATTACKS)
    assert failure is None
    succeeded = {name for name, (ok, _) in found.items() if ok}
    assert succeeded >= {*GRAPH_ATTACKS, '_leftovers', '_forged_file'}, found
    assert any(names and names[0].startswith('robofollow-attacker') for names in graph.arm)
    assert graph.results and graph.calls


@pytest.mark.ros
def test_inside_the_sandbox_every_attack_fails(tmp_path) -> None:
    found, graph, failure = attack(tmp_path, 'sandbox', [*GRAPH_ATTACKS, 'flood'], ros_seconds=3.0)
    assert failure is None
    assert set(SANDBOX_STOPS) <= set(found), found
    succeeded = {name: detail for name, (ok, detail) in found.items() if ok and name != 'leave_child'}
    assert succeeded == {}, succeeded
    assert graph.arm == [] and graph.results == [] and graph.calls == []
    assert found['write_out'][1].endswith('Read-only file system'), found['write_out']


def test_a_policy_that_forks_then_dies_is_a_crash_at_once(tmp_path) -> None:
    marker = f'robofollow-forker-{os.getpid()}'
    factory = resolve_policy('attacker_policy:ForkThenDie', kwargs={'marker': marker})
    policy = GuardedPolicy(factory, timeout=120.0, sandbox=SandboxOptions(log_dir=tmp_path))
    started = time.monotonic()
    with pytest.raises(PolicyFailure) as caught:
        policy.predict(observation())
    took = time.monotonic() - started
    policy.close()
    assert caught.value.kind == 'crash' and 'exit code 3' in str(caught.value), caught.value
    assert took < 60.0, f'the crash was noticed after {took:.1f} s (its query timeout is 120 s)'
    wait_until(lambda: not leftovers(marker), timeout=10, what='the forked child to die with the sandbox')


def test_shared_memory_past_the_cap_is_a_memory_failure(tmp_path) -> None:
    factory = resolve_policy(
        'attacker_policy:Attacker', kwargs={'attacks': ['mmap'], 'mmap_mib': 1024, 'marker': 'robofollow-mmap'}
    )
    policy = GuardedPolicy(factory, timeout=60.0, memory_limit_mib=300, sandbox=SandboxOptions(log_dir=tmp_path))
    try:
        policy.predict(observation())
    finally:
        policy.close()
    found = verdicts(Path(policy.log_path).read_text(encoding='utf-8'))
    assert found['mmap'][0] is False and 'Cannot allocate memory' in found['mmap'][1], found


def test_the_evaluator_refuses_a_policy_to_sandbox_where_no_sandbox_can_be_made(monkeypatch) -> None:
    from robofollow_ros.policy.isolation import sandbox

    monkeypatch.setattr(sandbox, 'sandbox_problem', lambda: 'the policy sandbox needs bubblewrap (test)')
    with pytest.raises(PolicyError, match=r'needs bubblewrap \(test\); without the sandbox, --trusted-policy runs'):
        resolve_policy('attacker_policy:Attacker')
    assert resolve_policy('attacker_policy:Attacker', trusted=True).isolation == 'trusted'


def test_the_evaluator_is_not_dumpable_and_its_policy_sees_a_scrubbed_environment(tmp_path) -> None:
    """An in-process run, as ``robofollow eval`` (a process of its own, holding a secret in its environment)."""
    out = tmp_path / 'run'
    marker = f'robofollow-eval-{os.getpid()}'
    kwargs = {'attacks': ['environ', 'memory', 'ptrace', 'signal', 'write_out', 'leave_child', 'flood']}
    kwargs.update(secret='ROBOFOLLOW_TEST_SECRET=swordfish', out=str(out), marker=marker)
    probe = (
        'import sys\nfrom robofollow_ros.cli import main\n'
        'from robofollow_ros.policy.isolation.sandbox import is_dumpable\n'
        'code = main(sys.argv[1:])\nprint("dumpable", is_dumpable())\nraise SystemExit(code)\n'
    )
    command = [sys.executable, '-c', probe, 'eval', '--in-process', '--policy', 'attacker_policy:Attacker']
    command += ['--tasks', TASK, '--max-queries', '2', '--out', str(out), '--policy-kwargs', json.dumps(kwargs)]
    env = {**os.environ, 'ROBOFOLLOW_TEST_SECRET': 'swordfish', 'PYTHONPATH': str(Path(__file__).parent)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'dumpable False' in done.stdout
    assert marker not in done.stdout and marker not in done.stderr, 'the policy printed on the terminal'
    [record] = read_records(out / 'results.jsonl')
    assert record['isolation'] == 'sandbox' and record['policy_error'] is None
    assert record['completion_ok'] is False and record['queries'] == 2
    [log] = list((out / LOG_FOLDER).iterdir())
    found = verdicts(log.read_text(encoding='utf-8', errors='replace'))
    assert {name for name, (ok, _) in found.items() if ok and name != 'leave_child'} == set(), found
    assert log.stat().st_size < DEFAULT_LIMIT_BYTES + 1024
    assert log.read_text(encoding='utf-8', errors='replace').rstrip().endswith('more bytes of output dropped]')
    assert not leftovers(marker) and not (out / f'{marker}.forged').exists()
    assert json.loads((out / 'run.json').read_text(encoding='utf-8'))['identity']['isolation'] == 'sandbox'


@pytest.mark.ros
@pytest.mark.parametrize(
    ('graph', 'domain', 'extra'),
    [('sim', SIM_DOMAIN, {}), ('real', REAL_DOMAIN, {'robot_profile': 'aloha_ros2_control'})],
)
def test_over_the_graph_the_attacker_reaches_nothing_and_scores_what_it_did(tmp_path, graph, domain, extra) -> None:
    out = tmp_path / 'run'
    marker = f'robofollow-graph-{graph}-{os.getpid()}'
    kwargs = {'attacks': GRAPH_ATTACKS, 'out': str(out), 'domain': ros_domain(domain), 'marker': marker}
    kwargs['stop_socket'] = str(stop_socket_path(ros_domain(domain)))  # the real bridge serves it
    listened: list[list[str]] = []
    with private_node(domain, 'arm_listener', spin=True) as (node, _):
        from trajectory_msgs.msg import JointTrajectory

        node.create_subscription(JointTrajectory, ARM_TOPIC, lambda m: listened.append(list(m.joint_names)), 10)
        done = run_launch(
            domain,
            graph=graph,
            timeout=240.0,
            policy='attacker_policy:Attacker',
            policy_kwargs=json.dumps(kwargs),
            task_ids=TASK,
            max_queries='2',
            out=str(out),
            **extra,
        )
    assert done.returncode == 0, done.stdout[-4000:]
    assert marker not in done.stdout, 'the policy printed on the terminal'
    assert not any(names and names[0].startswith(marker) for names in listened), 'the policy reached an arm topic'
    [record] = read_records(out / 'results.jsonl')
    assert record['isolation'] == 'sandbox' and record['policy_error'] is None, record.get('policy_error')
    assert record['completion_ok'] is False and record['intent_score'] < 1.0
    logs = list((out / LOG_FOLDER).iterdir())
    found = verdicts('\n'.join(log.read_text(encoding='utf-8', errors='replace') for log in logs))
    assert set(GRAPH_ATTACKS) <= set(found), found
    assert {name for name, (ok, _) in found.items() if ok and name != 'leave_child'} == set(), found
    assert not leftovers(marker) and not (out / f'{marker}.forged').exists()


def test_the_sandboxed_policy_reaches_the_one_address_it_was_given_and_no_other(tmp_path) -> None:
    import socket

    allowed = socket.create_server(('127.0.0.1', 0))
    other = socket.create_server(('127.0.0.1', 0))
    port, other_port = allowed.getsockname()[1], other.getsockname()[1]

    def answer() -> None:
        connection, _ = allowed.accept()
        with connection:
            connection.sendall(connection.recv(64).upper())

    threading.Thread(target=answer, daemon=True).start()
    kwargs = {'port': port, 'other_port': other_port}
    factory = resolve_policy('policy_doubles:NetworkProbe', kwargs=kwargs)
    sandbox = SandboxOptions(log_dir=tmp_path, network=f'127.0.0.1:{port}')
    policy = GuardedPolicy(factory, timeout=60.0, sandbox=sandbox)
    try:
        policy.predict(observation())
    finally:
        policy.close()
        allowed.close()
        other.close()
    log = Path(policy.log_path).read_text(encoding='utf-8')
    assert f'allowed 127.0.0.1:{port} answered HELLO' in log, log
    assert f'other 127.0.0.1:{other_port} refused' in log, log


def test_a_run_with_a_network_opt_in_says_so_in_every_record_run_json_and_report(tmp_path) -> None:
    from robofollow_ros.cli import main

    out = tmp_path / 'run'
    args = ['eval', '--in-process', '--policy', 'policy_doubles:HoldingPolicy', '--tasks', TASK, '--quiet']
    assert main([*args, '--out', str(out), '--policy-network', '127.0.0.1:9']) == 0
    [record] = read_records(out / 'results.jsonl')
    assert record['isolation'] == 'sandbox' and record['policy_network'] == '127.0.0.1:9'
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    assert run['identity']['policy_network'] == '127.0.0.1:9'
    assert main(['report', str(out), '--out', str(out / 'report'), '--baseline', 'none']) == 0
    title = (out / 'report' / 'summary.md').read_text(encoding='utf-8').splitlines()[0]
    assert '(not privileged; sandboxed process; network to 127.0.0.1:9)' in title, title
    assert main([*args, '--out', str(out)]) == 2, 'a run without the opt-in is another run'
