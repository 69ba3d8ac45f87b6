"""Whether a node's writers and readers have matched every endpoint the ROS graph lists on their topics.

A writer's matched count alone says too little for samples that are never replayed (``qos.ARM_COMMANDS``): one
matched reader may be a recorder's while the sim's is still unmatched, and DDS matches a writer to a reader and the
reader to the writer separately, so each side must look at its own count. The graph's list (``count_subscribers``,
``count_publishers``) arrives by its own topic and may lag behind or run ahead of the matches.
"""

from __future__ import annotations

from collections.abc import Iterable

from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.subscription import Subscription


def every_reader_matched(node: Node, writers: Iterable[Publisher], *, at_least: int = 0) -> bool:
    """Whether each of ``writers`` has matched as many readers as the graph lists on its topic, and ``at_least``."""
    return all(w.get_subscription_count() >= max(at_least, node.count_subscribers(w.topic_name)) for w in writers)


def every_writer_matched(node: Node, readers: Iterable[Subscription]) -> bool:
    """Whether each of ``readers`` has matched as many writers as the graph lists on its topic."""
    return all(r.get_publisher_count() >= node.count_publishers(r.topic_name) for r in readers)
