"""One synthetic pick of the yellow block, played over DDS by a driver node beside a node under test (the recorder's
and the referee's node tests run it in a process of their own)."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace
from typing import Any

from graph_helpers import ROOT, graph_env
from test_referee_cli import pickup_trajectory

from robofollow_ros.evaluation.episode_spec import EpisodeSpec
from robofollow_ros.robot.description import joint_layout


def pickup_episode(task_id: str) -> SimpleNamespace:
    """The episode's spec, trajectory, frame stamps (ns) and the ALOHA joint layout its joint states use."""
    spec = EpisodeSpec(
        task_id=task_id,
        variant='published',
        layout='default',
        seed=439,
        round=1,
        arm='left',
        level='L0',
        instruction='pick up the yellow block',
    )
    trajectory = pickup_trajectory()
    stamps = [round(float(t) * 1e9) for t in trajectory.t]
    return SimpleNamespace(spec=spec, trajectory=trajectory, stamps=stamps, layout=joint_layout('aloha'))


def driver_beside(node: Any) -> tuple[Any, Any]:
    """A ``driver`` node in ``node``'s context and one executor spinning both."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    driver = rclpy.create_node('driver')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    executor.add_node(driver)
    return driver, executor


def run_driver(script: str, *args: str, domain: int) -> subprocess.CompletedProcess[str]:
    """Run a driver ``script`` (its node under test beside it) in its own process in ROS ``domain``; it must exit 0."""
    done = subprocess.run(
        [sys.executable, '-c', script, *args],
        env=graph_env(domain),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done
