"""QoS profiles of the graph (docs/architecture.md, "Where each concept lives")."""

from __future__ import annotations

from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
    qos_profile_sensor_data,
)

from robofollow_ros import topics

MATCH_TIMEOUT_SECONDS = 5.0
"""How long a writer whose first samples are not replayed waits for every reader the graph lists to match it before
it settles for those matched (one that never matches, e.g. with incompatible QoS, must not stop the run)."""

SIM_TIMEOUT_SECONDS = 30.0
"""How long the bridge waits by default for the sim to complete an observation (its ``sim_timeout``)."""

SENSOR = qos_profile_sensor_data
"""Camera images and CameraInfo: best effort, keep last 5."""
STATE = QoSProfile(
    depth=1000,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
"""Per-row joint states and poses: the referee and the recorder must see every frame of an episode, even when
discovery matched them a moment after the sim started publishing (transient local: they get the last 1000
samples, two episodes' worth, and keep only those stamped inside the episode)."""
ARM_COMMANDS = QoSProfile(
    depth=10,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
"""The arms' JointTrajectory commands (``/left_arm_controller/joint_trajectory``, right): reliable, never replayed,
so a controller (or a restarted sim) that joins late never executes an old trajectory. The bridge waits for the
sim's reader to match before its first command instead (``PolicyBridge.publish_chunk``)."""
EVENTS = QoSProfile(
    depth=50,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
"""Handshake messages (sim status, episode end) and results: a reader that matched a moment late
still gets them (every consumer matches them by episode id or stamp, so a replayed old one is ignored)."""
COMMANDS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
"""Instructions: never replayed to a late joiner (an instruction starts an episode)."""
LATCHED = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
"""/robofollow/episode and /robot_description as published: late joiners get the latest message."""
LATCHED_READER = QoSProfile(
    depth=10,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
"""Readers of /robofollow/episode: a keyless topic keeps one history for all writers, so with depth 1 a message
from another writer arriving before the callback ran would replace the evaluator's episode spec unseen."""
CLOCK = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)
MARKERS = QoSProfile(
    depth=100,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
"""/robofollow/scene_markers, written and read: one message per observation, every one recorded. The recorder may
fall behind for a moment when it closes a bag (a reader of depth 1 kept only the newest of those that arrived
meanwhile), and a reader may match the sim's writer a moment after the writer matched it (discovery is not
symmetric): a writer of depth 1 then handed it only the newest, and a bag missed its episode's markers."""

MOCAP = 'mocap'
"""``pose_source`` of object poses from a motion-capture driver (``vrpn_mocap``)."""


def pose_reader(profile: QoSProfile, *, pose_source: str) -> QoSProfile:
    """A reader's QoS for the object pose topics: ``profile``, or best effort and volatile (same depth) when the
    poses come from a motion-capture driver: vrpn_mocap publishes with the sensor-data QoS (best effort) by default
    (``sensor_data_qos: true``), and a reliable reader never matches a best-effort writer."""
    if pose_source != MOCAP:
        return profile
    return QoSProfile(
        depth=profile.depth,
        history=HistoryPolicy.KEEP_LAST,
        reliability=ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.VOLATILE,
    )


def object_pose_readers(profile: QoSProfile, *, pose_source: str) -> dict[str, QoSProfile]:
    """Per object pose topic, the QoS its readers take when it differs from ``profile`` (``pose_reader``)."""
    if pose_source != MOCAP:
        return {}
    return {
        topics.object_pose_topic(name): pose_reader(profile, pose_source=pose_source)
        for name in topics.all_object_names()
    }
