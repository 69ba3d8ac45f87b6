"""robofollow_ros: the RoboFollow instruction-following benchmark on ROS 2 and MuJoCo."""

__version__ = '0.1.0'
