"""Default names of every topic and service of the package (table in README, node graph); each is a node parameter.

The names are relative: a node resolves them in its namespace, so ``PushRosNamespace`` or ``--ros-args -r
__ns:=/cell1`` puts a whole graph under ``/cell1`` and remaps apply as usual; in the root namespace they are the
absolute names of earlier versions (``/joint_states``). Bags always name a topic by ``resolve(name)``, its name in
the root namespace, whatever namespace the recorder ran in, so every bag reads alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from robofollow_ros.benchmark.types import Arm

# The names import nothing else: ``robofollow operator stop`` reads them and must start fast (the registry and the
# arms are imported where a function needs them).

CLOCK = 'clock'
JOINT_STATES = 'joint_states'
INSTRUCTION = 'robofollow/instruction'
EPISODE = 'robofollow/episode'
RESULT = 'robofollow/result'
SIM_RESET = 'robofollow/sim/reset'
OBJECT_POSE_PREFIX = 'robofollow/objects/'
EE_POSE_PREFIX = 'robofollow/ee/'
EPISODE_META = 'robofollow/episode_meta'
"""Bags only: the episode's meta data the EpisodeSpec does not hold, JSON in std_msgs/String (bags/episode_meta.py)."""
CELL_LAYOUT = 'robofollow/cell/layout'
"""robofollow_interfaces/msg/EpisodeSpec, latched, in real mode: the trial the cell is being laid out for, published
by the evaluator before the arms go home and the cell is reset (or the operator places the objects), so that a pose
source knows the new layout before the layout check reads it (the aruco_tracker forgets the last episode's poses and
learns what stands on what). The episode itself starts later, on ``robofollow/episode`` and the RESET status."""
CELL_RESET = 'robofollow/cell/reset'
"""robofollow_interfaces/srv/ResetEpisode in real mode: served by the fake hardware (objects laid out, arms home)."""
TRUTH_POSE_PREFIX = 'robofollow/truth/objects/'
"""Fake hardware's simulation truth beside another pose source (``publish_truth_poses``): bags keep it, and
``bags.read_episode_bag(..., object_poses=TRUTH_POSE_PREFIX)`` scores an episode from it, not from tracked poses."""
WORLD_FRAME = 'world'
TRACKER_STATUS = 'robofollow/tracker/status'
"""The aruco_tracker's per-frame account (std_msgs/String, JSON): each object's pose source or refusal."""


def resolve(name: str, namespace: str = '/') -> str:
    """The absolute name of topic or service ``name`` in ``namespace`` (an absolute ``name`` stays as it is), as a
    node in that namespace resolves it without remaps; ``resolve(JOINT_STATES)`` is ``/joint_states``."""
    if name.startswith('/'):
        return name
    return f'{namespace.rstrip("/")}/{name}'


def image_topic(camera: str) -> str:
    """``<camera>/image_raw`` (sensor_msgs/Image, rgb8)."""
    return f'{camera}/image_raw'


def camera_info_topic(camera: str) -> str:
    """``<camera>/camera_info`` (sensor_msgs/CameraInfo)."""
    return f'{camera}/camera_info'


OPTICAL_FRAME_SUFFIX = '_optical_frame'


def camera_frame(camera: str) -> str:
    """Optical frame id stamped on the images and CameraInfo of ``camera`` (REP 103's ``_optical_frame``)."""
    return f'{camera}{OPTICAL_FRAME_SUFFIX}'


def camera_of_frame(frame_id: str) -> str:
    """The camera whose optical frame ``frame_id`` is (``cam_high_optical_frame`` -> ``cam_high``); any other
    name is the camera's own."""
    return frame_id.removesuffix(OPTICAL_FRAME_SUFFIX) or frame_id


def camera_info_topic_of_image(image_topic: str) -> str:
    """The CameraInfo topic beside an image topic, as image_transport pairs them (``/cam_high/image_raw`` ->
    ``/cam_high/camera_info``)."""
    namespace, _, _ = image_topic.rstrip('/').rpartition('/')
    return f'{namespace}/camera_info'


def object_pose_topic(name: str) -> str:
    """``robofollow/objects/<name>/pose`` (geometry_msgs/PoseStamped, world frame)."""
    return f'{OBJECT_POSE_PREFIX}{name}/pose'


def object_name_from_topic(topic: str, *, prefix: str = OBJECT_POSE_PREFIX) -> str | None:
    """Inverse of ``object_pose_topic`` (of ``truth_pose_topic`` with ``prefix=TRUTH_POSE_PREFIX``), or of its
    ``resolve``d name, as in a bag; ``None`` for any other topic."""
    topic, prefix = topic.removeprefix('/'), prefix.removeprefix('/')
    if topic.startswith(prefix) and topic.endswith('/pose'):
        return topic[len(prefix) : -len('/pose')] or None
    return None


def truth_pose_topic(name: str) -> str:
    """``/robofollow/truth/objects/<name>/pose``: fake hardware's simulation truth beside a tracker."""
    return f'{TRUTH_POSE_PREFIX}{name}/pose'


def ee_pose_topic(arm: Arm) -> str:
    """``robofollow/ee/<arm>/pose`` (geometry_msgs/PoseStamped of the TCP, world frame)."""
    return f'{EE_POSE_PREFIX}{arm}/pose'


def arm_trajectory_topic(arm: Arm) -> str:
    """``<arm>_arm_controller/joint_trajectory`` (trajectory_msgs/JointTrajectory)."""
    return f'{arm}_arm_controller/joint_trajectory'


RECORDED = 'robofollow/recorded'
"""std_msgs/String: the recorder names the episode id of each bag it has published (moved to its final name)."""
SIM_STATUS = 'robofollow/sim/status'
"""robofollow_interfaces/msg/SimStatus (ros/protocol.py): an observation is complete."""
EPISODE_END = 'robofollow/episode_end'
"""robofollow_interfaces/msg/EpisodeEnd (ros/protocol.py): the bridge's episode loop is over."""
ROBOT_DESCRIPTION = 'robot_description'
SCENE_MARKERS = 'robofollow/scene_markers'
SIM_CHUNK = 'robofollow/sim/chunk'
"""robofollow_interfaces/msg/ChunkTicket (ros/protocol.py): which observation the arms' latest commands answer."""
HOME = 'robofollow/home'
"""std_srvs/Trigger, real-time graph: the bridge moves both arms to the profile's home pose."""
STOP = 'robofollow/stop'
"""std_srvs/Trigger, real-time graph: the bridge holds both arms, ends the episode ``stopped`` and refuses motion
until the operator releases it (``RELEASE``) or the next episode starts."""
RELEASE = 'robofollow/release'
"""std_srvs/Trigger, real-time graph: the operator releases the bridge's stop (the evaluator calls it once the
operator says ready); motion, the home move first, is allowed again."""
CELL_JOINT_STATES = 'robofollow/joint_states'
"""sensor_msgs/JointState, real-time graph (the ee_pose node): the cell's 14 joints in the URDF's names and the
policy's units."""
READY = 'robofollow/ready'
"""std_srvs/Trigger, real-time graph: the operator has placed the objects (served by the evaluator)."""
VOID = 'robofollow/void'
"""std_srvs/Trigger, real-time graph: the operator voids the current trial, which is played again (evaluator)."""
OVERRIDE_LAYOUT = 'robofollow/override_layout'
"""std_srvs/Trigger, real-time graph: the trial a failed layout check holds starts as it is, recorded (evaluator)."""


def all_object_names() -> list[str]:
    """Every scene item name of the registry: pose topics exist from the start, so discovery happens once."""
    from robofollow_ros.benchmark import registry

    return sorted({name for scene in (1, 2, 3, 4) for name in registry.scene_objects(scene)})


def pose_topics() -> list[str]:
    """The TCP pose topics of both arms and the pose topic of every scene item (what the sim node publishes)."""
    from robofollow_ros.benchmark.types import ARMS

    return [ee_pose_topic(arm) for arm in ARMS] + [object_pose_topic(name) for name in all_object_names()]


def frame_topics(object_names: Iterable[str], *, joint_states: str, objects_every_frame: bool) -> frozenset[str]:
    """The topics an episode's frames must have reached its end on before it is scored or its bag closed: both TCP
    poses, the joint states and, when the pose source publishes every frame (the sim, fake hardware's truth), the
    poses of the layout's objects (a tracker or mocap may not see an object at all)."""
    from robofollow_ros.benchmark.types import ARMS

    due = {ee_pose_topic(arm) for arm in ARMS} | {joint_states}
    if objects_every_frame:
        due |= {object_pose_topic(name) for name in object_names}
    return frozenset(due)
