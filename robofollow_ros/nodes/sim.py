"""``sim`` node: the MuJoCo cell on ROS, in synchronous mode (handshake: ``robofollow_ros/ros/protocol.py``).

Parameter ``robot`` picks the cell's robot (``robot.specs``); ``/joint_states`` and the trajectories carry its URDF's
joint names (``JointLayout``). Publishes ``/clock``, ``/joint_states``, object and TCP poses for every executed row;
camera images and CameraInfo after each reset and chunk (rendered only while someone subscribes, or always with
``images: always``); ``/robot_description`` and scene markers. Consumes the two arms' JointTrajectory topics as a
ros2_control JointTrajectoryController would (``header.stamp`` zero, one point per row period) with the bridge's
``ChunkTicket`` on ``/robofollow/sim/chunk`` (which observation they answer), and serves ``/robofollow/sim/reset``
(``robofollow_interfaces/srv/ResetEpisode``: the request carries the episode).
The reset is answered as soon as the cell is reset; frame 0, its observation and the RESET status follow once every
reader the node knows of on a frame topic has matched its writer, and its command readers every writer of the
commands it knows of (the matched events say when; a timer sends them anyway after ``match_timeout`` seconds), so no
callback ever waits.

The node's writers publish asynchronously (``RMW_FASTRTPS_PUBLICATION_MODE=ASYNCHRONOUS`` unless the environment
says otherwise): a publish only queues the message and Fast DDS delivers it from its own thread, on the other core,
while MuJoCo steps the next row (``docs/graph.md``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.qos import QoSProfile
from rclpy.subscription import Subscription
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from robofollow_ros import topics
from robofollow_ros.benchmark.types import ARMS, Arm
from robofollow_ros.errors import EpisodeSpecError, GraphError, RoboFollowError
from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.graph.clock import SimClock
from robofollow_ros.graph.intrinsics import pinhole_from_fovy
from robofollow_ros.robot.specs import DEFAULT_ROBOT
from robofollow_ros.ros import qos
from robofollow_ros.ros.cdr_template import FrameMessages
from robofollow_ros.ros.markers import scene_markers
from robofollow_ros.ros.matching import every_reader_matched, every_writer_matched
from robofollow_ros.ros.messages import camera_info_message, image_message
from robofollow_ros.ros.protocol import (
    ChunkTicket,
    ChunkTicketMessage,
    ResetCode,
    ResetEpisode,
    SimStatus,
    SimStatusMessage,
    StatusEvent,
    read_spec,
)
from robofollow_ros.ros.runtime import MIN_TIMEOUT, Timeout, param, read_report, run_node
from robofollow_ros.ros.trajectory_cdr import TrajectoryRows, decode_trajectory, warm_trajectory_codec
from robofollow_ros.state_layout import CAMERAS

PUBLICATION_MODE_VARIABLE = 'RMW_FASTRTPS_PUBLICATION_MODE'
IMAGES_AGAIN_SECONDS = 1.0
"""How long the images of an observation wait for its chunk before they go out again (``images_while_waiting``)."""
IMAGES_AGAIN_TIMES = round(qos.SIM_TIMEOUT_SECONDS / IMAGES_AGAIN_SECONDS)
"""How many times at most an observation's images go out again (parameter ``images_again_times``): as long as the
bridge waits for them by default (its ``sim_timeout``). Five were not enough: on a loaded machine (a full test run)
a bridge once got none of the six copies of frame 0's images sent over 5 s, and waited out its 30 s."""


def subscribe_trajectories(
    node: Node, callback: Callable[[Arm, bytes], None], *, events: SubscriptionEventCallbacks | None = None
) -> list[Subscription]:
    """The sim's readers of the arms' JointTrajectory commands (serialised; ``qos.ARM_COMMANDS``: a sim that
    starts late never executes an old command)."""
    return [
        node.create_subscription(
            JointTrajectory,
            topics.arm_trajectory_topic(arm),
            lambda data, arm=arm: callback(arm, data),
            qos.ARM_COMMANDS,
            raw=True,
            event_callbacks=events,
        )
        for arm in ARMS
    ]


def subscribe_tickets(
    node: Node, callback: Callable[[ChunkTicketMessage], None], *, events: SubscriptionEventCallbacks | None = None
) -> Subscription:
    """The sim's reader of the bridge's ``ChunkTicket`` (``qos.ARM_COMMANDS``, like the commands it belongs to)."""
    return node.create_subscription(
        ChunkTicketMessage, topics.SIM_CHUNK, callback, qos.ARM_COMMANDS, event_callbacks=events
    )


class SimNode(Node):
    """Owns the simulated cell."""

    def __init__(self) -> None:
        super().__init__('sim')
        from robofollow_ros.sim.constants import IMAGE_HEIGHT, IMAGE_WIDTH
        from robofollow_ros.sim.env import CellEnv

        self.width = int(
            param(self, 'width', IMAGE_WIDTH, description='camera image width, pixels', minimum=1, maximum=4096)
        )
        self.height = int(
            param(self, 'height', IMAGE_HEIGHT, description='camera image height, pixels', minimum=1, maximum=4096)
        )
        self.images = str(
            param(self, 'images', 'auto', description='auto (render while someone subscribes), always or never')
        )
        self.images_again_times = int(
            param(
                self,
                'images_again_times',
                IMAGES_AGAIN_TIMES,
                description=f"times an observation's images go out again, {IMAGES_AGAIN_SECONDS:g} s apart, "
                'while its chunk does not come',
                minimum=0,
            )
        )
        markers = bool(
            param(self, 'markers', False, description='draw the default ArUco tags on objects and table (issue 21)')
        )
        self.env = CellEnv(
            render=False,
            width=self.width,
            height=self.height,
            robot=str(param(self, 'robot', DEFAULT_ROBOT, description='robot of the cell (robot.specs)')),
            markers='default' if markers else None,
        )
        self.joint_layout = self.env.robot.joint_layout
        self.env.preload()
        warm_trajectory_codec()
        self.clock = SimClock()
        self.current: EpisodeSpec | None = None
        self.observation_ns = -1
        self.announced_ns = -2
        """The stamp of the latest frame 0 sent (``images_again``)."""
        self.images_sent: tuple[int, float, int] | None = None
        """The latest observation's images: its stamp, when they last went out (monotonic) and how many times again
        (``images_while_waiting``)."""
        self.commands: dict[Arm, tuple[int, TrajectoryRows]] = {}
        """Per arm, the latest trajectory received (its digest and rows) and not executed yet."""
        self.ticket: ChunkTicket | None = None
        """The ticket of the latest observation, while its commands have not all arrived."""
        self.announcing: EpisodeSpec | None = None
        """The episode reset to whose frame 0 waits for the readers to match (``announce_when_matched``)."""
        self.announce_timeout = Timeout(
            self,
            float(
                param(
                    self,
                    'match_timeout',
                    qos.MATCH_TIMEOUT_SECONDS,
                    description='seconds frame 0 of an episode waits for the known readers to match',
                    minimum=MIN_TIMEOUT,
                )
            ),
            self.announce,
        )

        self.frame_messages_cdr = FrameMessages(
            joint_names=self.joint_layout.published_names, frame_id=topics.WORLD_FRAME
        )
        self.clock_pub = self.create_publisher(Clock, topics.CLOCK, qos.CLOCK)
        self.joints_pub = self.watched_publisher(JointState, topics.JOINT_STATES, qos.STATE)
        self.ee_pubs = {arm: self.watched_publisher(PoseStamped, topics.ee_pose_topic(arm), qos.STATE) for arm in ARMS}
        self.object_pubs = {
            name: self.watched_publisher(PoseStamped, topics.object_pose_topic(name), qos.STATE)
            for name in topics.all_object_names()
        }
        self.image_pubs = {
            camera: self.watched_publisher(Image, topics.image_topic(camera), qos.SENSOR, on_match=self.images_again)
            for camera in CAMERAS
        }
        self.info_pubs = {
            camera: self.create_publisher(CameraInfo, topics.camera_info_topic(camera), qos.SENSOR)
            for camera in CAMERAS
        }
        self.status_pub = self.create_publisher(SimStatusMessage, topics.SIM_STATUS, qos.EVENTS)
        self.markers_pub = self.watched_publisher(MarkerArray, topics.SCENE_MARKERS, qos.MARKERS)
        description = self.create_publisher(String, topics.ROBOT_DESCRIPTION, qos.LATCHED)
        description.publish(String(data=self.env.robot.spec.urdf_text()))

        watched = SubscriptionEventCallbacks(matched=lambda _: self.announce_when_matched())
        self.command_subs = [
            *subscribe_trajectories(self, self.on_trajectory, events=watched),
            subscribe_tickets(self, self.on_ticket, events=watched),
        ]
        self.create_service(ResetEpisode, topics.SIM_RESET, self.on_reset)
        self.create_timer(IMAGES_AGAIN_SECONDS / 4, self.images_while_waiting)

    def watched_publisher(
        self, kind: type, topic: str, profile: QoSProfile, *, on_match: Callable[[], None] | None = None
    ) -> Publisher:
        """A publisher of a topic whose readers must match before an episode's frame 0 goes out: each match
        looks whether that frame can go out now (``announce_when_matched``), then calls ``on_match``."""

        def matched(info: object) -> None:
            self.announce_when_matched()
            if on_match is not None and getattr(info, 'current_count_change', 1) > 0:
                on_match()

        events = PublisherEventCallbacks(matched=matched)
        return self.create_publisher(kind, topic, profile, event_callbacks=events)

    def images_again(self) -> None:
        """An image reader matched after frame 0 went out (``match_timeout`` passed first, on a busy machine): the
        images of frame 0 went to no reader, and the bridge waits for them, so they go out again while no chunk has
        run since (same stamp: a reader that had them already gets a copy)."""
        if self.announcing is None and self.current is not None and 0 <= self.observation_ns == self.announced_ns:
            self.get_logger().info('an image reader matched after frame 0 went out: its images go out again')
            self.publish_images(self.observation_ns)

    def images_while_waiting(self) -> None:
        """The latest observation's images again, ``IMAGES_AGAIN_SECONDS`` after they went out while no chunk has
        run since, up to ``images_again_times`` times: a best-effort image sent the moment the writer saw its reader
        match is dropped when the reader has not yet matched the writer (discovery matches each side on its own), and
        the bridge would wait for it (same stamp: a reader that had them gets a copy)."""
        sent = self.images_sent
        if sent is None or self.announcing is not None or sent[0] != self.observation_ns:
            return
        stamp, at, times = sent
        if times >= self.images_again_times or time.monotonic() - at < IMAGES_AGAIN_SECONDS:
            return
        self.publish_images(stamp)
        self.images_sent = (stamp, time.monotonic(), times + 1)

    def on_reset(self, request: ResetEpisode.Request, response: ResetEpisode.Response) -> ResetEpisode.Response:
        response.episode_id = request.episode.episode_id
        try:
            spec = read_spec(request.episode)
        except (EpisodeSpecError, GraphError) as error:
            self.get_logger().error(f'reset refused: {error}')
            response.code, response.message = int(ResetCode.INVALID_EPISODE), str(error)
            return response
        try:
            task, layout = spec.resolve()
            self.env.reset(task, seed=spec.seed, layout=layout, images=False)
        except RoboFollowError as error:
            self.get_logger().error(f'reset to {spec.task_id} failed: {error}')
            response.code, response.message = int(ResetCode.RESET_FAILED), str(error)
            return response
        self.current = spec
        self.commands.clear()
        self.ticket = None
        self.observation_ns = -1  # no observation of this episode yet: a late command of the last one is ignored
        self.announcing = spec
        self.announce_timeout.start()
        self.announce_when_matched()
        response.code = int(ResetCode.OK)
        self.get_logger().debug(f'reset to {spec.task_id} r{spec.round} ({spec.episode_id})')
        return response

    def announce_when_matched(self) -> None:
        """Send the pending frame 0 once ``readers_matched`` (at the reset, then at each match of a watched writer)."""
        if self.announcing is not None and self.readers_matched():
            self.announce()

    def announce(self) -> None:
        """Publish frame 0 of the episode reset to, its observation and the RESET status (on the timeout too:
        a reader that never matches, e.g. one with incompatible QoS, must not stop the run)."""
        spec, self.announcing = self.announcing, None
        self.announce_timeout.cancel()
        if spec is None:
            return
        self.clock.start_episode()
        self.publish_frame()
        self.announced_ns = self.observation_ns
        self.publish_observation(reset=True)
        self.status_pub.publish(
            SimStatus(event=StatusEvent.RESET, episode_id=spec.episode_id, stamp_ns=self.observation_ns).to_message()
        )

    def readers_matched(self) -> bool:
        """Whether every reader this node knows of on a frame topic or the scene markers is matched (and every
        pose topic matched by as many readers as the TCP topics), and its own command readers have matched every
        writer it knows of, so frame 0 may go out: markers go only to matched readers (a recorder matched late
        missed an episode's first markers), and the bridge answers frame 0 with a chunk that is never replayed
        (a command reader that had not yet matched the bridge's writer lost it, and the episode waited out its
        timeout)."""
        publishers = [
            self.joints_pub,
            *self.ee_pubs.values(),
            *self.object_pubs.values(),
            *self.image_pubs.values(),
            self.markers_pub,
        ]
        reference = self.ee_pubs[ARMS[0]]

        readers = reference.get_subscription_count()
        poses = [*self.ee_pubs.values(), *self.object_pubs.values()]
        return (
            every_reader_matched(self, publishers)
            and all(p.get_subscription_count() >= readers for p in poses)
            and every_writer_matched(self, self.command_subs)
        )

    def on_trajectory(self, arm: Arm, data: bytes) -> None:
        if self.current is None:
            self.get_logger().warning(f'{arm} arm trajectory before any reset: ignored')
            return
        try:
            trajectory = decode_trajectory(data)
        except RoboFollowError as error:
            self.get_logger().error(f'{arm} arm trajectory ignored: {error}')
            return
        self.commands[arm] = (trajectory.digest(), trajectory)
        self.run_ticket()

    def on_ticket(self, message: ChunkTicketMessage) -> None:
        ticket = read_report(self, ChunkTicket.from_message, message, topic=topics.SIM_CHUNK)
        if ticket is None or self.current is None:
            return
        stale = ticket.episode_id != self.current.episode_id or ticket.for_stamp_ns != self.observation_ns
        if stale and not ticket.hold:  # a hold answers whatever the bridge saw last: only its commands must match
            self.get_logger().warning(
                f'chunk for stamp {ticket.for_stamp_ns} ns of episode {ticket.episode_id}, not the latest '
                'observation: ignored'
            )
            return
        self.ticket = ticket
        self.run_ticket()

    def run_ticket(self) -> None:
        """Execute the ticket's chunk once both arms' latest commands are the ones it names (a hold: stay still)."""
        ticket = self.ticket
        if ticket is None or any(
            arm not in self.commands or self.commands[arm][0] != ticket.digests[arm] for arm in ARMS
        ):
            return
        rows = {arm: self.commands[arm][1] for arm in ARMS}
        self.ticket = None
        self.commands.clear()
        if ticket.hold:
            # Simulated time advances only for a policy's chunk: holding still is what the paused cell does.
            self.get_logger().debug(f'hold for episode {ticket.episode_id}: the arms stay where they are')
            return
        self.execute(ticket.for_stamp_ns, {arm: (rows[arm].names, rows[arm].positions) for arm in ARMS})

    def execute(self, for_stamp_ns: int, commands: dict[Arm, tuple[list[str], np.ndarray]]) -> None:
        try:
            chunk = self.joint_layout.chunk_from_arm_rows(commands)
        except RoboFollowError as error:
            self.get_logger().error(f'chunk ignored: {error}')
            return
        self.env.execute(chunk, images=False, on_row=self.publish_frame)
        self.publish_observation()
        assert self.current is not None
        status = SimStatus(
            event=StatusEvent.EXECUTED,
            episode_id=self.current.episode_id,
            stamp_ns=self.observation_ns,
            for_stamp_ns=for_stamp_ns,
            rows=int(chunk.shape[0]),
        )
        self.status_pub.publish(status.to_message())

    def publish_frame(self) -> None:
        """Publish the current frame (``frame_messages``)."""
        for publisher, data in self.frame_messages():
            publisher.publish(data)

    def frame_messages(self) -> list[tuple[Publisher, bytes]]:
        """The current frame, in publishing order: clock, joint states, object poses, then the TCP poses (the frame
        clock), as pre-serialised CDR (``FrameMessages``): this runs for every executed row, so the poses are the
        trajectory frame the environment just recorded rather than read from the simulation again."""
        recorded = self.env.latest_frame()
        stamp = self.clock.stamp(recorded.t)
        self.observation_ns = stamp
        messages = self.frame_messages_cdr
        positions = self.joint_layout.to_joints(self.env.state())
        frame = [(self.clock_pub, messages.clock(stamp)), (self.joints_pub, messages.joint_state(stamp, positions))]
        for name, (position, quat) in recorded.objects.items():
            publisher = self.object_pubs.get(name)
            if publisher is not None:
                frame.append((publisher, messages.pose(stamp, position, quat)))
        for arm in ARMS:
            frame.append((self.ee_pubs[arm], messages.pose(stamp, *recorded.ee[arm])))
        return frame

    def wants_images(self, *, ask_graph: bool = False) -> bool:
        """Whether to render: ``images`` is ``always``, or a reader of an image topic is matched (or, with
        ``ask_graph``, discovered at all: a graph query, so only at a reset, not after every chunk)."""
        if self.images == 'always':
            return True
        if self.images == 'never':
            return False
        if any(publisher.get_subscription_count() > 0 for publisher in self.image_pubs.values()):
            return True
        return ask_graph and any(self.count_subscribers(p.topic_name) > 0 for p in self.image_pubs.values())

    def publish_observation(self, *, reset: bool = False) -> None:
        """Publish the images (when wanted) and the scene markers of the current state."""
        stamp = self.observation_ns
        if self.wants_images(ask_graph=reset):
            self.publish_images(stamp)
            self.images_sent = (stamp, time.monotonic(), 0)
        if self.markers_pub.get_subscription_count() > 0 and self.env.layout is not None:
            observation = self.env.observe(images=False)
            self.markers_pub.publish(
                scene_markers(self.env.layout, observation.object_pos, observation.object_quat, stamp_ns=stamp)
            )

    def publish_images(self, stamp: int) -> None:
        """Render the cameras and publish their images and CameraInfo stamped ``stamp``."""
        observation = self.env.observe(images=True)
        model = self.env.cell.model  # type: ignore[union-attr]
        for camera, pixels in observation.images.items():
            frame = topics.camera_frame(camera)
            intrinsics = pinhole_from_fovy(float(model.camera(camera).fovy[0]), width=self.width, height=self.height)
            self.info_pubs[camera].publish(camera_info_message(intrinsics, stamp_ns=stamp, frame_id=frame))
            self.image_pubs[camera].publish(image_message(pixels, stamp_ns=stamp, frame_id=frame))

    def close(self) -> None:
        self.env.close()


def main(args: list[str] | None = None) -> int:
    """Run the sim node until shutdown."""
    os.environ.setdefault(PUBLICATION_MODE_VARIABLE, 'ASYNCHRONOUS')
    return run_node(SimNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
