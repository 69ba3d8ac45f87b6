"""The real-time bridge's stops and exits (issue 29).

A stop with the real bridge over fake hardware: the stopped trial is recorded void, the arms stay stopped until the
operator says ready (which releases the stop), then go home, and the run goes on to complete the trial again (before
the release existed, the home move after a stop was refused and the whole run ended in error). A bridge whose
episode thread fails exits instead of staying up, and a profile without kinematics is refused however the bridge is
started.
"""

from __future__ import annotations

import json
import time

import pytest
from graph_helpers import finish, private_node, read_records, start_launch, wait_until

from robofollow_ros import topics

pytestmark = pytest.mark.ros

DOMAIN = 49
TASK = 'L0_pickup_yellow_block_2'


def call(node, executor, service: str, *, timeout: float = 30.0):
    """Call a std_srvs/Trigger service once it is there; its answer."""
    from std_srvs.srv import Trigger

    client = node.create_client(Trigger, '/' + service)
    wait_until(client.service_is_ready, timeout=timeout, what=service)
    future = client.call_async(Trigger.Request())
    wait_until(future.done, timeout=timeout, what=f'the answer of {service}')
    node.destroy_client(client)
    return future.result()


def test_a_stopped_trial_is_void_the_operator_releases_the_stop_and_the_run_completes(tmp_path) -> None:
    from robofollow_interfaces.msg import SimStatus as SimStatusMessage

    out = tmp_path / 'run'
    resets: list[str] = []
    with private_node(DOMAIN, 'operator_console', spin=True) as (node, executor):
        from robofollow_ros.ros import qos

        node.create_subscription(
            SimStatusMessage, '/' + topics.SIM_STATUS, lambda m: resets.append(m.episode_id), qos.EVENTS
        )
        process = start_launch(
            DOMAIN,
            graph='real',
            robot_profile='aloha_ros2_control',
            policy='policy_doubles:HoldingPolicy',
            policy_kwargs=json.dumps({'rows': 50}),  # 3 s of rows per query: the stop lands mid-trial
            task_ids=TASK,
            max_queries='3',
            out=str(out),
        )
        wait_until(lambda: resets, timeout=180, what='the first trial to start')
        time.sleep(1.0)  # mid-trial: the policy's chunks are streaming
        stopped = call(node, executor, topics.STOP)
        assert stopped.success, stopped.message
        # The evaluator now waits for the operator before it moves the arms again: ready releases the stop.
        wait_until(lambda: call(node, executor, topics.READY).success, timeout=120, what='the evaluator to ask')
        output = finish(process, timeout=240)
    assert process.returncode == 0, output[-4000:]
    assert 'the arms are stopped' in output
    void, replayed = read_records(out / 'results.jsonl')
    assert void['task_id'] == replayed['task_id'] == TASK
    assert void['error_kind'] == 'stopped' and void.get('void'), void
    assert replayed['policy_error'] is None and not replayed.get('void')
    run = json.loads((out / 'run.json').read_text(encoding='utf-8'))
    assert run['status'] == 'complete', run


def test_a_bridge_whose_episode_thread_fails_exits_non_zero_instead_of_staying_up(tmp_path) -> None:
    """The zombie bridge of issue 29: an exception other than the node going away used to end the episode thread
    silently while the process stayed up."""
    import subprocess
    import sys

    from graph_helpers import ROOT, graph_env

    inject = (
        'import robofollow_ros.nodes.policy_bridge as bridge\n'
        'def broken(self):\n'
        "    raise RuntimeError('injected fault')\n"
        'bridge.PolicyBridge.serve_instructions = broken\n'
        'raise SystemExit(bridge.main())\n'
    )
    done = subprocess.run(
        [sys.executable, '-c', inject, '--ros-args', '-p', 'policy:=hold'],
        env=graph_env(DOMAIN),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert 'the episode thread failed: RuntimeError: injected fault; holding the arms and exiting' in done.stderr


def test_a_bridge_started_on_its_own_refuses_a_profile_without_kinematics(tmp_path) -> None:
    """``ros2 run`` (or any launch but ours) once got a warning and a bridge that drove the arms without the
    profile's workspace box."""
    import subprocess
    import sys

    from graph_helpers import ROOT, graph_env, profile_without_robot

    command = [sys.executable, '-m', 'robofollow_ros.nodes.policy_bridge', '--ros-args', '-p', 'runtime:=real']
    command += ['-p', f'robot_profile:={profile_without_robot(tmp_path)}', '-p', 'policy:=hold']
    done = subprocess.run(
        command, env=graph_env(DOMAIN), cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert "robot profile 'no_robot' names no robot description: without kinematics" in done.stderr


def test_the_safety_layers_interventions_are_counted_in_run_json_and_the_end_of_run_line() -> None:
    from robofollow_ros.evaluation.status import counts_line, trial_counts
    from robofollow_ros.ros.protocol import EpisodeEnd

    end = EpisodeEnd('e1', end_stamp_ns=1, queries=3, executed_rows=20, interventions=(('too_fast', 2),))
    assert EpisodeEnd.from_message(end.to_message()) == end
    assert 'interventions' not in EpisodeEnd('e2', end_stamp_ns=1, queries=1, executed_rows=5).bookkeeping()
    records = [
        {'task_id': 'a', 'completion_ok': True, **end.bookkeeping()},
        {'task_id': 'b', 'completion_ok': False, 'interventions': {'too_fast': 1, 'policy_silent': 1}},
        {'task_id': 'c', 'completion_ok': False},
    ]
    counts = trial_counts(records)
    assert counts['interventions_by_kind'] == {'policy_silent': 1, 'too_fast': 3}
    assert counts['trials_with_interventions'] == 2
    assert counts_line(counts).endswith('; the safety layer stepped in on 2 (policy_silent 1, too_fast 3)')
    assert 'interventions_by_kind' not in trial_counts(records[2:])
