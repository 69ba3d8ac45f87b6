"""``evaluator`` node: runs an evaluation suite over the graph and writes ``results.jsonl`` and ``run.json``.

For each trial not yet in the results file: publish the ``EpisodeSpec``, reset the sim, send the instruction,
wait for the referee's result (handshake: ``graph/protocol.py``). Planning, resuming, the results file, progress
and ``run.json`` are the in-process suite's own (``run_suite`` with ``GraphTrials``). Exits when the suite is
done, so the launcher shuts the graph down.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import String
from std_srvs.srv import Trigger

from robofollow_ros import topics
from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.constants import DEFAULT_VARIANT
from robofollow_ros.benchmark.parsing import parse_variant
from robofollow_ros.benchmark.registry import parse_level, parse_scene
from robofollow_ros.errors import GraphError, RoboFollowError
from robofollow_ros.evaluation.episode import EpisodeLimits
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.guard import DEFAULT_QUERY_TIMEOUT
from robofollow_ros.evaluation.identity import RunIdentity
from robofollow_ros.evaluation.recording import EPISODES_DIR, episode_stem
from robofollow_ros.evaluation.records import Trial, bookkeeping
from robofollow_ros.evaluation.runner import TrialResult
from robofollow_ros.evaluation.suite import SuiteOptions, run_suite
from robofollow_ros.nodes.sim import pose_topics
from robofollow_ros.policy.factory import resolve_policy
from robofollow_ros.ros import qos
from robofollow_ros.ros.runtime import param, spin, wait_for
from robofollow_ros.sim.robots import DEFAULT_ROBOT, get_robot_spec
from robofollow_ros.state_layout import CAMERAS

MATCH_SETTLE_SECONDS = 0.5
"""Discovery seen from here does not mean the sim's writers have matched every reader yet: give them a moment."""
RESET_ATTEMPT_SECONDS = 15.0
"""How long one call of the reset service may stay unanswered before it is made again."""
LIVE_ONLY = ('episode_id', 'end_stamp_ns', 'policy_error', 'error_kind', 'queries', 'executed_rows')


class EvaluatorNode(Node):
    """Publishes episodes, calls the reset service and collects results."""

    def __init__(self) -> None:
        super().__init__('evaluator')
        self.options = SuiteOptions(
            out=Path(str(param(self, 'out', 'runs/graph'))),
            policy=str(param(self, 'policy', 'expert')),
            policy_kwargs=json.loads(str(param(self, 'policy_kwargs', '{}')) or '{}'),
            scenes=[parse_scene(s) for s in _items(param(self, 'scenes', ''))] or None,
            levels=[parse_level(level) for level in _items(param(self, 'levels', ''))] or None,
            pattern=str(param(self, 'tasks', '')) or None,
            task_ids=_items(param(self, 'task_ids', '')) or None,
            rounds=int(param(self, 'rounds', 1)),
            first_round=int(param(self, 'first_round', 1)),
            variant=parse_variant(str(param(self, 'variant', DEFAULT_VARIANT))),
            record=str(param(self, 'record', 'none')),  # type: ignore[arg-type]
            limits=EpisodeLimits(max_queries=int(param(self, 'max_queries', 10))),
            query_timeout=float(param(self, 'query_timeout', DEFAULT_QUERY_TIMEOUT)),
            force_new=bool(param(self, 'force_new', False)),
            robot=get_robot_spec(str(param(self, 'robot', DEFAULT_ROBOT))).name,
            retry_errors=bool(param(self, 'retry_errors', False)),
        )
        self.timeout = float(param(self, 'timeout', 600.0))
        self.startup_timeout = float(param(self, 'startup_timeout', 60.0))
        self.progress = bool(param(self, 'progress', True))
        self.results: dict[str, dict[str, Any]] = {}
        self.condition = threading.Condition()
        self.episode_pub = self.create_publisher(String, topics.EPISODE, qos.LATCHED)
        self.instruction_pub = self.create_publisher(String, topics.INSTRUCTION, qos.COMMANDS)
        self.reset_client = self.create_client(Trigger, topics.SIM_RESET)
        self.create_subscription(String, topics.RESULT, self.on_result, qos.EVENTS)

    def on_result(self, message: String) -> None:
        try:
            record = json.loads(message.data)
            episode_id = str(record['episode_id'])
        except (ValueError, KeyError, TypeError) as error:
            self.get_logger().error(f'ignored {topics.RESULT}: {error}')
            return
        with self.condition:
            self.results[episode_id] = record
            self.condition.notify_all()

    def wait_for_graph(self) -> None:
        """Block until the sim's reset service, the bridge and the referee are there."""
        wait_for(
            self.reset_client.service_is_ready, timeout=self.startup_timeout, what=f'the {topics.SIM_RESET} service'
        )
        wait_for(
            lambda: self.instruction_pub.get_subscription_count() > 0,
            timeout=self.startup_timeout,
            what=f'a policy bridge on {topics.INSTRUCTION}',
        )
        wait_for(lambda: self.count_publishers(topics.RESULT) > 0, timeout=self.startup_timeout, what='a referee')
        listeners = 3 + (self.options.record == 'bag')
        wait_for(
            lambda: self.episode_pub.get_subscription_count() >= listeners,
            timeout=self.startup_timeout,
            what=f'the sim, bridge, referee{" and recorder" if listeners > 3 else ""} on {topics.EPISODE}',
        )
        recording = int(self.options.record == 'bag')
        factory = resolve_policy(self.options.policy)
        pose_readers = 1 + recording + int(factory.privileged)
        expected = {topics.JOINT_STATES: 2 + recording}
        expected.update(dict.fromkeys(pose_topics(), pose_readers))
        if isinstance(factory.factory, type) and getattr(factory.factory, 'needs_images', True):
            expected.update({topics.image_topic(camera): 1 for camera in CAMERAS})
        wait_for(
            lambda: all(self.count_subscribers(topic) >= count for topic, count in expected.items()),
            timeout=self.startup_timeout,
            what='the readers of every joint-state and pose topic',
        )
        time.sleep(MATCH_SETTLE_SECONDS)

    def reset(self, spec: EpisodeSpec, *, deadline: float) -> None:
        """Call the reset service until the sim has reset to ``spec``.

        A call unanswered after ``RESET_ATTEMPT_SECONDS`` is abandoned and made again: Fast DDS drops a response
        whose reader the service has not matched yet ("failed to send response"), and resetting twice to the
        same episode is harmless (every node follows the latest reset of an episode).
        """
        while True:
            future = self.reset_client.call_async(Trigger.Request())
            attempt_end = min(deadline, time.monotonic() + RESET_ATTEMPT_SECONDS)
            try:
                wait_for(future.done, timeout=max(0.0, attempt_end - time.monotonic()), what=f'{topics.SIM_RESET}')
            except GraphError:
                self.reset_client.remove_pending_request(future)
                if time.monotonic() >= deadline or not rclpy.ok():
                    raise
                self.get_logger().warning(
                    f'{topics.SIM_RESET} unanswered for {RESET_ATTEMPT_SECONDS:g} s: calling again'
                )
                continue
            response = future.result()
            if response is not None and response.success and response.message == spec.episode_id:
                return
            if (
                response is not None
                and not response.success
                and response.message != f'no {topics.EPISODE} received yet'
            ):
                raise GraphError(f'the sim could not reset to {spec.task_id}: {response.message}')
            if time.monotonic() > deadline:
                raise GraphError(f'the sim did not reset to {spec.task_id} in time')
            time.sleep(0.02)

    def run_episode(self, spec: EpisodeSpec) -> dict[str, Any]:
        """One episode over the graph; its result record."""
        deadline = time.monotonic() + self.timeout
        self.episode_pub.publish(String(data=spec.to_json()))
        self.reset(spec, deadline=deadline)
        self.instruction_pub.publish(String(data=spec.instruction))
        wait_for(
            lambda: spec.episode_id in self.results,
            timeout=max(0.0, deadline - time.monotonic()),
            what=f'the result of {spec.task_id}',
        )
        with self.condition:
            return self.results.pop(spec.episode_id)


class GraphTrials:
    """Runs the suite's trials over the ROS graph: ``run_suite``'s executor for the ``ros-graph`` runtime."""

    runtime = 'ros-graph'

    def __init__(self, node: EvaluatorNode) -> None:
        self.node = node
        self.problems: list[str] = []
        self.options: SuiteOptions | None = None
        self.identity: RunIdentity | None = None

    def __call__(self, options: SuiteOptions, *, identity: RunIdentity) -> GraphTrials:
        """Bind the run (``run_suite`` calls this once, like it builds any executor)."""
        self.options, self.identity = options, identity
        return self

    def results(self, todo: Sequence[Trial]) -> Generator[TrialResult, None, None]:
        """Publish, reset, instruct and collect each trial; the record is completed as in-process."""
        options, identity = self.options, self.identity
        assert options is not None and identity is not None
        for trial in todo:
            layout = registry.layout_of(trial.task)
            spec = EpisodeSpec.for_trial(
                trial.task, seed=trial.seed, round=trial.round, variant=options.variant, layout=layout.name
            )
            started = time.perf_counter()
            live = self.node.run_episode(spec)
            wall = time.perf_counter() - started
            record = {key: value for key, value in live.items() if key not in LIVE_ONLY}
            record.update(
                bookkeeping(trial, identity=identity, policy_error=live['policy_error'], error_kind=live['error_kind'])
            )
            record.update(
                {'queries': live['queries'], 'executed_rows': live['executed_rows'], 'wall_seconds': round(wall, 3)}
            )
            if options.record == 'bag':
                record['episode_file'] = str(Path(EPISODES_DIR) / episode_stem(trial.task.task_id, trial.round))
            yield TrialResult(key=trial.key, record=record)


def _items(value: object) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(item) for item in value]
    return [item.strip() for item in str(value).split(',') if item.strip()]


def main(args: list[str] | None = None) -> int:
    """Run the suite over the graph; exit 0 when it is complete, 2 on an error."""
    rclpy.init(args=args, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    # Both signals interrupt the suite in the main thread, so run.json says "interrupted" (run_suite turns
    # SIGTERM into RunInterrupted while it runs); rclpy is shut down on the way out.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        node = EvaluatorNode()
    except (RoboFollowError, ValueError) as error:
        print(f'error: {error}', file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    spinner = threading.Thread(target=spin, args=(executor,), daemon=True)
    spinner.start()
    code = 0
    try:
        node.wait_for_graph()
        records = run_suite(node.options, progress=node.progress, executor=GraphTrials(node))
        completed = sum(bool(record.get('completion_ok')) for record in records)
        node.get_logger().info(f'{len(records)} trials in {node.options.out}; completed {completed}/{len(records)}')
    except RoboFollowError as error:
        print(f'error: {error}', file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        code = 130
    finally:
        rclpy.try_shutdown()
        spinner.join(timeout=5.0)
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
    return code


if __name__ == '__main__':
    raise SystemExit(main())
