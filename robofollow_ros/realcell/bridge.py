"""The policy bridge's real-time mode (``runtime: real``): its parameters, its services and its episode runner.

``CellBridge`` holds what the bridge adds for a real cell (or fake hardware) behind a robot profile: ``SafeMotion``
(the safety filter, the driver writers, the measured joints, the dead-man), ``/robofollow/stop`` (served from a
node and thread of its own, ``realcell/stop_server.py``: never behind the bridge's image callbacks) and
``/robofollow/home`` (std_srvs/Trigger), and ``run``, which runs one episode with ``run_episode`` over a
``RealTimeEnvironment`` and returns its ``EpisodeEnd`` (``end_stamp_ns``: the wall clock once the last rows ran).
"""

from __future__ import annotations

import dataclasses
import threading

from rclpy.node import Node
from std_srvs.srv import Trigger

from robofollow_ros import topics
from robofollow_ros.errors import MotionStoppedError, PoseMissingError, RoboFollowError
from robofollow_ros.evaluation.episode import EpisodeLimits, run_episode
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.evaluation.guard import PolicyFailure
from robofollow_ros.realcell.environment import RealTimeEnvironment, WatchedPolicy
from robofollow_ros.realcell.gripper_modes import GripperModes
from robofollow_ros.realcell.safe_motion import HomeAnswer, MotionSettings, SafeMotion
from robofollow_ros.realcell.stop_server import StopServer
from robofollow_ros.realcell.stop_socket import StopSocket, stop_socket_path
from robofollow_ros.robot.profiles import RobotProfile, load_profile
from robofollow_ros.ros.observation_cache import ObservationCache
from robofollow_ros.ros.protocol import EpisodeEnd, HomeCode, MoveHome
from robofollow_ros.ros.runtime import MIN_TIMEOUT, param
from robofollow_ros.ros.shutdown import STOP
from robofollow_ros.safety.chunk_limits import REACH_SPEED_FRACTION, ChunkLimits, GripperReach
from robofollow_ros.state_layout import GRIP_COLUMNS

RUNTIMES = ('sim', 'real')
STOPPED_KIND = 'stopped'
"""``error_kind`` of an episode ended by ``/robofollow/stop``."""
POSE_MISSING_KIND = 'pose_missing'
"""``error_kind`` of an episode whose first observation lacked an object's pose (``PoseMissingError``): void."""
DRIVER_KIND = 'driver'
"""``error_kind`` of an episode the driver's state forbade to start (a gripper in another operating mode)."""


def motion_settings(node: Node) -> tuple[MotionSettings, float]:
    """The real mode's parameters: the safety and pacing settings, and the largest observation age (s)."""
    defaults = MotionSettings()

    def seconds(name: str, default: float, description: str) -> float:
        return float(param(node, name, default, description=description, minimum=MIN_TIMEOUT))

    settings = MotionSettings(
        max_state_age=seconds(
            'max_state_age', defaults.max_state_age, 'seconds the measured joint state may be old for a command'
        ),
        policy_deadline=seconds(
            'policy_deadline', defaults.policy_deadline, 'seconds the policy may think before the arms hold'
        ),
        settle_timeout=seconds(
            'settle_timeout', defaults.settle_timeout, "seconds to wait for the arms to reach a chunk's last row"
        ),
        settle_tolerance=seconds(
            'settle_tolerance', defaults.settle_tolerance, 'how close (rad) the arms must come to the last row'
        ),
        home_speed=float(
            param(
                node,
                'home_speed',
                defaults.home_speed,
                description='speed of the home move, a fraction of the velocity limits',
                minimum=0.01,
                maximum=1.0,
            )
        ),
        stop_seconds=seconds(
            'stop_seconds', defaults.stop_seconds, 'a controlled stop brings a joint at full speed to rest in this time'
        ),
        state_pause=seconds(
            'state_pause', defaults.state_pause, 'seconds the measured state may be old before the moving arms stop'
        ),
        blind_travel=float(
            param(
                node,
                'blind_travel',
                defaults.blind_travel,
                description='metres a TCP may be driven unseen once the joint state is half state_pause old',
                minimum=0.001,
            )
        ),
        state_watchdog=seconds(
            'state_watchdog', defaults.state_watchdog, 'seconds the measured state may be old before the episode ends'
        ),
        command_window=float(
            param(
                node,
                'command_window',
                defaults.command_window,
                description='seconds ahead a trajectory controller is sent rows, then a stop (0: whole chunks)',
                minimum=0.0,
                maximum=5.0,
            )
        ),
        stamped_windows=bool(
            param(
                node,
                'stamped_windows',
                defaults.stamped_windows,
                description="stamp a trajectory controller's windows with their chunk's start (false: stamp zero)",
            )
        ),
        gripper_velocity=float(
            param(
                node,
                'gripper_velocity',
                0.0,
                description="gripper velocity limit, normalised strokes per second (0: the robot profile's URDF's)",
                minimum=0.0,
            )
        )
        or defaults.gripper_velocity,  # 0 (not set): None, the profile's URDF finger speed
    )
    max_age = seconds('max_observation_age', 0.5, 'seconds an observation (images, joints, poses) may be old')
    return settings, max_age


class CellBridge:
    """The bridge's real-mode pieces (see the module docstring).

    Args:
        node: the bridge.
        profile: the robot profile.
    """

    def __init__(self, node: Node, profile: RobotProfile) -> None:
        self.node = node
        self.profile = profile
        settings, self.max_age = motion_settings(node)
        self.motion = SafeMotion(node, profile, settings=settings)
        self.gripper_modes = GripperModes(node, profile)
        self.busy = threading.Lock()
        """Held by an episode for its whole run and by a home move: the two never overlap (the home service runs on
        the executor's thread, the episode on the bridge's own)."""
        # The stop must not wait behind the bridge's callbacks (images, joint states) on its one executor thread.
        self.stop_server = StopServer(node, topics.STOP, self.on_stop)
        self.stop_socket = self._open_stop_socket()
        node.create_service(MoveHome, topics.HOME, self.on_home)
        node.create_service(Trigger, topics.RELEASE, self.on_release)

    @classmethod
    def from_name(cls, node: Node, name: str) -> CellBridge:
        """``CellBridge`` of the profile ``name`` (a shipped name or a path); ``ProfileError`` if it is wrong."""
        return cls(node, load_profile(name))

    def chunk_limits(self, robot: str, *, max_row_step: float) -> ChunkLimits:
        """The bridge's chunk checks before the safety filter: shape and finiteness only (``GuardedPolicy``). Joint
        limits are the profile's ``joint_limits`` mode's to decide (clamp or refuse), and steps its velocity rule's
        (``velocity_limits``: refuse or stretch, per joint in rad/s): the URDF limits and ``max_row_step`` of the
        simulated graph (``robot``, ``max_row_step``: unused here) would end the episode ``invalid_chunk`` first.
        The grippers are moved at ``REACH_SPEED_FRACTION`` of the filter's gripper speed (``GripperReach``)."""
        del robot, max_row_step
        limits = self.motion.limits
        columns = tuple(GRIP_COLUMNS.tolist())
        reach = GripperReach(
            columns=columns,
            step=limits.velocity[list(columns)] * self.profile.row_period * REACH_SPEED_FRACTION,
            lower=limits.lower[list(columns)],
            upper=limits.upper[list(columns)],
            refuse=limits.limit_mode == 'refuse',
        )
        return ChunkLimits.for_real_cell(limits.names, gripper_reach=reach)

    def on_stop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """Both arms hold now; the running episode ends ``stopped``; motion is refused until the next episode. Runs
        on the stop server's thread, concurrently with the bridge's callbacks and its episode thread."""
        decision = self.motion.stop()
        response.success = decision.command is not None
        response.message = (
            f'both arms hold; motion refused until the operator releases it ({topics.RELEASE})'
            if response.success
            else 'no measured joint state to hold at: stop the arms at the driver'
        )
        self.node.get_logger().warning(f'{topics.STOP}: {response.message}')
        return response

    def _open_stop_socket(self) -> StopSocket | None:
        """The stop on a Unix socket as well (``realcell/stop_socket.py``: no discovery for the operator's command);
        None, with a warning, where it cannot be served (the DDS service still is)."""
        path = stop_socket_path(self.node.context.get_domain_id(), self.stop_server.name)

        def stop() -> tuple[bool, str]:
            response = self.on_stop(Trigger.Request(), Trigger.Response())
            return bool(response.success), str(response.message)

        try:
            return StopSocket(path, stop)
        except OSError as error:
            self.node.get_logger().warning(f'no stop socket ({error}): {topics.STOP} is served over DDS only')
            return None

    def on_release(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """The operator releases the stop: motion (the home move first) is allowed again."""
        response.success = self.motion.release_stop()
        response.message = 'stop released: motion allowed' if response.success else 'the arms were not stopped'
        self.node.get_logger().warning(f'{topics.RELEASE}: {response.message}')
        return response

    def on_home(self, request: MoveHome.Request, response: MoveHome.Response) -> MoveHome.Response:
        """A slow move to the profile's home pose (refused while an episode runs or after a stop)."""
        problem = self.gripper_modes.problem()
        if problem is not None:
            code = HomeCode.GRIPPER_MODE if self.gripper_modes.all_told() else HomeCode.NOT_YET
            answer = HomeAnswer(code, 0.0, problem)
        elif not self.busy.acquire(blocking=False):
            answer = HomeAnswer(HomeCode.BUSY, 0.0, 'an episode is running: home refused')
        else:
            try:
                answer = self.motion.home()
            finally:
                self.busy.release()
        response.code, response.seconds, response.message = int(answer.code), answer.seconds, answer.message
        self.node.get_logger().info(f'{topics.HOME}: {answer.message}')
        return response

    def run(
        self,
        spec: EpisodeSpec,
        instruction: str,
        *,
        policy: WatchedPolicy,
        cache: ObservationCache,
        limits: EpisodeLimits,
        timeout: float,
    ) -> EpisodeEnd | None:
        """Run one episode; its ``EpisodeEnd`` (``None`` when the process is stopping: it has no end). Nothing moves
        while a gripper is not known to be in its profile's operating mode: the episode ends ``driver`` at once."""
        logger = self.node.get_logger()
        problem = self.gripper_modes.problem()
        if problem is not None:
            logger.error(f'{spec.task_id}: {problem}')
            return EpisodeEnd(
                episode_id=spec.episode_id,
                end_stamp_ns=self.node.get_clock().now().nanoseconds,
                queries=0,
                executed_rows=0,
                policy_error=problem,
                error_kind=DRIVER_KIND,
            )
        env = RealTimeEnvironment(
            cache,
            self.motion,
            clock_ns=lambda: self.node.get_clock().now().nanoseconds,
            episode_id=spec.episode_id,
            privileged=policy.privileged,
            timeout=timeout,
            max_age=self.max_age,
            log=logger.warning,
        )
        policy.motion = self.motion
        error: str | None = None
        kind: str | None = None
        self.busy.acquire()
        try:
            task, layout = spec.resolve()
            task = dataclasses.replace(task, instruction=instruction)
            outcome = run_episode(env, policy, task, seed=spec.seed, layout=layout, limits=limits)
            error, kind = outcome.policy_error, outcome.error_kind
        except PolicyFailure as failure:
            error, kind = str(failure), failure.kind
        except MotionStoppedError as failure:
            error, kind = str(failure), STOPPED_KIND
        except PoseMissingError as failure:
            error, kind = str(failure), POSE_MISSING_KIND
        except RoboFollowError as failure:
            if not STOP.is_set():
                error, kind = f'graph: {failure}', 'graph'
        finally:
            self.busy.release()
        if STOP.is_set():
            self.motion.halt(what='bridge stopping')  # SIGINT / SIGTERM mid-episode: the arms hold before it ends
            return None
        if error is not None:
            logger.error(f'{spec.task_id}: {error}; holding the arms')
            self.motion.hold(what='episode end')
        end_ns = env.stamp_ns if env.stamp_ns >= 0 else self.node.get_clock().now().nanoseconds
        counts = self.motion.intervention_counts()
        real_time = env.real_time()
        logger.info(
            f'episode {spec.episode_id}: {env.queries} queries, {env.executed_rows} rows executed, '
            f'{sum(counts.values())} safety interventions {counts}'
        )
        if real_time is not None and not real_time.kept:
            logger.warning(f'{spec.task_id}: {real_time.summary()}; the trial is scored, its record says so')
        return EpisodeEnd(
            episode_id=spec.episode_id,
            end_stamp_ns=end_ns,
            queries=env.queries,
            executed_rows=env.executed_rows,
            policy_error=error,
            error_kind=kind,
            interventions=tuple(sorted(counts.items())),
            real_time=real_time,
        )

    def close(self) -> None:
        """Hold both arms (every exit of the bridge ends with a hold), then stop the stop service and the dead-man's
        and driver's threads."""
        try:
            self.motion.halt(what='bridge exit')  # nothing when the bridge already halted the arms
        finally:
            if self.stop_socket is not None:
                self.stop_socket.close()
            self.stop_server.close()
            self.motion.close()
