"""``policy_bridge`` node: runs the episode loop of a policy over the graph.

An instruction on ``/robofollow/instruction`` starts an episode of the current ``/robofollow/episode``. A worker
thread (never the executor's) runs ``run_episode`` on a ``RosEnvironment``: it assembles each observation (three
images + 14-D state) from the topics, queries the policy with a timeout, checks every chunk (shape, finite, joint
limits, per-row step) and publishes it per arm as a JointTrajectoryController takes it, with a ``ChunkTicket`` for
the sim (``ros/protocol.py``). A bad chunk is never forwarded: the arms are told to hold (one point at the latest
measured position, never an empty trajectory) and the episode ends with the reason in ``/robofollow/episode_end``.

Parameter ``runtime``: ``sim`` (the synchronous handshake with the sim node, above) or ``real`` with
``robot_profile``: the same loop in wall-clock time over the profile's drivers, every chunk through the safety
filter, a dead-man, ``/robofollow/stop`` and ``/robofollow/home`` (``realcell/bridge.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import queue
import threading
from pathlib import Path

import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped
from rclpy._rclpy_pybind11 import InvalidHandle, RCLError
from rclpy.node import Node
from rclpy.publisher import Publisher
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from robofollow_ros import topics
from robofollow_ros.bags.cdr import decode_joint_state, default_typestore, warm_decoders
from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.constants import ACTIONS_PER_QUERY, MAX_QUERIES
from robofollow_ros.benchmark.types import ARMS, Arm
from robofollow_ros.errors import GraphError, RoboFollowError
from robofollow_ros.evaluation.episode import EpisodeLimits, run_episode
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.guard import DEFAULT_POLICY_MEMORY_MIB, DEFAULT_QUERY_TIMEOUT, PolicyFailure
from robofollow_ros.evaluation.limited_policy import LimitedPolicy
from robofollow_ros.policy.factory import parse_policy_kwargs, resolve_policy
from robofollow_ros.policy.isolation.output_log import LOG_FOLDER
from robofollow_ros.policy.isolation.sandbox import SandboxOptions, check_sandbox_options, protect_this_process
from robofollow_ros.realcell.bridge import RUNTIMES, CellBridge
from robofollow_ros.realcell.environment import WatchedPolicy
from robofollow_ros.robot.description import load_robot
from robofollow_ros.robot.specs import DEFAULT_ROBOT
from robofollow_ros.ros import qos
from robofollow_ros.ros.environment import RosEnvironment
from robofollow_ros.ros.instruction_episode import episode_for_instruction
from robofollow_ros.ros.matching import every_reader_matched
from robofollow_ros.ros.messages import from_time, image_array
from robofollow_ros.ros.observation_cache import ObservationCache
from robofollow_ros.ros.on_demand_readers import NEWEST, VOLATILE_NEWEST, OnDemandReaders
from robofollow_ros.ros.protocol import (
    ChunkTicket,
    ChunkTicketMessage,
    EpisodeEnd,
    EpisodeEndMessage,
    EpisodeSpecMessage,
    SimStatus,
    SimStatusMessage,
)
from robofollow_ros.ros.runtime import MIN_TIMEOUT, param, read_episode, read_report, remember, run_node, wait_for
from robofollow_ros.ros.shutdown import STOP
from robofollow_ros.ros.trajectory_cdr import (
    encode_trajectory,
    row_times_ns,
    trajectory_digest,
    warm_trajectory_codec,
)
from robofollow_ros.safety.chunk_limits import DEFAULT_MAX_ROW_STEP, ChunkLimits
from robofollow_ros.sim.constants import ROW_SECONDS
from robofollow_ros.state_layout import CAMERAS

STOP_JOIN_SECONDS = 2.0
MAX_PENDING_INSTRUCTIONS = 4
"""Instructions the episode thread has not taken yet, at most (``on_instruction``)."""


def put_newest(requests: queue.Queue[str | None], item: str | None) -> list[str | None]:
    """Put ``item`` into the bounded ``requests``; when it is full, the oldest go first (an instruction starts the
    episode of the latest reset, so only the newest can still find one). Returns what was dropped."""
    dropped: list[str | None] = []
    while True:
        try:
            requests.put_nowait(item)
            return dropped
        except queue.Full:
            with contextlib.suppress(queue.Empty):
                dropped.append(requests.get_nowait())


def trajectory_publishers(node: Node) -> dict[Arm, Publisher]:
    """The bridge's writers of the arms' JointTrajectory commands (``qos.ARM_COMMANDS``: never replayed)."""
    return {
        arm: node.create_publisher(JointTrajectory, topics.arm_trajectory_topic(arm), qos.ARM_COMMANDS) for arm in ARMS
    }


def ticket_publisher(node: Node) -> Publisher:
    """The bridge's writer of ``ChunkTicket`` (``qos.ARM_COMMANDS`` too: it belongs to commands never replayed)."""
    return node.create_publisher(ChunkTicketMessage, topics.SIM_CHUNK, qos.ARM_COMMANDS)


class PolicyBridge(Node):
    """Connects one policy to the cell."""

    def __init__(self) -> None:
        super().__init__('policy_bridge')
        name = str(param(self, 'policy', 'expert', description='policy name or module:factory'))
        kwargs = parse_policy_kwargs(
            str(param(self, 'policy_kwargs', '{}', description='JSON object of keyword arguments for the policy'))
        )
        # The suite's default (robofollow eval --query-timeout), so that `ros2 run` and a launch agree.
        self.timeout = float(
            param(
                self,
                'timeout',
                DEFAULT_QUERY_TIMEOUT,
                description='seconds one call into the policy may take',
                minimum=MIN_TIMEOUT,
            )
        )
        trusted = bool(
            param(self, 'trusted_policy', False, description='run a custom policy in this process (no sandbox)')
        )
        self.memory_limit = int(
            param(
                self,
                'policy_memory_limit',
                DEFAULT_POLICY_MEMORY_MIB,
                description='MiB a custom policy process may use (0: no limit)',
                minimum=0,
            )
        )
        self.sandbox = self.sandbox_options()
        self.sim_timeout = float(
            param(
                self,
                'sim_timeout',
                qos.SIM_TIMEOUT_SECONDS,
                description='seconds to wait for the sim to complete an observation',
                minimum=MIN_TIMEOUT,
            )
        )
        self.limits = EpisodeLimits(
            max_queries=int(
                param(self, 'max_queries', MAX_QUERIES, description='policy queries per episode', minimum=1)
            ),
            actions_per_query=int(
                param(
                    self, 'actions_per_query', ACTIONS_PER_QUERY, description='rows executed of each chunk', minimum=1
                )
            ),
        )
        self.runtime = str(param(self, 'runtime', 'sim', description='sim (synchronous) or real (wall clock)'))
        if self.runtime not in RUNTIMES:
            raise GraphError(f'parameter runtime of node policy_bridge: must be one of {", ".join(RUNTIMES)}')
        profile_name = str(param(self, 'robot_profile', '', description='robot profile of the real cell'))
        if self.runtime == 'real' and not profile_name:
            raise GraphError('parameter robot_profile of node policy_bridge: runtime real needs a robot profile')
        self.real = CellBridge.from_name(self, profile_name) if self.runtime == 'real' else None
        robot_name = str(param(self, 'robot', DEFAULT_ROBOT, description='robot of the cell (robot.specs)'))
        if self.real is not None and self.real.profile.robot is not None:
            robot_name = self.real.profile.robot
        robot = load_robot(robot_name)
        self.joint_layout = robot.joint_layout
        row_step = param(
            self,
            'max_row_step',
            DEFAULT_MAX_ROW_STEP,
            description='largest joint step between two rows, rad',
            minimum=0.001,
            maximum=6.3,
        )
        self.chunk_limits = (
            ChunkLimits.for_robot(robot.name, max_row_step=float(row_step))
            if self.real is None
            else self.real.chunk_limits(robot.name, max_row_step=float(row_step))
        )
        # At start-up rather than in the first episode: the typestore, its decoders and the task index (~80 ms).
        warm_decoders()
        warm_trajectory_codec()
        registry.eval_tasks()
        python = str(param(self, 'policy_python', '', description='the Python a sandboxed policy runs under'))
        self.factory = resolve_policy(name, kwargs=kwargs, trusted=trusted, python=python or None)
        self.policy = self.build_policy()
        self.privileged = self.policy.privileged
        if self.privileged:
            # The built-in reference policies plan on a robot-only model: compiled now, not in the first query.
            from robofollow_ros.sim.expert.policy import robot_motion_planner

            robot_motion_planner(robot.name)
        self.images = self.policy.needs_images
        self.cache = ObservationCache()
        self.specs: dict[str, EpisodeSpec] = {}
        self.requests: queue.Queue[str | None] = queue.Queue(maxsize=MAX_PENDING_INSTRUCTIONS)
        self.ran: set[str] = set()

        # Real mode writes the profile's command topics through its driver (CellBridge), never these.
        self.trajectory_pubs = trajectory_publishers(self) if self.real is None else {}
        self.ticket_pub = ticket_publisher(self) if self.real is None else None
        self.typestore = default_typestore()
        self.end_pub = self.create_publisher(EpisodeEndMessage, topics.EPISODE_END, qos.EVENTS)
        self.create_subscription(EpisodeSpecMessage, topics.EPISODE, self.on_episode, qos.LATCHED_READER)
        self.create_subscription(String, topics.INSTRUCTION, self.on_instruction, qos.COMMANDS)
        self.create_subscription(SimStatusMessage, topics.SIM_STATUS, self.on_status, qos.EVENTS)
        # Real mode reads the measured joints from the profile's driver topics (CellBridge), not /joint_states.
        per_row: dict[str, type] = {topics.JOINT_STATES: JointState} if self.real is None else {}
        if self.privileged:
            per_row.update(dict.fromkeys(topics.pose_topics(), PoseStamped))
        pose_source = str(
            param(self, 'pose_source', 'sim', description='where object poses come from (mocap: best-effort readers)')
        )
        profile = NEWEST if self.real is None else VOLATILE_NEWEST
        self.samples = OnDemandReaders(
            self,
            per_row,
            store=self.on_sample,
            profile=profile,
            profiles=qos.object_pose_readers(profile, pose_source=pose_source),
        )
        self.cache.sources.append(self.samples.drain)
        if self.images:
            for camera in CAMERAS:
                self.create_subscription(
                    Image, topics.image_topic(camera), lambda m, c=camera: self.on_image(c, m), qos.SENSOR
                )
        self.worker = threading.Thread(target=self.work, name='episodes', daemon=True)
        self.worker.start()
        self.get_logger().info(
            f'policy {name!r} ready (images: {self.images}, privileged: {self.privileged}, '
            f'isolation: {self.factory.isolation})'
        )

    def sandbox_options(self) -> SandboxOptions:
        """The sandbox of a custom policy: its output logged in ``out/policy-logs``, ``out`` out of its sight.

        Raises:
            PolicyError: a scratch folder that is missing or lies in ``out``, a network address not ``host:port``.
        """
        out = Path(
            str(param(self, 'out', '', description='run folder: policy logs go there, the policy never sees it'))
        )
        scratch = str(param(self, 'policy_scratch', '', description='folder the sandboxed policy may write'))
        network = str(param(self, 'policy_network', '', description='host:port the sandboxed policy may reach'))
        hidden: tuple[Path, ...] = ()
        if str(out) not in ('', '.'):
            out.mkdir(parents=True, exist_ok=True)
            hidden = (out,)
        options = SandboxOptions(
            log_dir=out / LOG_FOLDER if hidden else None,
            hidden=hidden,
            scratch=Path(scratch) if scratch else None,
            network=network or None,
        )
        check_sandbox_options(options)
        return options

    def build_policy(self) -> LimitedPolicy:
        """A fresh policy instance (at start, and after an instance was abandoned on a timeout)."""
        kind = LimitedPolicy if self.real is None else WatchedPolicy
        return kind(
            self.factory,
            limits=self.chunk_limits,
            timeout=self.timeout,
            memory_limit_mib=self.memory_limit,
            sandbox=self.sandbox,
        )

    def on_episode(self, message: EpisodeSpecMessage) -> None:
        spec = read_episode(self, message)
        if spec is None:
            return
        with self.cache.condition:
            remember(self.specs, spec.episode_id, spec)
            self.cache.condition.notify_all()

    def on_instruction(self, message: String) -> None:
        self.request(message.data)

    def request(self, instruction: str | None) -> None:
        """Queue an instruction (None: stop) for the episode thread (``put_newest``)."""
        for dropped in put_newest(self.requests, instruction):
            self.get_logger().warning(f'instructions pile up: {dropped!r} dropped, the newest kept')

    def on_status(self, message: SimStatusMessage) -> None:
        status = read_report(self, SimStatus.from_message, message, topic=topics.SIM_STATUS)
        if status is not None:
            self.cache.add_status(status)

    def on_sample(self, topic: str, stamp_ns: int, data: bytes) -> None:
        if topic == topics.JOINT_STATES:
            self.cache.add_state(stamp_ns, data)
        else:
            self.cache.add_pose(topic, stamp_ns, data)

    def on_image(self, camera: str, message: Image) -> None:
        try:
            pixels = image_array(message)
        except RoboFollowError as error:
            self.get_logger().error(f'ignored {camera} image: {error}', throttle_duration_sec=5.0)
            return
        self.cache.add_image(camera, from_time(message.header.stamp), pixels)

    def publish_chunk(self, chunk: np.ndarray, stamp_ns: int, *, episode_id: str, hold: bool = False) -> None:
        """Both arms' trajectories (``header.stamp`` zero, one point per row, ``ROW_SECONDS`` apart), encoded first
        and then published back to back, then the ``ChunkTicket`` saying they answer the observation stamped
        ``stamp_ns``, so that the sim (which executes once it has all three) takes them in one wake-up."""
        layout, times_ns = self.joint_layout, row_times_ns(len(chunk), ROW_SECONDS)
        commands = {arm: (layout.command_joints(arm), layout.arm_command(chunk, arm)) for arm in ARMS}
        encoded = {arm: encode_trajectory(*command, row_seconds=ROW_SECONDS) for arm, command in commands.items()}
        ticket = ChunkTicket(
            episode_id=episode_id,
            for_stamp_ns=stamp_ns,
            rows=len(chunk),
            digests={arm: trajectory_digest(*command, times_ns) for arm, command in commands.items()},
            hold=hold,
        ).to_message()
        assert self.ticket_pub is not None, 'the simulated runtime only'
        writers = [*self.trajectory_pubs.values(), self.ticket_pub]
        if not hold and not every_reader_matched(self, writers, at_least=1):
            # Commands are not replayed to a reader that matches late (qos.ARM_COMMANDS): wait for every reader the
            # graph lists, the sim's among them (another reader alone, e.g. a recorder's, once let the first chunk
            # go out before the sim's reader had matched), then settle for one; a hold, sent after a failure, goes
            # out regardless.
            with contextlib.suppress(GraphError):
                wait_for(
                    lambda: every_reader_matched(self, writers, at_least=1),
                    timeout=qos.MATCH_TIMEOUT_SECONDS,
                    what='every reader of the arm trajectory and chunk ticket topics',
                    poll=0.01,
                )
            wait_for(
                lambda: all(p.get_subscription_count() > 0 for p in writers),
                timeout=self.sim_timeout,
                what='the sim on the arm trajectory and chunk ticket topics',
                poll=0.01,
            )
        for arm, data in encoded.items():
            self.trajectory_pubs[arm].publish(data)
        self.ticket_pub.publish(ticket)

    def publish_hold(self, episode_id: str, stamp_ns: int) -> None:
        """Tell the arms to hold where they are: one point at the latest measured joint state, due one row period
        from now (``safety.command_filter.hold_command``'s convention); nothing when no joint state is usable."""
        self.cache.refresh({topics.JOINT_STATES})
        with self.cache.condition:
            states = self.cache.states.items
            data = states[max(states)] if states else None
        if data is None:
            self.get_logger().error(f'no {topics.JOINT_STATES} to hold the arms at: no hold sent')
            return
        try:
            sample = decode_joint_state(self.typestore, data, topic=topics.JOINT_STATES)
            state = self.joint_layout.state_from_joint_state(sample.names, sample.position)
        except RoboFollowError as error:
            self.get_logger().error(f'cannot hold the arms at the latest {topics.JOINT_STATES}: {error}')
            return
        self.publish_chunk(np.asarray(state, dtype=np.float64)[None, :], stamp_ns, episode_id=episode_id, hold=True)

    def work(self) -> None:
        """The episode thread: serves instructions until the node stops. Any failure of its own ends the process
        (exit code 1) after holding the arms: a bridge that cannot run episodes must not stay up looking alive."""
        try:
            self.serve_instructions()
        except (InvalidHandle, RCLError):
            if not STOP.is_set():
                self.fail('the node went away under an episode')
        except Exception as error:  # a bug of ours: hold, say so, exit
            self.fail(f'the episode thread failed: {type(error).__name__}: {error}')

    def fail(self, reason: str) -> None:
        """Hold the arms (real mode), log ``reason`` and end the process with exit code 1."""
        self.get_logger().fatal(f'{reason}; holding the arms and exiting')
        if self.real is not None:
            with contextlib.suppress(Exception):  # the process ends either way; the hold is best effort
                self.real.motion.halt(what='bridge failure')
        self.exit_code = 1
        rclpy.try_shutdown(context=self.context)

    def serve_instructions(self) -> None:
        """Run an episode for each instruction, until ``None`` arrives: the episode the sim was last reset to, if
        its spec carries that instruction (``episode_for_instruction``)."""
        while True:
            instruction = self.requests.get()
            if instruction is None or STOP.is_set():
                return
            match = episode_for_instruction(
                instruction,
                cache=self.cache,
                specs=self.specs,
                ran=self.ran,
                timeout=self.sim_timeout,
                superseded=lambda: not self.requests.empty() or STOP.is_set(),
            )
            if STOP.is_set():
                return
            if match.spec is None:
                self.get_logger().error(str(match.ignored))
                continue
            spec = match.spec
            self.ran.add(spec.episode_id)
            self.get_logger().debug(f'episode {spec.task_id} r{spec.round} ({spec.episode_id})')
            self.run(spec, instruction)

    def run(self, spec: EpisodeSpec, instruction: str) -> None:
        if self.real is not None:
            self.run_real(spec, instruction)
            return
        env = RosEnvironment(
            self.cache,
            functools.partial(self.publish_chunk, episode_id=spec.episode_id),
            joints=self.joint_layout,
            episode_id=spec.episode_id,
            privileged=self.privileged,
            timeout=self.sim_timeout,
            writers=self.count_publishers,
        )
        error: str | None = None
        kind: str | None = None
        try:
            if self.policy.abandoned:
                self.policy = self.build_policy()
            task, layout = spec.resolve()
            task = dataclasses.replace(task, instruction=instruction)
            outcome = run_episode(env, self.policy, task, seed=spec.seed, layout=layout, limits=self.limits)
            error, kind = outcome.policy_error, outcome.error_kind
        except PolicyFailure as failure:
            error, kind = str(failure), failure.kind
        except RoboFollowError as failure:
            if STOP.is_set():
                return  # an interrupted episode has no end: the run resumes it
            error, kind = f'graph: {failure}', 'graph'
        if STOP.is_set():
            return
        if error is not None:
            self.get_logger().error(f'{spec.task_id}: {error}; holding the arms')
            self.publish_hold(spec.episode_id, env.stamp_ns)
        overheads = [
            round(1000.0 * (total - predicted), 3)
            for total, predicted in zip(env.timing.overheads, self.policy.predict_seconds, strict=False)
        ]
        end = EpisodeEnd(
            episode_id=spec.episode_id,
            end_stamp_ns=env.stamp_ns,
            queries=env.queries,
            executed_rows=env.executed_rows,
            policy_error=error,
            error_kind=kind,
            bridge_overhead_ms=tuple(overheads),
        )
        self.end_pub.publish(end.to_message())

    def run_real(self, spec: EpisodeSpec, instruction: str) -> None:
        """One episode in real mode (``CellBridge.run``)."""
        assert self.real is not None
        if self.policy.abandoned:
            self.policy = self.build_policy()
        assert isinstance(self.policy, WatchedPolicy)
        end = self.real.run(
            spec, instruction, policy=self.policy, cache=self.cache, limits=self.limits, timeout=self.sim_timeout
        )
        if end is not None:
            self.end_pub.publish(end.to_message())

    def close(self) -> None:
        """Hold the arms at once (real mode: the episode thread may be waiting out a chunk's rows), then stop the
        episode thread (its waits end on ``STOP``) before the node's publishers go away."""
        if self.real is not None:
            self.real.motion.halt(what='bridge exit')
        self.request(None)
        with self.cache.condition:
            self.cache.condition.notify_all()
        self.worker.join(timeout=STOP_JOIN_SECONDS)
        if self.real is not None:
            self.real.close()
        self.policy.close()
        self.samples.close()


def main(args: list[str] | None = None) -> int:
    """Run the policy bridge until shutdown (not dumpable: no process of the same user reads or traces it)."""
    protect_this_process()
    return run_node(PolicyBridge, args)


if __name__ == '__main__':
    raise SystemExit(main())
