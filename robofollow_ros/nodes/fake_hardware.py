"""``fake_hardware`` node: the MuJoCo cell as the robot behind a robot profile, in wall-clock time (like ros2_control's
mock components).

Parameter ``robot_profile`` (``config/robots/<name>.yaml``) picks the driver it plays (``realcell/fake_driver.py``): it
takes that driver's command topics, message types and units (QoS reliable + volatile) and publishes its joint-state
topics in the driver's names and units, stamped with this node's clock. A control loop on its own thread
(``sim/realtime.py``) runs at the profile's ``control_rate``: each tick advances the controllers' setpoint
(``sim/controllers.py``) and the physics by exactly one control period, then publishes the joint states.

Also publishes ``/robofollow/objects/<name>/pose`` from simulation truth (``publish_object_poses``, at
``object_pose_rate`` Hz; with ``publish_truth_poses`` also on ``/robofollow/truth/objects/<name>/pose``, beside
another pose source, so that the same episode can be scored from truth) and the cameras' images and CameraInfo (at
``camera_rate`` Hz, ``width`` x ``height``, cam_high at ``head_width`` x ``head_height``; rendered on their own
thread, each camera only while someone subscribes to it), with the ArUco tags drawn on the objects and the table
when ``markers`` is true (what the ``aruco_tracker`` sees; issue 21), and serves ``/robofollow/cell/reset``
(``robofollow_interfaces/srv/ResetEpisode``): the episode's objects placed as the benchmark places them, the arms
at the profile's home pose, every command dropped. It starts with the arms at home over an empty table. For a
profile whose grippers name an operating mode (xs_sdk's), it serves each arm's ``get_robot_info`` too, answering
the mode the profile wants, or ``gripper_mode`` when set (a cell whose setup was not run).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import mujoco
import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image, JointState

from robofollow_ros import topics
from robofollow_ros.errors import EpisodeSpecError, GraphError, RoboFollowError
from robofollow_ros.graph.intrinsics import pinhole_from_fovy
from robofollow_ros.realcell.fake_driver import DRIVER_STATE, CommandTopic, FakeDriver
from robofollow_ros.realcell.gripper_modes import robot_info_type
from robofollow_ros.robot.profiles import RobotProfile, load_profile
from robofollow_ros.ros import qos
from robofollow_ros.ros.messages import camera_info_message, image_message, joint_state_message, pose_message
from robofollow_ros.ros.protocol import ResetCode, ResetEpisode, read_spec
from robofollow_ros.ros.runtime import param, run_node
from robofollow_ros.state_layout import ARMS, CAMERAS, HEAD_CAMERA

if TYPE_CHECKING:
    from robofollow_ros.sim.render import CameraRig

DEFAULT_SIM_ROBOT = 'aloha'
"""The simulated cell behind a profile that names no robot description (every shipped profile names one)."""
CAMERA_JOIN_SECONDS = 10.0
"""How long ``close`` waits for a render under way (one frame; seconds under heavy load)."""


class FakeHardwareNode(Node):
    """Owns the simulated cell and plays the profile's driver (thin: the work is in ``sim/`` and ``ros/``)."""

    def __init__(self) -> None:
        super().__init__('fake_hardware')
        from robofollow_ros.benchmark import registry
        from robofollow_ros.sim.constants import IMAGE_HEIGHT, IMAGE_WIDTH
        from robofollow_ros.sim.realtime import ControlLoop, RealTimeCell, empty_layout

        self.profile: RobotProfile = load_profile(
            str(param(self, 'robot_profile', 'aloha_ros2_control', description='robot profile whose driver to play'))
        )
        width = int(
            param(self, 'width', IMAGE_WIDTH, description='camera image width, pixels', minimum=1, maximum=4096)
        )
        height = int(
            param(self, 'height', IMAGE_HEIGHT, description='camera image height, pixels', minimum=1, maximum=4096)
        )
        self.head_size = (
            int(param(self, 'head_width', width, description='cam_high image width, pixels', minimum=1, maximum=4096)),
            int(
                param(self, 'head_height', height, description='cam_high image height, pixels', minimum=1, maximum=4096)
            ),
        )
        markers = bool(
            param(self, 'markers', False, description='draw the default ArUco tags on objects and table (issue 21)')
        )
        camera_rate = float(param(self, 'camera_rate', 10.0, description='camera images per second', minimum=0.1))
        self.publish_objects = bool(
            param(self, 'publish_object_poses', True, description='publish object poses from simulation truth')
        )
        self.publish_truth = bool(
            param(
                self,
                'publish_truth_poses',
                False,
                description='also publish simulation truth on /robofollow/truth/objects/<name>/pose (beside a tracker)',
            )
        )
        pose_rate = float(param(self, 'object_pose_rate', 50.0, description='object poses per second', minimum=0.1))
        self.period = 1.0 / self.profile.control_rate
        self.pose_every = max(1, round(self.profile.control_rate / pose_rate))

        self.cell = RealTimeCell(
            robot=self.profile.robot or DEFAULT_SIM_ROBOT,
            control_period=self.period,
            width=width,
            height=height,
            markers='default' if markers else None,
        )
        first = registry.eval_tasks()[0]
        self.lock = threading.Lock()
        self.cell.reset(first, seed=0, layout=empty_layout(first.scene), home=self.profile.home_state())
        self.driver = FakeDriver(self.profile, initial=self.profile.home_state())

        self.joint_pubs = {
            topic: self.create_publisher(JointState, topic, DRIVER_STATE)
            for topic in {self.profile.arms[arm].joint_states for arm in self.profile.arms}
        }
        self.object_pubs = {
            name: self.create_publisher(PoseStamped, topics.object_pose_topic(name), qos.STATE)
            for name in topics.all_object_names()
        }
        self.truth_pubs = (
            {
                name: self.create_publisher(PoseStamped, topics.truth_pose_topic(name), qos.STATE)
                for name in topics.all_object_names()
            }
            if self.publish_truth
            else {}
        )
        self.image_pubs = {
            camera: self.create_publisher(Image, topics.image_topic(camera), qos.SENSOR) for camera in CAMERAS
        }
        self.info_pubs = {
            camera: self.create_publisher(CameraInfo, topics.camera_info_topic(camera), qos.SENSOR)
            for camera in CAMERAS
        }
        for command in self.driver.topics:
            self.create_subscription(
                command.message_type,
                command.topic,
                lambda message, command=command: self.on_command(command, message),
                qos.ARM_COMMANDS,  # reliable and volatile: a command is never replayed to a late reader
            )
        self.create_service(ResetEpisode, topics.CELL_RESET, self.on_reset)
        self.gripper_mode = str(
            param(
                self,
                'gripper_mode',
                '',
                description="the grippers' operating mode get_robot_info answers ('' = the one the profile wants)",
            )
        )
        modes = [mode for arm in ARMS if (mode := self.profile.arms[arm].gripper.operating_mode) is not None]
        self.robot_info_services = [
            self.create_service(robot_info_type(), mode.service, self.robot_info_answer(mode.mode)) for mode in modes
        ]

        self.last_measured = self.cell.measured()
        self.held_ticks = 0
        """Control periods a reset held the cell (``tick``)."""
        self.resetting = threading.Event()
        self.stop_cameras = threading.Event()
        self.camera_thread = threading.Thread(
            target=self.run_cameras, args=(1.0 / camera_rate,), name='cameras', daemon=True
        )
        self.exit_code = 0
        self.loop = ControlLoop(period=self.period, tick=self.tick, on_error=self.on_loop_error)
        self.loop.start()
        self.camera_thread.start()

    def now_ns(self) -> int:
        return int(self.get_clock().now().nanoseconds)

    def on_command(self, command: CommandTopic, message: object) -> None:
        with self.lock:
            try:
                command.handle(message, self.now_ns(), self.cell.measured())
            except RoboFollowError as error:  # DriverCommandError, or ProfileError from a conversion
                self.get_logger().error(f'{command.topic}: command refused: {error}')

    def robot_info_answer(self, wanted: str) -> Callable[[Any, Any], Any]:
        """xs_sdk's ``get_robot_info`` for a gripper: its operating mode (as set up, unless ``gripper_mode``)."""

        def answer(request: Any, response: Any) -> Any:
            response.mode = self.gripper_mode or wanted
            response.num_joints = 1
            return response

        return answer

    def on_reset(self, request: ResetEpisode.Request, response: ResetEpisode.Response) -> ResetEpisode.Response:
        response.episode_id = request.episode.episode_id
        try:
            spec = read_spec(request.episode)
            task, layout = spec.resolve()
        except (EpisodeSpecError, GraphError) as error:
            self.get_logger().error(f'reset refused: {error}')
            response.code, response.message = int(ResetCode.INVALID_EPISODE), str(error)
            return response
        home = self.profile.home_state()
        started, held = time.monotonic(), self.held_ticks
        self.resetting.set()
        try:
            with self.lock:
                self.cell.reset(task, seed=spec.seed, layout=layout, home=home)
                self.driver.setpoints.reset(home)
                self.last_measured = self.cell.measured()
        except RoboFollowError as error:
            self.get_logger().error(f'reset to {spec.task_id} failed: {error}')
            response.code, response.message = int(ResetCode.RESET_FAILED), str(error)
            return response
        finally:
            self.resetting.clear()
        response.code = int(ResetCode.OK)
        self.get_logger().info(
            f'cell reset to {spec.task_id} r{spec.round} (layout {layout.name}, seed {spec.seed}) in '
            f'{time.monotonic() - started:.2f} s; the joint states held meanwhile for {self.held_ticks - held} '
            'control periods'
        )
        return response

    def tick(self) -> None:
        """One control period: advance the setpoint and the physics, publish the joint states (and poses).

        While a reset holds the cell (it lays out a scene, which can take longer than many periods), the joint
        states still go out every period, the last measured ones stamped now, as a robot keeps reporting its joints
        while the objects are placed: a driver whose states stopped would look dead to the bridge."""
        if self.resetting.is_set():
            self.held_ticks += 1
            measured, poses = self.last_measured, {}
        else:
            with self.lock:
                position, velocity = self.driver.setpoints.advance(self.now_ns(), self.period)
                self.cell.step(position, velocity)
                measured = self.last_measured = self.cell.measured()
                due = (self.publish_objects or self.publish_truth) and self.cell.steps % self.pose_every == 0
                poses = self.cell.object_poses() if due else {}
        stamp = self.now_ns()
        for topic, (names, values) in self.driver.joint_states(measured).items():
            self.joint_pubs[topic].publish(joint_state_message(names, values, stamp_ns=stamp))
        for name, (pos, quat) in poses.items():
            message = pose_message(pos.tolist(), quat.tolist(), stamp_ns=stamp, frame_id=topics.WORLD_FRAME)
            for publishers, wanted in ((self.object_pubs, self.publish_objects), (self.truth_pubs, self.publish_truth)):
                publisher = publishers.get(name)
                if wanted and publisher is not None:
                    publisher.publish(message)

    def on_loop_error(self, error: Exception) -> None:
        """A robot whose control loop died is not there any more: end the process (exit code 1)."""
        self.get_logger().fatal(f'control loop failed: {error!r}')
        self.exit_code = 1
        rclpy.try_shutdown(context=self.context)

    def watched_cameras(self) -> tuple[str, ...]:
        """The cameras someone subscribes to (their image or their CameraInfo)."""
        publishers = (self.image_pubs, self.info_pubs)
        return tuple(c for c in CAMERAS if any(pubs[c].get_subscription_count() > 0 for pubs in publishers))

    def camera_size(self, camera: str) -> tuple[int, int]:
        """(width, height) of ``camera``'s images."""
        return self.head_size if camera == HEAD_CAMERA else (self.cell.env.width, self.cell.env.height)

    def run_cameras(self, period: float) -> None:
        """Render and publish, every ``period`` seconds, the cameras someone subscribes to (own thread: EGL
        contexts belong to the thread that made them, and rendering must not hold up the control loop). Only the
        watched cameras are drawn: with the tracker alone reading cam_high at 640x480, the wrist cameras cost
        nothing."""
        rigs: dict[str, CameraRig] = {}
        try:
            self.render_until_stopped(period, rigs)
        except Exception as error:  # a camera that died is not there any more: say so and end, as the loop does
            self.get_logger().fatal(f'camera thread failed: {error!r}')
            self.exit_code = 1
            rclpy.try_shutdown(context=self.context)
        finally:
            for done in rigs.values():
                done.close()

    def render_until_stopped(self, period: float, rigs: dict[str, CameraRig]) -> None:
        """``run_cameras``'s loop (``rigs``: the renderers made, which the caller closes)."""
        scratch, rendered_cell = None, None
        next_due = time.monotonic()
        while not self.stop_cameras.wait(max(0.0, next_due - time.monotonic())):
            next_due += period
            if next_due < time.monotonic():
                next_due = time.monotonic() + period
            watched = self.watched_cameras()
            if not watched:
                continue
            with self.lock:
                cell = self.cell.cell
                if cell is not rendered_cell:
                    scratch = mujoco.MjData(cell.model)
                assert scratch is not None
                self.cell.snapshot(scratch)
                stamp = self.now_ns()
            if cell is not rendered_cell:
                # Outside the lock: building the render model takes long enough to hold up the control loop.
                for old in rigs.values():
                    old.close()
                rigs.clear()
                rendered_cell = cell
            for camera in watched:
                if camera not in rigs:
                    width, height = self.camera_size(camera)
                    rigs[camera] = self.cell.camera_rig(cell, cameras=(camera,), width=width, height=height)
                rig = rigs[camera]
                pixels = rig.render(scratch)[camera]
                frame = topics.camera_frame(camera)
                fovy = float(cell.model.camera(camera).fovy[0])
                intrinsics = pinhole_from_fovy(fovy, width=rig.width, height=rig.height)
                self.info_pubs[camera].publish(camera_info_message(intrinsics, stamp_ns=stamp, frame_id=frame))
                self.image_pubs[camera].publish(image_message(np.asarray(pixels), stamp_ns=stamp, frame_id=frame))

    def close(self) -> None:
        """Stop the control loop and the cameras, then free the cell, unless a render still uses it (the process
        frees it on exit instead: freeing a model under a running render crashes)."""
        self.loop.stop()
        self.stop_cameras.set()
        self.camera_thread.join(timeout=CAMERA_JOIN_SECONDS)
        self.get_logger().info(f'control loop: {self.loop.stats.summary()}; reset-held periods: {self.held_ticks}')
        if self.camera_thread.is_alive():
            self.get_logger().error(
                f'the camera thread still renders after {CAMERA_JOIN_SECONDS:g} s: the cell is left to the exit'
            )
            return
        with self.lock:
            self.cell.close()


def main(args: list[str] | None = None) -> int:
    """Run the fake hardware node until shutdown."""
    return run_node(FakeHardwareNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
