"""Thin rclpy nodes translating topics to calls into the core packages.

Each node module is a process entry point (``ros2 run robofollow <node>``), so this package picks MuJoCo's headless
rendering backend before any node imports MuJoCo (``sim.gl``; the launch sets ``MUJOCO_GL`` too).
"""

from robofollow_ros.sim.gl import choose_gl_backend

choose_gl_backend()
