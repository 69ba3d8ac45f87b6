"""The RoboFollow protocol as data: objects, layouts, task labels, evaluation splits, seeds, entropy.

Pure Python: imports neither rclpy nor MuJoCo.
"""
