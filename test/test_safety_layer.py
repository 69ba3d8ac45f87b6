"""The safety layer stays pure (pyproject.toml's ``safety-pure`` import-linter contract): a clock read inside it,
e.g. ``import time`` in the dead-man, fails the layer lint; and it sits below the graph and the nodes, so importing
it loads neither rclpy nor MuJoCo and changes no environment variable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_lint import PACKAGE, append, copy_of_the_package, lint_imports


def test_a_clock_inside_the_safety_layer_fails_the_layer_lint(tmp_path: Path):
    folder = copy_of_the_package(tmp_path)
    append(
        folder / PACKAGE / 'safety' / 'deadman.py',
        '\ndef _late() -> float:\n    import time\n\n    return time.monotonic()\n',
    )
    result = lint_imports(folder)
    assert result.returncode != 0, result.stdout
    assert 'robofollow_ros.safety is not allowed to import time' in result.stdout, result.stdout


def test_importing_the_safety_layer_loads_no_ros_and_no_mujoco_and_leaves_the_environment_alone():
    code = (
        'import os, sys\n'
        'before = dict(os.environ)\n'
        'import robofollow_ros.safety.command_filter, robofollow_ros.safety.deadman, robofollow_ros.safety.jtc\n'
        'import robofollow_ros.safety.profile_limits\n'
        "print(sorted(m for m in ('rclpy', 'mujoco', 'trajectory_msgs') if m in sys.modules), before == os.environ)\n"
    )
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == '[] True'
