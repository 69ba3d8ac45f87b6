"""The layers hold at run time: the core imports neither rclpy nor changes the process environment, and a bag's
scene markers, encoded without ROS, decode as the markers the sim node publishes (the lint side is test_lint.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rclpy.serialization import serialize_message
from test_bags_support import OBJECTS, synthetic_trajectory

from robofollow_ros.bags.cdr import default_typestore
from robofollow_ros.bags.markers import encode_scene_markers
from robofollow_ros.benchmark import registry
from robofollow_ros.ros.markers import scene_markers
from robofollow_ros.sim.gl import choose_gl_backend

ROOT = Path(__file__).resolve().parents[1]
CORE_PACKAGES = ('benchmark', 'referee', 'policy', 'robot', 'sim', 'evaluation', 'bags', 'data', 'diagnostics', 'graph')


def run_python(code: str, *, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env, check=False)


def test_writing_a_bag_with_scene_markers_does_not_import_rclpy(tmp_path: Path) -> None:
    code = f"""
import sys
from test_bags_support import META, synthetic_trajectory
from robofollow_ros.bags import write_episode_bag
from robofollow_ros.benchmark import registry
write_episode_bag({str(tmp_path / 'bag')!r}, meta=META, trajectory=synthetic_trajectory(5),
                  layout=registry.get_layout(1, 'default'))
print(sorted(name for name in sys.modules if name.split('.')[0] in ('rclpy', 'std_msgs', 'visualization_msgs')))
"""
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(ROOT / 'test'), os.environ.get('PYTHONPATH', '')])}
    result = run_python(code, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == '[]'
    assert (tmp_path / 'bag').is_dir()


def test_bag_markers_decode_as_the_markers_the_sim_node_publishes() -> None:
    layout = registry.get_layout(1, 'default')
    trajectory = synthetic_trajectory(3)
    present = [name for name in layout.object_names if name in OBJECTS]
    assert present, 'the synthetic trajectory names no object of the layout'
    positions = {name: trajectory.obj_pos[name][1] for name in present}
    quats = {name: trajectory.obj_quat[name][1] for name in present}
    store = default_typestore()
    stamp_ns = 1_234_567_890_123
    ours = store.deserialize_cdr(
        bytes(encode_scene_markers(store, layout, positions, quats, stamp_ns=stamp_ns)),
        'visualization_msgs/msg/MarkerArray',
    )
    published = store.deserialize_cdr(
        bytes(serialize_message(scene_markers(layout, positions, quats, stamp_ns=stamp_ns))),
        'visualization_msgs/msg/MarkerArray',
    )
    assert len(ours.markers) == len(published.markers) == len(present)
    for mine, theirs in zip(ours.markers, published.markers, strict=True):
        assert (mine.ns, mine.id, mine.type, mine.action, mine.text) == (
            theirs.ns,
            theirs.id,
            theirs.type,
            theirs.action,
            theirs.text,
        )
        assert (mine.header.stamp.sec, mine.header.stamp.nanosec, mine.header.frame_id) == (1234, 567_890_123, 'world')
        assert mine.header == theirs.header
        assert (mine.pose, mine.scale, mine.color) == (theirs.pose, theirs.scale, theirs.color)
        position = mine.pose.position
        np.testing.assert_array_equal([position.x, position.y, position.z], positions[mine.text])


def test_importing_the_core_leaves_the_process_environment_alone() -> None:
    """No module of the core sets ``MUJOCO_GL`` (or anything else) on import: the entry points choose."""
    code = f"""
import importlib, os, pkgutil
import cv2  # OpenCV prepends its library folder to LD_LIBRARY_PATH when imported: not ours to judge
import robofollow_ros
before = dict(os.environ)
names = []
for package in {CORE_PACKAGES!r}:
    module = importlib.import_module('robofollow_ros.' + package)
    names.append(module.__name__)
    for info in pkgutil.walk_packages(module.__path__, module.__name__ + '.'):
        importlib.import_module(info.name)
        names.append(info.name)
changed = sorted(key for key in set(before) | set(os.environ) if before.get(key) != os.environ.get(key))
print(len(names), changed)
"""
    env = {key: value for key, value in os.environ.items() if key not in ('MUJOCO_GL', 'PYOPENGL_PLATFORM')}
    result = run_python(code, env=env)
    assert result.returncode == 0, result.stderr
    count, changed = result.stdout.split(' ', 1)
    assert int(count) > 100 and changed.strip() == '[]', result.stdout


@pytest.mark.parametrize('preset', [None, 'osmesa'])
def test_the_entry_points_choose_a_headless_backend_unless_one_is_set(preset: str | None) -> None:
    environ = {} if preset is None else {'MUJOCO_GL': preset}
    chosen = choose_gl_backend(environ)
    assert chosen == environ['MUJOCO_GL']
    if preset is None:
        assert chosen in ('egl', 'osmesa') and environ['PYOPENGL_PLATFORM'] == chosen
    else:
        assert chosen == 'osmesa' and 'PYOPENGL_PLATFORM' not in environ
