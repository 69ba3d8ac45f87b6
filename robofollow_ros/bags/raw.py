"""Serialized messages pulled out of a bag, grouped by topic, before any decoding."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from robofollow_ros.errors import BagError

TopicFilter = Callable[[str], bool]


@dataclass
class RawTopic:
    """All messages of one topic in storage order.

    Attributes:
        msgtype: ROS 2 type name such as ``geometry_msgs/msg/PoseStamped``.
        log_ns: receive (log) time of each message, nanoseconds.
        data: CDR bytes of each message.
    """

    msgtype: str
    log_ns: list[int] = field(default_factory=list)
    data: list[bytes] = field(default_factory=list)

    def add(self, log_ns: int, data: bytes) -> None:
        """Append one message."""
        self.log_ns.append(log_ns)
        self.data.append(data)

    def __len__(self) -> int:
        return len(self.data)


@dataclass
class RawBag:
    """Messages of the wanted topics of one bag, and what had to be repaired to get them.

    Attributes:
        storage: ``mcap`` or ``sqlite3``.
        topics: topic name -> its messages.
        recovered: human-readable account of the recovery, ``None`` for an intact bag.
    """

    storage: str
    topics: dict[str, RawTopic]
    recovered: str | None = None


def topic_entry(topics: dict[str, RawTopic], name: str, msgtype: str) -> RawTopic:
    """Return the entry of topic ``name``, creating it on first use.

    Raises:
        BagError: the topic was recorded with two different message types.
    """
    entry = topics.get(name)
    if entry is None:
        entry = topics[name] = RawTopic(msgtype)
    elif entry.msgtype != msgtype:
        raise BagError(f'topic {name} is recorded with two message types, {entry.msgtype} and {msgtype}')
    return entry
