"""Thin rclpy nodes translating topics to calls into the core packages."""
