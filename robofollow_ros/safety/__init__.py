"""The safety layer for real arms, as pure functions: nothing here talks to ROS, reads a clock or loads MuJoCo.

* ``limits``: what a real cell allows (joint and velocity limits, the TCP workspace box, how old the measured
  state may be, clamp or refuse), and the intervention report every decision carries.
* ``command_filter``: a chunk of 14-D absolute targets in, what may be sent to the arms out (rows clamped, slowed or
  refused), or a hold at the measured position.
* ``deadman``: a hold when the policy has not answered within a deadline (the clock is passed in).
* ``jtc``: checks JointTrajectory-like data against the JointTrajectoryController's documented interface.
* ``profile_limits``: the limits and the TCP function (URDF forward kinematics) of a robot profile.

See docs/safety.md for the rules and what the bridge uses so far.
"""
