"""``robofollow operator``: the operator's calls into a running real-time graph, without the ros2 CLI.

It starts fast (``cli.FAST``: nothing heavy is imported, here or in the child that calls the service), and its
``--timeout`` counts from the command's start: ``stop`` at a load of 26-28 took 11-15 s to answer, and 32.6 s to
say that nothing answered within 5 s.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

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

On the evaluator's terminal, `s` or the space bar is the same stop at once, with no process to start and no
discovery to wait for: the operator's fastest stop. `stop` goes first to the bridge's stop socket (a Unix socket
of this user, no discovery), and calls the service when no bridge listens there.

Prints the service's answer (on stdout; on stderr when it refused), then on stderr how long after the command
started it came. --timeout counts from the command's start; `stop` calls again every second until it is answered
(a second stop only holds the arms again).

Exit status: 0 done, 1 the service refused (its reason is printed), 2 no such service answered in time.
"""
RECALL_SECONDS = {'stop': 1.0}
"""Services called again, this often, until they answer (a lost answer must not hide that the stop went through):
only the idempotent stop (a second ``ready`` would answer that no trial is waiting)."""
ANSWER_WAIT_SECONDS = 10.0
"""How long beyond ``--timeout`` the child that calls the service may take before it is killed (it ends by itself
within the timeout and a shutdown)."""
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


def command_started() -> float:
    """When this process started, on ``time.monotonic``'s clock (which every process of a Linux host shares): its
    start time in ``/proc/self/stat``, in clock ticks since boot (10 ms steps), so that the interpreter's own start
    counts; now, where that cannot be read."""
    now = time.monotonic()
    try:
        fields = Path('/proc/self/stat').read_text().rsplit(')', 1)[1].split()
        since_boot = int(fields[19]) / os.sysconf('SC_CLK_TCK')  # field 22, starttime (fields[0] is field 3)
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - since_boot
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - age if 0.0 <= age < 3600.0 else now


def run(args: argparse.Namespace) -> int:
    """Call the service in a child process (rclpy stays out of the command line); ``stop`` first over the bridge's
    stop socket, which needs no discovery (``realcell/stop_socket.py``)."""
    import subprocess
    import sys

    started = command_started()
    if args.timeout <= 0.0:
        raise GraphError(f'--timeout must be positive, got {args.timeout:g}')
    if args.action == 'stop':
        answered = stop_without_discovery(started, timeout=args.timeout)
        if answered is not None:
            return answered
    question = 'home' if args.action == 'home' else 'trigger'
    command = [sys.executable, '-m', 'robofollow_ros.ros.ask_once', question, SERVICES[args.action]]
    command += ['--timeout', repr(args.timeout), '--started', repr(started)]
    if question == 'trigger':
        command += ['--recall', repr(RECALL_SECONDS.get(args.action, 0.0))]
    try:
        done = subprocess.run(command, timeout=args.timeout + ANSWER_WAIT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        print(f'no {SERVICES[args.action]} service answered within {args.timeout:g} s', file=sys.stderr)
        return 2
    return done.returncode


def stop_without_discovery(started: float, *, timeout: float) -> int | None:
    """The stop over the stop socket of the bridge in this ROS domain: the exit status, or None when no bridge
    listens there (the service is called then)."""
    import sys

    from robofollow_ros.realcell.stop_socket import stop_over_socket, stop_socket_path

    try:
        domain = int(os.environ.get('ROS_DOMAIN_ID', '') or 0)
    except ValueError:
        return None
    path = stop_socket_path(domain, SERVICES['stop'])
    connected: list[float] = []
    try:
        answer = stop_over_socket(
            path,
            timeout=max(0.001, timeout - (time.monotonic() - started)),
            on_connect=lambda: connected.append(time.monotonic() - started),
        )
    except (TimeoutError, OSError) as error:
        print(f'{path}: {error}; calling {SERVICES["stop"]}', file=sys.stderr)
        return None
    if answer is None:
        return None
    held, message = answer
    print(message, file=sys.stdout if held else sys.stderr)
    elapsed, found = time.monotonic() - started, connected[0] if connected else 0.0
    print(
        f'answered {elapsed:.3f} s after the command started (service found after {found:.3f} s: the stop socket '
        f'{path})',
        file=sys.stderr,
    )
    return 0 if held else 1
