"""``robofollow operator``: the operator's calls into a running real-time graph, without the ros2 CLI."""

from __future__ import annotations

import argparse

from robofollow_ros import topics
from robofollow_ros.errors import GraphError

HELP = "call the real-time graph's operator services: stop, home, ready, void, override"
DESCRIPTION = """\
Call one std_srvs/Trigger service of a running real-time graph (`robofollow launch real`) and print its
answer; the same as `ros2 service call <service> std_srvs/srv/Trigger`. Run it in the graph's ROS domain
(the same ROS_DOMAIN_ID and ROS_AUTOMATIC_DISCOVERY_RANGE).

  stop    /robofollow/stop: both arms hold now; the running trial ends `stopped` (recorded void and played
          again) and the arms refuse to move until the next trial starts
  home    /robofollow/home: move both arms slowly to the profile's home pose
  ready   /robofollow/ready: the objects are placed, start the trial (as Enter on the evaluator's terminal)
  void    /robofollow/void: void the current trial (reset failed, robot fault): recorded void, played again
  override  /robofollow/override_layout: start the trial a failed layout check holds, with the objects as they
          are (the override is recorded in the trial's record and run.json)

Exit status: 0 done, 1 the service refused (its reason is printed), 2 no such service answered in time.
"""
SERVICES = {
    name: topics.resolve(service)
    for name, service in (
        ('stop', topics.STOP),
        ('home', topics.HOME),
        ('ready', topics.READY),
        ('void', topics.VOID),
        ('override', topics.OVERRIDE_LAYOUT),
    )
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``robofollow operator``."""
    parser.add_argument('action', choices=sorted(SERVICES), help='which service to call')
    parser.add_argument('--timeout', type=float, default=5.0, help='seconds to wait for the service (default 5)')


def run(args: argparse.Namespace) -> int:
    """Call the service in a child process (rclpy stays out of the command line)."""
    import subprocess
    import sys

    if args.timeout <= 0.0:
        raise GraphError(f'--timeout must be positive, got {args.timeout:g}')
    command = [sys.executable, '-m', 'robofollow_ros.ros.ask_once', 'trigger', SERVICES[args.action]]
    done = subprocess.run([*command, '--timeout', str(args.timeout)], timeout=args.timeout + 60.0, check=False)
    return done.returncode
