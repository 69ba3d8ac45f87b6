"""The ROS node graph's pure pieces (no rclpy): handshake messages, sim clock, chunk limits, camera intrinsics,
the graph declaration shared by the launch file and ``robofollow launch``, and the process supervisor."""
