"""``ee_pose`` node: the TCP pose of each arm, ``/robofollow/ee/<arm>/pose``, from measured joints and the URDF.

For a real cell (or fake hardware), where no simulator publishes the TCP poses the referee and the workspace check
read. Joints come either from ``/joint_states`` with the URDF's joint names (``robot`` parameter; e.g. a
ros2_control ``joint_state_broadcaster``), or, with ``robot_profile`` set, from each arm's ``joint_states`` topic of
the profile in the driver's names, signs and offsets (e.g. xs_sdk's ``/follower_left/joint_states``), read through
``realcell/driver_feedback.py``. Each pose carries the stamp of the joint state it was computed from, in the ``world``
frame (``robot/kinematics.py``).

With ``robot_profile`` set (real mode) it also publishes ``/robofollow/joint_states``: the cell's 14 joints in the
URDF's names and the policy's units (grippers as the URDF finger joint, like the sim's ``/joint_states``), once both
arms were heard, for every driver message, stamped like that message; the referee and recorder read it. As in the
sim, the joints are measured and the grippers are the command (``realcell/commanded_grips.py``: the referee's gripper
events are thresholds on the command).
"""

from __future__ import annotations

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState

from robofollow_ros import topics
from robofollow_ros.errors import ProfileError, SimulationError
from robofollow_ros.realcell.commanded_grips import CommandedGrips
from robofollow_ros.realcell.driver_feedback import DRIVER_STATES, DriverFeedback
from robofollow_ros.robot.description import load_robot
from robofollow_ros.robot.kinematics import ForwardKinematics, TcpPose, forward_kinematics
from robofollow_ros.robot.profiles import RobotProfile, load_profile
from robofollow_ros.robot.specs import DEFAULT_ROBOT
from robofollow_ros.ros import qos
from robofollow_ros.ros.messages import from_time, joint_state_message, pose_message
from robofollow_ros.ros.runtime import param, run_node
from robofollow_ros.state_layout import ARM_DOF, ARMS, Arm, JointLayout

JOINT_READER = DRIVER_STATES


class EePoseNode(Node):
    """Joint states in, one TCP pose per arm out (thin: the kinematics are ``robot.kinematics``)."""

    def __init__(self) -> None:
        super().__init__('ee_pose')
        profile_name = str(
            param(self, 'robot_profile', '', description="real-cell robot profile whose arms' joint topics to read")
        )
        self.frame_id = str(param(self, 'frame_id', topics.WORLD_FRAME, description='frame of the published poses'))
        self.profile: RobotProfile | None = load_profile(profile_name) if profile_name else None
        robot = str(param(self, 'robot', DEFAULT_ROBOT, description='robot whose URDF gives the kinematics'))
        if self.profile is not None:
            if self.profile.robot is None:
                raise ProfileError(
                    f'robot profile {self.profile.name!r} names no robot description, so ee_pose has no kinematics '
                    "for it (use the driver's own end-effector pose)"
                )
            robot = self.profile.robot
        self.kinematics: ForwardKinematics = forward_kinematics(robot)
        self.pubs = {arm: self.create_publisher(PoseStamped, topics.ee_pose_topic(arm), qos.STATE) for arm in ARMS}
        if self.profile is None:
            joint_topic = str(
                param(self, 'joint_states', topics.JOINT_STATES, description='joint states with the URDF names')
            )
            self.create_subscription(JointState, joint_topic, self.on_joint_state, JOINT_READER)
        else:
            self.layout: JointLayout = load_robot(robot).joint_layout
            self.cell_joints_pub = self.create_publisher(JointState, topics.CELL_JOINT_STATES, qos.STATE)
            self.grips = CommandedGrips(self, self.profile)
            self.feedback = DriverFeedback(
                self, self.profile, on_arm=self.on_driver_state, on_message=self.publish_cell_joints
            )

    def on_joint_state(self, message: JointState) -> None:
        """URDF-named joints: publish the pose of every arm whose six joints the message carries."""
        try:
            poses = self.kinematics.tcp_poses_from_joints(list(message.name), list(message.position))
        except SimulationError as error:
            self.get_logger().warning(f'joint state ignored: {error}', throttle_duration_sec=5.0)
            return
        for arm, pose in poses.items():
            self.publish(arm, pose, from_time(message.header.stamp))

    def on_driver_state(self, arm: Arm, state: np.ndarray, stamp_ns: int) -> None:
        """One arm's seven policy values, read from its driver's joints by the profile."""
        self.publish(arm, self.kinematics.tcp_pose(arm, state[:ARM_DOF]), stamp_ns)

    def publish_cell_joints(self, stamp_ns: int) -> None:
        """``/robofollow/joint_states`` of both arms' latest values, once both were heard."""
        state = self.feedback.state()
        if state is None:
            return
        names, positions = self.layout.joint_state(self.grips.apply(state, stamp_ns=stamp_ns))
        self.cell_joints_pub.publish(joint_state_message(names, positions, stamp_ns=stamp_ns))

    def publish(self, arm: Arm, pose: TcpPose, stamp_ns: int) -> None:
        self.pubs[arm].publish(
            pose_message(pose.position.tolist(), pose.quaternion.tolist(), stamp_ns=stamp_ns, frame_id=self.frame_id)
        )


def main(args: list[str] | None = None) -> int:
    """Run the ee_pose node until shutdown."""
    return run_node(EePoseNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
