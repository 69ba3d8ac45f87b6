"""The Python interpreters policies with their own dependencies run under (``--policy lerobot``: LeRobot and torch,
kept out of robofollow's own environment, whose pins they conflict with)."""

from __future__ import annotations

import os
from pathlib import Path

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.isolation.sandbox import package_root

LEROBOT_PYTHON_ENV = 'ROBOFOLLOW_LEROBOT_PYTHON'
"""Names the Python that has LeRobot (default: ``.venv-lerobot/bin/python`` of the checkout or the working folder,
as ``scripts/setup_lerobot.sh`` makes it)."""
LEROBOT_VENV = '.venv-lerobot'


def lerobot_python() -> str:
    """The interpreter to run a LeRobot policy under.

    Raises:
        PolicyError: ``ROBOFOLLOW_LEROBOT_PYTHON`` names no file, or it is unset and no ``.venv-lerobot`` exists.
    """
    configured = os.environ.get(LEROBOT_PYTHON_ENV)
    if configured:
        if not Path(configured).is_file():
            raise PolicyError(f'{LEROBOT_PYTHON_ENV}={configured} is not a Python interpreter (no such file)')
        return configured
    for folder in (package_root(), Path.cwd()):
        candidate = folder / LEROBOT_VENV / 'bin' / 'python'
        if candidate.is_file():
            return str(candidate)
    raise PolicyError(
        f'no Python with LeRobot: run scripts/setup_lerobot.sh (makes {LEROBOT_VENV}) or set {LEROBOT_PYTHON_ENV}'
    )
