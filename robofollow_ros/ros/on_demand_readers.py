"""``OnDemandReaders``: per-row topics that a node takes in batches when it needs them, not through its executor.

The sim publishes joint states and poses for every executed row (~14 messages). The readers of those topics live
on a helper node that no executor spins; Fast DDS keeps the samples in each reader's history and ``drain`` takes
whatever arrived, when the node needs it: the policy bridge keeps only the newest sample (depth 1) and drains when
an observation is due, so Python handles one message per topic and query instead of one per row; the referee keeps
every sample (``qos.STATE``) and drains at each sim status and at the episode's end. Either way no executor wakes
up for every message (``docs/graph.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import cast

import rclpy
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from robofollow_ros.bags.cdr import header_stamp_ns

NEWEST = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
"""The newest sample only; transient local, so a reader matched after the last row still gets it."""
VOLATILE_NEWEST = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
"""The newest sample only, volatile: also matches the plain reliable writers of a real cell (a mocap remap, a
tracker), which a transient-local reader would not."""


class OnDemandReaders:
    """Raw readers of ``kinds`` (topic -> message type) on an unspun node beside ``node``.

    The helper node ignores the process's global ROS arguments (a ``__node`` remap would give it the name of
    ``node``); the topics are resolved through ``node`` instead, so its remappings still apply.

    Args:
        node: the node they belong to (its context, name and remappings are used).
        kinds: the topics and their message types.
        store: receives ``(topic, header stamp ns, CDR bytes)`` for every sample ``drain`` takes.
        profile: the readers' QoS; its depth is how many samples per topic wait for ``drain``.
        profiles: another QoS for some topics (e.g. object poses from a best-effort driver).
    """

    def __init__(
        self,
        node: Node,
        kinds: Mapping[str, type],
        *,
        store: Callable[[str, int, bytes], None],
        profile: QoSProfile = NEWEST,
        profiles: Mapping[str, QoSProfile] | None = None,
    ) -> None:
        self.store = store
        self.node = rclpy.create_node(
            f'{node.get_name()}_samples',
            context=node.context,
            namespace=node.get_namespace(),
            use_global_arguments=False,
            start_parameter_services=False,
            enable_rosout=False,
        )
        self.readers = {
            topic: self.node.create_subscription(
                kind, node.resolve_topic_name(topic), _never_called, (profiles or {}).get(topic, profile), raw=True
            )
            for topic, kind in kinds.items()
        }

    def drain(self, topics: Collection[str] | None = None) -> None:
        """Hand every sample that arrived since the last call to ``store``, of ``topics`` only if given (the
        bridge needs the poses of the current layout's objects, a third of the pose topics)."""
        for topic, reader in self.readers.items():
            if topics is not None and topic not in topics:
                continue
            with reader.handle:
                while (taken := reader.handle.take_message(reader.msg_type, True)) is not None:
                    data = cast(bytes, taken[0])  # a raw take gives the serialised bytes; rclpy types it object
                    self.store(topic, header_stamp_ns(data), data)

    def writers(self, topic: str) -> int:
        """How many writers the reader of ``topic`` has matched (for a diagnosis: none means discovery, not loss)."""
        return self.readers[topic].get_publisher_count()

    def close(self) -> None:
        """Destroy the helper node."""
        self.node.destroy_node()


def _never_called(_: object) -> None:
    """No executor spins the helper node."""
