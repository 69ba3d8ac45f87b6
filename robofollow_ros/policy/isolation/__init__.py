"""Running a user policy in its own process: nothing of the simulator, the task or the referee is in reach.

``client.PolicyProcess`` starts a fresh interpreter (``python -m robofollow_ros.policy.isolation.host``, never a
fork of the evaluator) and calls the policy in it; ``transport`` frames the messages over two pipes (openpi's
msgpack encoding), ``shared_images`` hands the camera images over through a shared-memory file. The evaluator's
``GuardedPolicy`` puts every non-built-in policy behind a ``PolicyProcess`` unless the run says
``--trusted-policy``.
"""
