"""Real-time factor and tick jitter of the fake hardware's control loop, against the bare timer in the same run.

Three measurements, each --seconds long at a profile's control rate:
  - baseline: ``ControlLoop`` with an empty tick (what the machine's timer and scheduler give);
  - physics: the loop stepping ``RealTimeCell`` (scene 1 laid out) with a moving setpoint, in-process, no ROS;
  - node: the ``fake_hardware`` node in its own process, commanded with a JointTrajectory per arm every row period
    (0.06 s, as the real-time bridge sends chunks), its joint states read back; with ``--cameras`` a reader of the
    three image topics makes it render at ``camera_rate``. Its own summary line (logged when it stops) is printed.
Prints per measurement the ticks, real-time factor (simulated seconds per wall second), tick lateness p50 / p95 /
max and dropped ticks, and the lateness p95 as a ratio to the baseline's.

    .venv/bin/python bench/bench_fake_hardware.py [--profile aloha_ros2_control] [--seconds 20] [--cameras]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from robofollow_ros.benchmark import registry
from robofollow_ros.robot.profiles import load_profile
from robofollow_ros.sim.realtime import ControlLoop, LoopStats, RealTimeCell

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = re.compile(r'control loop: (.*)$', re.MULTILINE)


def run_loop(period: float, seconds: float, tick) -> LoopStats:
    loop = ControlLoop(period=period, tick=tick)
    loop.start()
    time.sleep(seconds)
    loop.stop()
    if loop.error is not None:
        raise loop.error
    return loop.stats


def physics(profile_name: str, seconds: float) -> LoopStats:
    profile = load_profile(profile_name)
    period = 1.0 / profile.control_rate
    cell = RealTimeCell(robot=profile.robot or 'aloha', control_period=period, width=320, height=240)
    task = registry.eval_tasks()[0]
    home = profile.home_state()
    cell.reset(task, seed=0, layout=registry.layout_of(task), home=home)
    start = time.monotonic()

    def tick() -> None:
        setpoint = home + 0.3 * np.sin(time.monotonic() - start) * np.array([1, 0, 0, 0, 0, 1, 0] * 2)
        cell.step(setpoint, np.zeros(14))
        cell.measured()

    try:
        return run_loop(period, seconds, tick)
    finally:
        cell.close()


def node(profile_name: str, seconds: float, cameras: bool) -> str:
    import rclpy
    from builtin_interfaces.msg import Duration
    from sensor_msgs.msg import Image, JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from robofollow_ros.realcell.fake_driver import DRIVER_STATE
    from robofollow_ros.ros import qos
    from robofollow_ros.state_layout import CAMERAS

    profile = load_profile(profile_name)
    if profile.driver != 'ros2_control':
        return 'skipped (it commands JointTrajectory: a ros2_control profile only)'
    env = dict(os.environ, ROS_DOMAIN_ID=os.environ.get('ROS_DOMAIN_ID', '119'))
    process = subprocess.Popen(
        [
            sys.executable,
            '-m',
            'robofollow_ros.nodes.fake_hardware',
            '--ros-args',
            '-p',
            f'robot_profile:={profile_name}',
        ],
        env=env,
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    rclpy.init(domain_id=int(env['ROS_DOMAIN_ID']))
    client = rclpy.create_node('bench_fake_hardware')
    states: list[float] = []
    images: list[float] = []
    topic = profile.arms['left'].joint_states
    client.create_subscription(JointState, topic, lambda _: states.append(time.monotonic()), DRIVER_STATE)
    if cameras:
        for camera in CAMERAS:
            client.create_subscription(
                Image, f'/{camera}/image_raw', lambda _: images.append(time.monotonic()), qos.SENSOR
            )
    pubs = {
        arm: client.create_publisher(JointTrajectory, profile.arms[arm].command.topic, qos.ARM_COMMANDS)
        for arm in ('left', 'right')
    }
    while not states:
        rclpy.spin_once(client, timeout_sec=0.1)
    begin = time.monotonic()
    next_send = begin
    k = 0
    while time.monotonic() - begin < seconds:
        if time.monotonic() >= next_send:
            for arm, pub in pubs.items():
                spec = profile.arms[arm]
                row = spec.home[:6] + 0.3 * np.sin(0.06 * k) * np.array([1, 0, 0, 0, 0, 1])
                message = JointTrajectory(joint_names=list(spec.joints))
                message.points = [
                    JointTrajectoryPoint(positions=row.tolist(), time_from_start=Duration(nanosec=60_000_000))
                ]
                pub.publish(message)
            k += 1
            next_send += profile.row_period
        rclpy.spin_once(client, timeout_sec=0.005)
    wall = time.monotonic() - begin
    process.terminate()
    _, err = process.communicate(timeout=30)
    client.destroy_node()
    rclpy.shutdown()
    found = SUMMARY.search(err)
    line = found.group(1) if found else f'no summary (exit {process.returncode}): {err[-500:]}'
    received = sum(1 for t in states if t >= begin)
    extra = f'; joint states received {received / wall:.1f} Hz'
    if cameras:
        extra += f', images received {sum(1 for t in images if t >= begin) / wall / len(CAMERAS):.1f} Hz per camera'
    return line + extra


def p95_ms(stats: LoopStats) -> float:
    return float(np.percentile(np.asarray(stats.lateness) * 1e3, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--profile', default='aloha_ros2_control')
    parser.add_argument('--seconds', type=float, default=20.0)
    parser.add_argument('--cameras', action='store_true', help='subscribe the node measurement to the cameras')
    args = parser.parse_args()
    period = 1.0 / load_profile(args.profile).control_rate
    baseline = run_loop(period, args.seconds, lambda: None)
    print(f'baseline (empty tick): {baseline.summary()}')
    stats = physics(args.profile, args.seconds)
    ratio = p95_ms(stats) / max(p95_ms(baseline), 1e-6)
    print(f'physics in-process:   {stats.summary()}; p95 lateness {ratio:.1f}x baseline')
    print(f'node over ROS{" + cameras" if args.cameras else ""}:   {node(args.profile, args.seconds, args.cameras)}')


if __name__ == '__main__':
    main()
