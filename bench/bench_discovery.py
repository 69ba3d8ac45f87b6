"""How long a running participant takes to hear a writer of a participant that joins later, and what the periodic
announcements cost, with the shipped Fast DDS profile against the same profile with Fast DDS's default announcement
period (3 s), side by side in one run (issue 28).

A late joiner learns of a participant that was already running only from that one's next periodic announcement
(measured: the delays of one trial cluster at one instant, the running participant's announcement), so the period
bounds how late a listener started before a graph hears a node, and how late a referee started before the sim
matches its writers. Each trial starts a listener (one reliable, transient-local reader per peer), then ``--peers``
rclpy processes at once, each with one writer that publishes one message right after it is created; the delay is
from that publish to the listener's receipt. Trials alternate between the profiles (each in its own ROS domain),
so that load from elsewhere falls on both alike. Then ``--idle-peers`` participants idle for ``--idle-seconds``
under each profile, and their CPU time is compared.

Usage: ``.venv/bin/python bench/bench_discovery.py [--trials 6] [--peers 6]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / 'config' / 'fastdds_shm.xml'
DEFAULT_PERIOD = '<leaseAnnouncement><sec>3</sec><nanosec>0</nanosec></leaseAnnouncement>'

PEER = r"""
import sys, time, rclpy
from rclpy.qos import QoSProfile, DurabilityPolicy, ReliabilityPolicy
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node(f'peer_{sys.argv[1]}')
qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
writer = node.create_publisher(String, f'probe_{sys.argv[1]}', qos)
writer.publish(String(data=sys.argv[1]))
print(time.time(), flush=True)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    rclpy.spin_once(node, timeout_sec=0.1)
"""
LISTENER = r"""
import json, sys, time, rclpy
from rclpy.qos import QoSProfile, DurabilityPolicy, ReliabilityPolicy
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node('listener')
qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
peers, horizon = int(sys.argv[1]), float(sys.argv[2])
heard = {}
readers = [node.create_subscription(String, f'probe_{i}', lambda m, i=i: heard.setdefault(i, time.time()), qos)
           for i in range(peers)]
print('ready', flush=True)
end = time.time() + horizon
while time.time() < end and len(heard) < peers:
    rclpy.spin_once(node, timeout_sec=0.02)
print(json.dumps(heard), flush=True)
"""


def default_period_profile(folder: Path) -> Path:
    """The shipped profile with Fast DDS's default announcement period instead of its own."""
    text = PROFILE.read_text()
    changed, count = re.subn(r'<leaseAnnouncement>.*?</leaseAnnouncement>', DEFAULT_PERIOD, text, flags=re.S)
    if count != 1:
        raise SystemExit(f'{PROFILE} sets no leaseAnnouncement to compare against')
    path = folder / 'default_period.xml'
    path.write_text(changed)
    return path


def environment(profile: Path, domain: int) -> dict[str, str]:
    """As the launchers run the graph's nodes with the shipped profile: discovery left to the profile alone."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE='SYSTEM_DEFAULT')
    env['FASTDDS_DEFAULT_PROFILES_FILE'] = str(profile)
    env.pop('FASTRTPS_DEFAULT_PROFILES_FILE', None)
    return env


def trial(profile: Path, domain: int, *, peers: int, horizon: float) -> list[float]:
    """Delays (s) from each peer's publish to the listener's receipt; ``inf`` for a peer not heard in ``horizon``."""
    env = environment(profile, domain)
    listener = subprocess.Popen(
        [sys.executable, '-c', LISTENER, str(peers), str(horizon)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert listener.stdout is not None and listener.stdout.readline().strip() == 'ready'
    time.sleep(1.0)
    started = [_peer(i, horizon + 2, env) for i in range(peers)]
    published = [float(process.stdout.readline()) for process in started if process.stdout is not None]
    heard = {int(key): value for key, value in json.loads(listener.stdout.readline()).items()}
    listener.wait()
    for process in started:
        process.kill()
        process.wait()
    return [heard[i] - published[i] if i in heard else float('inf') for i in range(peers)]


def idle_cpu(profile: Path, domain: int, *, peers: int, seconds: float) -> float:
    """CPU seconds that ``peers`` participants use idling together for ``seconds`` (after a second to settle)."""
    env = environment(profile, domain)
    started = [_peer(i, seconds + 30, env) for i in range(peers)]
    for process in started:
        assert process.stdout is not None
        process.stdout.readline()
    time.sleep(1.0)
    before = [_cpu_seconds(process.pid) for process in started]
    time.sleep(seconds)
    after = [_cpu_seconds(process.pid) for process in started]
    for process in started:
        process.kill()
        process.wait()
    return sum(after) - sum(before)


def _peer(index: int, seconds: float, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, '-c', PEER, str(index), str(seconds)], env=env, stdout=subprocess.PIPE, text=True
    )


def _cpu_seconds(pid: int) -> float:
    fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trials', type=int, default=6)
    parser.add_argument('--peers', type=int, default=6)
    parser.add_argument('--horizon', type=float, default=20.0, help='seconds a listener waits for every peer')
    parser.add_argument('--idle-peers', type=int, default=10)
    parser.add_argument('--idle-seconds', type=float, default=20.0)
    parser.add_argument('--domain', type=int, default=90, help='first of the two ROS domains used')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        profiles = {'shipped': PROFILE, 'default period': default_period_profile(Path(folder))}
        delays: dict[str, list[float]] = {name: [] for name in profiles}
        for index in range(args.trials):
            for offset, (name, profile) in enumerate(profiles.items()):
                delays[name] += trial(profile, args.domain + offset, peers=args.peers, horizon=args.horizon)
            print(f'trial {index + 1}/{args.trials} done', file=sys.stderr, flush=True)
        cpu = {
            name: idle_cpu(profile, args.domain + offset, peers=args.idle_peers, seconds=args.idle_seconds)
            for offset, (name, profile) in enumerate(profiles.items())
        }
    print(f'{args.trials} trials x {args.peers} peers joining a running listener; load {os.getloadavg()[0]:.1f}')
    for name, values in delays.items():
        array = np.array(values)
        heard = array[np.isfinite(array)]
        print(
            f'{name:>15}: delay p50 {np.median(heard):.2f} s, p95 {np.percentile(heard, 95):.2f} s, '
            f'max {heard.max():.2f} s, not heard {int((~np.isfinite(array)).sum())} of {array.size}; '
            f'{args.idle_peers} idle participants: {cpu[name]:.2f} CPU s in {args.idle_seconds:g} s'
        )
    shipped, default = (np.array(delays[name]) for name in profiles)
    print(
        f'shipped / default period: max delay {shipped.max() / default.max():.2f}, '
        f'idle CPU {cpu["shipped"] / max(cpu["default period"], 1e-9):.2f}'
    )


if __name__ == '__main__':
    main()
