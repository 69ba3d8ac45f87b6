"""rclpy helpers shared by the nodes: message conversions, QoS profiles, spinning and shutdown."""
