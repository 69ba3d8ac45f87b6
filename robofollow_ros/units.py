"""Units shared by every layer: ROS stamps and durations are integer nanoseconds."""

NS_PER_S = 1_000_000_000
"""Nanoseconds per second."""
