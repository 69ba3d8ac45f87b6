"""Object poses from camera images: marker configuration, ArUco detection, plane-constrained poses, gates and the
extrinsic calibration from a table board (issue 21). Pure: OpenCV and numpy, no rclpy, no MuJoCo."""
