"""The Python interpreters policies with their own dependencies run under: ``--policy lerobot`` (LeRobot and torch,
kept out of robofollow's own environment, whose pins they conflict with) and any sandboxed policy given
``--policy-python`` (a user's own environment)."""

from __future__ import annotations

import os
from pathlib import Path

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.isolation.sandbox import package_root

LEROBOT_PYTHON_ENV = 'ROBOFOLLOW_LEROBOT_PYTHON'
"""Names the Python that has LeRobot (default: ``.venv-lerobot/bin/python`` of the checkout or the working folder,
as ``scripts/setup_lerobot.sh`` makes it)."""
LEROBOT_VENV = '.venv-lerobot'


def checked_python(python: str, *, source: str = '--policy-python') -> str:
    """``python`` if it names an executable file (``source``: the option or variable it came from, for the error).

    Raises:
        PolicyError: no such file, or not executable.
    """
    path = Path(python)
    given = f'{source}={python}' if source.isupper() else f'{source} {python}'
    if not path.is_file():
        raise PolicyError(f'{given} is not a Python interpreter (no such file)')
    if not os.access(path, os.X_OK):
        raise PolicyError(f'{given} is not a Python interpreter (not executable)')
    return python


def environment_folder(python: str) -> Path:
    """The folder of the environment ``python`` belongs to (a venv's root for ``<venv>/bin/python``; ``/usr`` for
    ``/usr/bin/python3``), which the policy sandbox must let it read: its standard library and site-packages live
    there, also when it lies under a folder the sandbox covers (``/tmp``)."""
    return Path(os.path.abspath(python)).parent.parent


def lerobot_python() -> str:
    """The interpreter to run a LeRobot policy under.

    Raises:
        PolicyError: ``ROBOFOLLOW_LEROBOT_PYTHON`` names no executable, or it is unset and no ``.venv-lerobot``
            exists.
    """
    configured = os.environ.get(LEROBOT_PYTHON_ENV)
    if configured:
        return checked_python(configured, source=LEROBOT_PYTHON_ENV)
    for folder in (package_root(), Path.cwd()):
        candidate = folder / LEROBOT_VENV / 'bin' / 'python'
        if candidate.is_file():
            return str(candidate)
    raise PolicyError(
        f'no Python with LeRobot: run scripts/setup_lerobot.sh (makes {LEROBOT_VENV}) or set {LEROBOT_PYTHON_ENV}'
    )
