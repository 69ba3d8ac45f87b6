"""The robot as data, below every layer that uses it: the registered robots (``specs``), their URDF-derived
joints and limits (``description``) and the assets installed with them (``assets``).

Reads XML only and never imports MuJoCo or rclpy, so bags, the graph's ROS-free pieces and policies can name joints
without loading the simulator.
"""
